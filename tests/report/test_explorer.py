"""The report's live explorer: its JavaScript is SymPy's printing of the definitions, its numbers
in a real browser (Debian's Chromium driven by Playwright) equal `build.py eval --json` under the
deployed layout and under the lecture's even spread, bound, expected number and range alike, and
without JavaScript the page is still the whole static report.
"""
import contextlib
import importlib.util
import io
import json
import math
import os
import re
import shutil

import pytest
import sympy as sp

from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="Chromium is not installed (apt-get install chromium); CI runs this test")
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(report_build):
    return report_build[0] / "report.html"


def _functions_in_page(html: str) -> dict:
    """name -> JavaScript expression, read back from the page's script."""
    m = re.search(r"const CHALKBOARD_FUNCTIONS = \(function \(\) \{\n  const F = \{\};\n(.*?)\n  return F;\n\}\)\(\);",
                  html, re.S)
    assert m, "the page defines no printed functions"
    return dict(re.findall(r"^  F\.(\w+) = function \(v\) \{ return (.*?); \};$", m.group(1), re.M))


# -- (a) the script holds no formula typed by hand ------------------------------------------------
def test_page_functions_are_sympys_javascript_of_the_definitions(report):
    from chalkboard.report import explorer_script
    from chalkboard.evaluation import layouts
    from derivations import REGISTRY

    html = report.read_text(encoding="utf-8")
    funcs = _functions_in_page(html)
    # every row under either layout, its expected form, and the collectives named on the page
    for n in explorer_script.QUANTITIES:
        for lay in ("deployed", "even"):
            assert layouts.resolve(n, lay) in funcs, (n, lay)
    assert {"step_time_layout", "step_time_expected_layout", "cost_per_token_layout", "tp_comm_time",
            "ep_comm_time", "tp_allreduce_time_one_shot", "tp_allreduce_time_two_shot",
            "tp_allreduce_time_ring", "compute_time", "kv_fetch_time"} <= set(funcs)
    for name, code in funcs.items():
        calls = set(re.findall(r"F\.(\w+)\(v\)", code))
        assert calls <= set(funcs), (name, calls - set(funcs))   # every derived quantity it reads is printed
        expected = sp.jscode(REGISTRY[name].expr)    # SymPy's own printer, symbols by name
        got = re.sub(r"F\.(\w+)\(v\)", r"\1", code).replace("v.", "")
        if "Math.floor" in expected:  # the page's floor allows 1e-9, as the compiled path does
            got = got.replace(" + 1e-09)", ")")
        assert got == expected, name


def test_the_engine_model_on_the_page_is_the_fits(report, data):
    """The page's expected inputs are the engine model's (validation.engine_fit.Efficiency.inputs, in base
    units), and each end of its range the inputs at the fit's band factors, as eval's range takes them."""
    from chalkboard.validation import evidence

    html = report.read_text(encoding="utf-8")
    m = re.search(r"  inputs: \{(.*?)\},\n  ends: \[(.*?)\],\n", html)
    assert m, "the page prints no engine model"
    model = evidence(ROOT, data)()

    def numbers(text):
        return {k: float(v) for k, v in re.findall(r"(\w+): function \(v\) \{ return ([-0-9.e+]+); \}", text)}
    assert numbers(m.group(1)) == pytest.approx(model.inputs())
    ends = re.findall(r"\{(.*?)\}\}", m.group(2) + "}")
    got = [numbers(e + "}") for e in re.split(r"\}, \{", m.group(2))]
    assert len(got) == 2 and got[0] == pytest.approx(model.inputs(model.band[0]))
    assert got[1] == pytest.approx(model.inputs(model.band[1]))


def test_solved_degree_is_the_rule(data):
    """dp_attention's default on the page (SymPy's solution of layout_chips = chips) is the value
    derivations/rules.py's attention_groups gives wherever that rule gives one."""
    from chalkboard.report import explorer_script
    from derivations import rules

    js = explorer_script.solved_js("dp_attention")
    assert js == "v.chips/(v.one_chip*v.pp*v.tp)"   # one_chip is 1 chip: chips / (tp · pp)
    for chips in (1, 6, 8, 12, 64, 72, 96):
        for tp in (1, 2, 3, 4, 8, 16):
            for pp in (1, 2, 4):
                try:
                    want = rules.attention_groups(chips, tp, pp)
                except ValueError:
                    assert chips % (tp * pp), (chips, tp, pp)   # refused only where not a whole number
                    continue
                assert want == chips / (tp * pp)


def test_explorer_script_names_no_quantity():
    """The hand-written script reads quantities only through the data and the printed functions."""
    from derivations import REGISTRY

    src = (ROOT / "templates" / "explorer.html.j2").read_text(encoding="utf-8")
    script = src[src.rindex("<script>"):]
    words = set(re.findall(r"[A-Za-z_]\w*", script))
    assert words & set(REGISTRY.quantities) == set()
    assert "{{ explorer.functions | safe }}" in src  # the printed functions come from Python


def test_each_plot_names_a_unit_it_can_show():
    from chalkboard.report import explorer, explorer_script

    for f in explorer_script.FIGURES:
        assert f["unit"] in [u[0] for u in explorer._display_units(f["quantity"])], f


def test_explorer_data_has_every_chip_and_model_and_base_units(data):
    from chalkboard.report import explorer
    from chalkboard.evaluation.evaluate import Scenario

    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"context": "4096"})
    d = explorer.data(data, sc)
    assert [h for h, _ in d["hardware"]] == list(data.hardware)
    assert [m for m, _ in d["models"]] == list(data.models)
    assert {s["name"]: s["start"] for s in d["sliders"]} == {"batch": 2000, "context": 4096, "chips": 8}
    i = d["inputs"]
    # H100 SXM: 3.35 TB/s of HBM bandwidth, 80 GB (NVIDIA H100 datasheet, as in hardware.yaml), in byte/s and byte
    h100 = {**i["constants"], **i["hardware"]["h100-sxm"]}
    assert h100["hbm_bandwidth"] == pytest.approx(3.35e12) and h100["hbm_capacity"] == pytest.approx(80e9)
    # Llama 3 70B in bf16: 2 bytes per weight (its default format); the H100 computes bf16 at 989.5 TFLOP/s dense
    llama = {**i["constants"], **i["models"]["llama-3-70b"], **i["pairs"].get("h100-sxm|llama-3-70b", {})}
    assert llama["bytes_per_weight"] == 2.0 and llama["peak_flops"] == pytest.approx(989.5e12)
    # DeepSeek-V3 is stored in fp8: the same chip computes at its fp8 rate, 1,979 TFLOP/s dense
    ds = {**i["models"]["deepseek-v3"], **i["pairs"].get("h100-sxm|deepseek-v3", {})}
    assert ds["bytes_per_weight"] == 1.0 and ds["peak_flops"] == pytest.approx(1979e12)


# -- (b) the numbers in a browser equal `build.py eval --json` ------------------------------------
_CLI = None


def _eval(quantities, hw, model, sets, layout="deployed"):
    """`build.py eval Q... --hardware HW --model MODEL --set ... --layout LAYOUT --json`, in this
    process: (exit status, a list of answers, or the error)."""
    global _CLI
    if _CLI is None:
        spec = importlib.util.spec_from_file_location("chalkboard_cli", ROOT / "build.py")
        _CLI = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_CLI)
    quantities = [quantities] if isinstance(quantities, str) else list(quantities)
    argv = ["eval", *quantities, "--hardware", hw, "--model", model, "--json", "--layout", layout]
    for k, v in sets.items():
        argv += ["--set", f"{k}={v}"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = _CLI.main(argv)
    if rc != 0:
        return rc, err.getvalue()
    got = json.loads(out.getvalue())
    return rc, got if isinstance(got, list) else [got]


def _answers(names, hw, model, sets, layout):
    """eval's answer for each name (one command for all, or one each where one of them is refused)."""
    rc, got = _eval(names, hw, model, sets, layout)
    if rc == 0:
        return dict(zip(names, got))
    out = {}
    for n in names:
        rc, one = _eval(n, hw, model, sets, layout)
        out[n] = one[0] if rc == 0 else None
    return out


def _base(value, unit):
    from units import Quantity, unit as parse_unit

    return float(Quantity(value, parse_unit(unit)).to_base_units().magnitude)


def _check_display(text, value_base):
    """The shown number, in the unit shown, is the value rounded to the digits shown."""
    from units import Quantity, unit as parse_unit

    text = text.replace(" †", "")
    m = re.fullmatch(r"(-?[\d,]*\.?\d*(?:e-?\d+)?)\s*(.*)", text)
    assert m, text
    num, label = m.group(1).replace(",", ""), m.group(2)
    label = {"sequences": "sequence", "tokens": "token", "chips": "chip"}.get(label, label)
    label = label.replace("tokens/", "token/")
    expected = float(Quantity(value_base, parse_unit("")).magnitude) if not label else value_base * 100 \
        if label == "%" else value_base / float(Quantity(1.0, parse_unit(label)).to_base_units().magnitude)
    mant = num.split("e")[0]
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    scale = 10 ** int(num.split("e")[1]) if "e" in num else 1
    assert abs(float(num) - expected) <= 0.5 * 10 ** -decimals * scale * (1 + 1e-9), (text, expected)


def _set_box(page, name, value):
    page.fill(f"#x-number-{name}", str(value))   # fires the input event, as typing does


SETUPS = [
    # hardware, model, batch, context, chips (None: the chip's default); what each covers
    ("h100-sxm", "llama-3-70b", 64, 4096, 8),         # dense, bf16, tp 8: two-shot all-reduce over NVSwitch
    ("h100-sxm", "llama-3-8b", 16, 2048, 1),          # dense on one chip: no communication
    ("tpu-v5e", "llama-3-8b", 64, 4096, 8),           # a torus: ring all-reduce
    ("gb200-nvl72", "deepseek-v3", 2000, 8192, None),  # MoE, fp8 weights, ep over the 72-chip domain
    ("h100-sxm", "deepseek-v3", 64, 32768, 16),       # MoE, fp8, ep 16 across two 8-GPU domains (scale-out)
    ("b200", "mixtral-8x22b", 333, 30000, 4),         # MoE, bf16, on 4 chips
    ("h100-sxm", "kimi-k2", 1, 4096, 1),              # MoE, fp8, one chip: does not fit
    ("h100-sxm", "deepseek-v3", 64, 4096, 8),         # does not fit: 671 GB of weights over the engine's 90% of 8 x 80 GB
    # the last: the slider checks after the loop start from it (h100-sxm x llama-3-70b)
    ("h100-sxm", "llama-3-70b", 2000, 4096, None),    # does not fit: 441% of HBM spread evenly (README)
]


def _compare_setup(page, hw, model, batch, ctx, chips):
    """Set the page up, then check every row under both layouts against eval: the bound, the
    expected number and its range, the fit, the layout's degrees and collective. Returns the
    number of values checked."""
    from chalkboard.report import explorer_script

    page.select_option("#x-hardware", hw)
    page.select_option("#x-model", model)
    _set_box(page, "batch", batch)
    _set_box(page, "context", ctx)
    if chips is not None:
        _set_box(page, "chips", chips)
    sets = {"batch": batch, "context": ctx, **({"chips": chips} if chips else {})}
    shown_chips = int(page.input_value("#x-number-chips"))
    from chalkboard.data.loader import load
    from chalkboard.evaluation.evaluate import Scenario
    # the page's default copy is the lecture's (the chip's scale-up domain), eval's the serving one:
    # the same set-up is the chips the page shows, given to eval
    lecture = Scenario(load(ROOT), hw, model, {"batch": str(batch), "context": str(ctx),
                                               **({"chips": str(chips)} if chips else {})})
    assert shown_chips == pytest.approx(lecture.mag("chips"))   # the chip's default follows the lecture's rule
    sets["chips"] = shown_chips
    checked = 0
    for lay in ("deployed", "even"):
        page.select_option("#x-layout", lay)
        names = list(explorer_script.QUANTITIES) + [e for e in map(explorer_script.expected_of, explorer_script.QUANTITIES) if e]
        ref = _answers(names, hw, model, sets, lay)
        text = page.text_content("#x-layout-text")
        one = ref["step_time"]
        if lay == "deployed" and one is not None and one.get("layout"):
            # eval's layout line ("tp 8 · dp_attention 1 · ep 1 · pp 1 = 8 chips") and its collective
            from chalkboard.evaluation import layouts
            degrees, used = layouts.text(one["layout"]).split(" = ")
            assert f"{degrees} = {one['layout']['chips']:g} chip" in text, (text, one["layout"], used)
            for c in one.get("collectives", []):
                assert c["algorithm"].split(" (")[0] in text, (text, c)
        for q in explorer_script.QUANTITIES:
            out = page.locator(f"#x-q-{q}")
            shown, value = out.text_content(), out.get_attribute("data-value")
            want = ref[q]
            where = f"{q} ({lay}) on {hw} x {model} {sets}: page {shown!r}"
            assert page.text_content(f"#x-name-{q}") == (want["quantity"] if want else explorer_script.answer(q, lay)), where
            if want is None:     # refused by eval: the page says n/a with the reason
                assert shown == "n/a" and out.get_attribute("title"), where
                continue
            got = float(value)
            assert math.isclose(got, _base(want["value"], want["unit"]), rel_tol=1e-9), (where, got, want["value"])
            _check_display(shown, got)
            if want["feasible"] is not None:   # † and the fit agree with eval's verdict
                assert out.get_attribute("data-fits") == ("yes" if want["feasible"] else "no"), where
                assert shown.endswith("†") != want["feasible"], where
            checked += 1
            e = explorer_script.expected_of(q)
            if not e:
                continue
            out = page.locator(f"#x-e-{q}")
            shown, value = out.text_content(), out.get_attribute("data-value")
            want = ref[e]
            where = f"{e} ({lay}) on {hw} x {model} {sets}: page {shown!r}"
            if want is None:
                assert shown == "n/a" and out.get_attribute("title"), where
                continue
            got = float(value)
            assert math.isclose(got, _base(want["value"], want["unit"]), rel_tol=1e-9), (where, got, want["value"])
            _check_display(shown.split(" (")[0], got)
            lo, hi = (float(out.get_attribute(f"data-{k}")) for k in ("low", "high"))
            assert math.isclose(lo, _base(want["range"]["low"], want["unit"]), rel_tol=1e-9), (where, lo, want["range"])
            assert math.isclose(hi, _base(want["range"]["high"], want["unit"]), rel_tol=1e-9), (where, hi, want["range"])
            if want["feasible"] is not None:
                assert shown.endswith("†") != want["feasible"], where
            checked += 3
    return checked


@needs_browser
def test_explorer_numbers_match_eval_for_the_readmes_example(report):
    """H100 x 8, Llama 3 70B, batch 64, context 4,096: under the deployed layout eval answers
    step_time with step_time_layout (tp 8, a two-shot all-reduce: 9.4 ms, against the even spread's
    8.43 ms); the page shows the same, and the expected step with its range."""
    from playwright.sync_api import sync_playwright

    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(report.as_uri(), wait_until="load")
        assert _compare_setup(page, *SETUPS[0]) >= 30
        page.select_option("#x-layout", "deployed")
        assert page.text_content("#x-name-step_time") == "step_time_layout"
        assert "tp 8 · dp_attention 1 · ep 1 · pp 1 = 8 chips" in page.text_content("#x-layout-text")
        browser.close()
    assert errors == []


@needs_browser
@pytest.mark.slow
def test_explorer_numbers_match_eval(report):
    from playwright.sync_api import sync_playwright

    errors, requests, checked = [], [], 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(report.as_uri(), wait_until="load")
        assert page.is_visible("#explorer")
        assert page.is_hidden("#explorer-off")
        for setup in SETUPS:
            # each set-up on a freshly loaded page: the renderer of this 8 MB page has crashed here
            # after several set-ups in a row, and a reader's set-up starts from a load too
            page.goto(report.as_uri(), wait_until="load")
            checked += _compare_setup(page, *setup)
            figs = page.eval_on_selector_all(".x-figs svg", "els => els.map(e => e.querySelectorAll('polyline').length)")
            assert figs[0] == 1, setup   # step time against batch is drawn for every pair here
        # the log slider moves the number and the numbers with it (h100-sxm x llama-3-70b, even spread)
        page.select_option("#x-layout", "deployed")
        before = page.locator("#x-q-step_time").get_attribute("data-value")
        page.eval_on_selector("#x-range-batch", "e => { e.value = '500'; e.dispatchEvent(new Event('input')); }")
        batch = int(page.input_value("#x-number-batch"))
        assert page.locator("#x-q-step_time").get_attribute("data-value") != before
        sets = {"batch": batch, "context": 4096, "chips": 8}
        _set_box(page, "chips", 8)
        rc, ref = _eval("step_time", "h100-sxm", "llama-3-70b", sets)
        assert math.isclose(float(page.locator("#x-q-step_time").get_attribute("data-value")),
                            _base(ref[0]["value"], ref[0]["unit"]), rel_tol=1e-9)
        # the frontier's cheapest point at the typed target is eval's number for that chip and batch,
        # under the layout picked
        _set_box(page, "context", 4096)
        for lay in ("deployed", "even"):
            page.select_option("#x-layout", lay)
            page.fill("#x-target", "30")
            best = page.locator("#x-frontier-best")
            chip, batch = best.get_attribute("data-chip"), int(best.get_attribute("data-over"))
            assert chip and page.eval_on_selector_all("#x-frontier polyline", "els => els.length") >= 5
            sets = {"batch": batch, "context": 4096, "chips": 8}
            rc, got = _eval(["cost_per_token", "user_speed"], chip, "llama-3-70b", sets, lay)
            assert rc == 0, got
            cost, speed = got
            assert cost["feasible"], (lay, chip, batch)
            assert math.isclose(float(best.get_attribute("data-value")), _base(cost["value"], cost["unit"]),
                                rel_tol=1e-9), (lay, chip, batch)
            assert _base(speed["value"], speed["unit"]) >= 30
        # a target no chip reaches names none
        page.fill("#x-target", "100000")
        assert page.locator("#x-frontier-best").get_attribute("data-chip") == ""
        browser.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file://")] == []
    assert checked >= 200


@needs_browser
def test_printed_max_min_floor_piecewise_evaluate_like_python():
    """SymPy's JavaScript for Max, Min, floor and Piecewise gives the compiled path's numbers."""
    from playwright.sync_api import sync_playwright

    from chalkboard.evaluation import compiled

    from chalkboard.report import explorer_script
    from derivations import REGISTRY

    B, L, S = (REGISTRY[n].sym for n in ("batch", "context", "chips"))
    exprs = [sp.Max(B, L, S), sp.Min(1, B / L), sp.floor(B / S), sp.floor(3 * S / S),
             sp.Piecewise((B, B > L), (2 * L, True)), sp.Max(B / S, sp.Min(L, 7)) + sp.floor(L / 3)]
    points = [{"batch": 2000.0, "context": 8192.0, "chips": 72.0}, {"batch": 9000.0, "context": 31.0, "chips": 3.0}]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        page = browser.new_page()
        for e in exprs:
            fn = sp.lambdify([B, L, S], e, modules=compiled.SCALAR_MODULES)
            for v in points:
                got = page.evaluate(f"(v) => {explorer_script.to_js(e)}", v)
                assert got == pytest.approx(float(fn(v["batch"], v["context"], v["chips"])), rel=1e-12), (e, v)
        browser.close()


# -- (c) without JavaScript: the static report ----------------------------------------------------
@needs_browser
def test_page_without_javascript_is_the_static_report(report):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        page = browser.new_context(java_script_enabled=False).new_page()
        page.goto(report.as_uri(), wait_until="load")
        assert page.is_hidden("#explorer")
        assert page.is_visible("#explorer-off")
        # every formula shown (not a phone's layout at this width, nor one folded in a closed <details>)
        sizes = page.eval_on_selector_all(
            "math:not(.narrow)", "els => els.filter(e => !e.closest('details:not([open])'))"
            ".map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })")
        n_svg = page.eval_on_selector_all("figure svg", "els => els.length")
        assert len(sizes) > 50 and all(w > 0 and h > 0 for w, h in sizes)
        assert n_svg >= 5
        assert page.is_visible("#sec-roofline table.gen") and page.is_visible("#sec-roofline")
        browser.close()


def test_explorer_adds_little_to_the_page(report):
    html = report.read_text(encoding="utf-8")
    start = html.index('<section id="explorer"')
    end = html.index("</script>", html.index("(function () {")) + len("</script>")
    # the layout's rule tables and the definitions of both layouts: about 2% of a 5 MB page
    assert end - start < 140_000, f"the explorer takes {end - start:,} bytes"


def _cli_takes(data, name, text) -> bool:
    """Whether `eval --set NAME=TEXT` takes the value (its checks, run in this process)."""
    from chalkboard.errors import InputError
    from chalkboard.evaluation.evaluate import Scenario

    try:
        Scenario(data, "h100-sxm", "llama-3-70b", {name: text}).value("step_time")
    except InputError as e:
        assert str(e).startswith(f"--set {name}="), str(e)
        return False
    return True


PROBES = ("-5", "0", "0.5", "1", "7", "4096", "1000000000", "1000000001", "1e12", "1e31")


def test_the_boxes_limits_are_the_command_lines(data):
    """Each box's limits are made from the declarations --set is checked against (each input's
    rules: its largest value, whether it may be zero, whether it counts): the page once took a batch
    of 10^12 that the command line refuses."""
    from derivations import REGISTRY
    from chalkboard.report import explorer, explorer_script

    for name in explorer_script.SLIDERS:
        a = explorer.accepted(name)
        most = REGISTRY[name].rules.most
        assert a["most"] == most[0] and most[1] in a["rule"]
        for text in PROBES:
            x = float(text)
            page = (a["zero"] if x == 0 else x >= a["least"]) and x <= a["most"] and (not a["whole"] or x.is_integer())
            assert page == _cli_takes(data, name, text), (name, text, a)


@needs_browser
def test_a_box_takes_what_the_command_line_takes(report, data):
    """Every value `eval --set` refuses (-5, 0, 2.5 or 10^12 sequences) is refused in the page: the box
    is marked, a message beside it says why, and the numbers stay those of the last value taken;
    leaving the box puts that back and the message says so; every value it takes is taken. Shares
    (MFU, HBM fill) read as percentages, and on a phone every value is on screen."""
    from playwright.sync_api import sync_playwright

    from chalkboard.report import explorer_script

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(report.as_uri(), wait_until="load")
        for name in explorer_script.SLIDERS:
            for text in PROBES:
                _set_box(page, name, text)
                refused = page.get_attribute(f"#x-number-{name}", "aria-invalid") == "true"
                assert refused == (not _cli_takes(data, name, text)), (name, text)
                assert page.is_visible(f"#x-why-{name}") == refused, (name, text)
            _set_box(page, name, 8)
        _set_box(page, "batch", 64)
        before = page.locator("#x-q-step_time").get_attribute("data-value")
        for bad in ("0", "2.5", "-5", "1e12"):
            _set_box(page, "batch", bad)
            why = page.text_content("#x-why-batch")
            assert page.is_visible("#x-why-batch") and "refused" in why and "1,000,000,000" in why, why
            assert page.locator("#x-q-step_time").get_attribute("data-value") == before
            box, note = page.locator("#x-number-batch").bounding_box(), page.locator("#x-why-batch").bounding_box()
            assert 0 <= note["y"] - (box["y"] + box["height"]) < 40, "the message is not beside the box"
        page.locator("#x-number-batch").blur()
        page.dispatch_event("#x-number-batch", "change")
        assert page.input_value("#x-number-batch") == "64"
        assert page.is_visible("#x-why-batch") and page.text_content("#x-why-batch").endswith("back to 64.")
        _set_box(page, "batch", 128)
        assert page.is_hidden("#x-why-batch")
        assert page.text_content("#x-q-mfu").rstrip(" †").endswith("%")
        assert page.text_content("#x-q-hbm_fill").rstrip(" †").endswith("%")
        for sel in ("#x-q-step_time", "#x-q-cost_per_token", "#x-q-hbm_fill", "#x-e-step_time", "#x-e-user_speed",
                    "#x-e-throughput", "#x-e-cost_per_token", "#x-layout", "#x-layout-text"):   # each inside the phone's width
            box = page.locator(sel).bounding_box()
            assert box and box["x"] + box["width"] <= 390, (sel, box)
        # the step-time plot keeps its unit from chip to chip (it once changed with the chip)
        for hw in ("h100-sxm", "gb200-nvl72", "tpu-v5e"):
            page.select_option("#x-hardware", hw)
            labels = page.eval_on_selector_all("#x-fig-0 text", "els => els.map(e => e.textContent)")
            assert "\u2191 step_time_layout (ms)" in labels, (hw, labels)   # the deployed layout's step
        browser.close()


@needs_browser
@pytest.mark.parametrize("width", [390, 1280])
def test_the_plots_text_is_the_bodys_size_and_inside_them(report, width):
    """Every text of the explorer's plots is shown at least at the body's size, on a phone too (a
    viewBox of fixed width once shrank it to 8 px at 390 px), and lies inside its plot."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(report.as_uri(), wait_until="load")
        for hw in ("h100-sxm", "gb200-nvl72"):
            page.select_option("#x-hardware", hw)
            body, texts = page.evaluate("""() => {
              const body = parseFloat(getComputedStyle(document.querySelector('#explorer > p')).fontSize);
              return [body, [...document.querySelectorAll('#explorer svg text')].map((t) => {
                const m = t.getScreenCTM(), r = t.getBoundingClientRect(), s = t.ownerSVGElement.getBoundingClientRect();
                return [t.textContent, parseFloat(t.getAttribute('font-size')) * Math.hypot(m.a, m.b),
                        r.left >= s.left - 1 && r.right <= s.right + 1 && r.top >= s.top - 1 && r.bottom <= s.bottom + 1];
              })];
            }""")
            assert len(texts) > 20
            small = [(t, round(px, 1)) for t, px, _ in texts if px < body - 0.01]
            assert not small, (width, hw, body, small[:5])
            outside = [t for t, _, inside in texts if not inside]
            assert not outside, (width, hw, outside)
        browser.close()
