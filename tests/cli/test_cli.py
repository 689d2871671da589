"""build.py as a user runs it: check, eval, list, and one-line errors for bad input."""
import json
import shutil

import pytest

from conftest import ROOT, run_cli


def test_check_passes_and_counts(cli):
    r = cli("check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "definitions" in r.stdout and "equations" in r.stdout and "OK" in r.stdout


@pytest.mark.slow   # copies the project and solves its derivations cold (about 6 s); CI runs it
def test_check_fails_on_a_wrong_equation(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    mod = proj / "derivations" / "schedule.py"
    mod.write_text(mod.read_text() + '\nR.derived("broken_drain", C_hbm / W + C_hbm, "s", "wrong", "t", "bad")\n')
    r = run_cli("check", root=proj)
    assert r.returncode == 1
    assert "FAIL dimension : broken_drain: cannot combine" in r.stdout


def test_eval_json(cli):
    r = cli("eval", "balance_batch", "--hardware", "h100-sxm", "--model", "deepseek-v3", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"quantity", "value", "unit", "expression", "inputs"} <= set(d)
    assert d["unit"] == "sequence"
    names = {i["name"] for i in d["inputs"]}
    assert {"peak_flops", "hbm_bandwidth", "params_total", "params_active", "bytes_per_weight"} <= names
    for i in d["inputs"]:
        assert i["source"] and "unit" in i and "value" in i
    # 1,979 TFLOP/s fp8 dense x 1 byte / (2 x 3.35 TB/s) x 671/37 (DeepSeek-V3 report)
    assert d["value"] == pytest.approx(1979e12 * 1 / (2 * 3.35e12) * 671 / 37, rel=0.01)
    assert "N_total" in d["expression"] and "N_active" in d["expression"]


def test_eval_set_reproduces_the_scaling_book_critical_batch(cli):
    # "How to Scale Your Model" (jax-ml scaling-book), Rooflines chapter: TPU v5e bf16
    # 1.97e14 FLOP/s over 8.2e11 B/s HBM gives a critical batch of about 240 for a dense model.
    r = cli("eval", "balance_batch", "--hardware", "tpu-v5e", "--model", "llama-3-70b",
            "--set", "format=bf16", "--set", "peak_flops=1.97e14 FLOP/s", "--set",
            "hbm_bandwidth=8.2e11 B/s", "--set", "params_active=70e9 parameter",
            "--set", "params_total=70e9 parameter", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["value"] == pytest.approx(240, rel=0.01)
    srcs = {i["name"]: i["source"] for i in d["inputs"]}
    assert srcs["hbm_bandwidth"] == "--set" and srcs["peak_flops"] == "--set"


def test_eval_bare_number_takes_declared_unit(cli):
    r = cli("eval", "weight_fetch_time", "--hardware", "b200", "--model", "llama-3-70b", "--set", "batch=1",
            "--set", "chips=1", "--json", "--layout", "even")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    # one B200 (8 TB/s, NVIDIA HGX B200 spec) reading Llama 3 70B (70B parameters, Llama 3 paper)
    # in bf16: 70e9 x 2 bytes / 8e12 B/s = 17.5 ms
    assert d["value"] == pytest.approx(70e9 * 2 / 8e12 * 1e3, rel=0.001)
    assert d["unit"] == "ms"
    assert {i["name"]: i["unit"] for i in d["inputs"]}["chips"] == "chip"


def test_flops_override_is_used_where_the_format_falls_back(cli):
    # DeepSeek-V3 computes in fp8; an A100 has no fp8, so its bf16 rate is used -- also when set.
    r = cli("eval", "peak_flops", "--hardware", "a100-80gb", "--set", "flops_bf16=1000 TFLOP/s", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["value"] == pytest.approx(1000)


def test_unused_override_is_reported(cli):
    r = cli("eval", "peak_flops", "--hardware", "h100-sxm", "--set", "format=bf16", "--set", "flops_fp8=1 PFLOP/s")
    assert r.returncode == 0
    assert "note: --set flops_fp8 not used" in r.stderr


def test_eval_text_shows_closed_form_and_sources(cli):
    r = cli("eval", "drain_time", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--explain")
    assert r.returncode == 0
    assert "t_drain = C_HBM/W" in r.stdout
    assert "hardware.yaml: h100-sxm.hbm_capacity" in r.stdout


def test_eval_is_brief_unless_asked_to_explain(cli):
    """One number reads in a few lines: the value, the set-up, the layout, the fit, the defaults it
    took and its terms; the forms and the sources of its 30 inputs come with --explain."""
    at = ("--hardware", "h100-sxm", "--model", "llama-3-70b")
    brief = cli("eval", "step_time", *at).stdout.splitlines()
    assert len(brief) <= 12, brief
    assert brief[0].startswith("step_time_layout = ") and not any("closed form:" in ln for ln in brief)
    assert any(ln.startswith("  fits       : yes") for ln in brief)
    assert any(ln.startswith("  layout     : tp 4") for ln in brief)
    full = cli("eval", "step_time", *at, "--explain").stdout
    assert "  closed form: " in full and "  board form : " in full and "hardware.yaml: h100-sxm.hbm_bandwidth" in full
    # the defaults named are those the quantity reads: the lecture's 6·N·D time reads no batch and no
    # context; the default one reads the sequence its attention spans, and still no batch
    train = cli("eval", "training_time_6nd", *at).stdout
    assert "batch" not in train and "context" not in train
    train = cli("eval", "training_time", *at).stdout
    assert "batch" not in train and "context" in train


def test_eval_of_an_input_prints_no_equation_of_itself(cli):
    """An input (here read from a config.json) has no definition: eval lists it, its value and its
    source, never "N_total = N_total"; a --set count takes 15T as people write it."""
    r = cli("eval", "params_total", "--hardware", "h100-sxm", "--model-config", "tests/configs/mixtral-8x7b-v0.1.json")
    assert r.returncode == 0, r.stderr
    assert "definition" not in r.stdout and "closed form" not in r.stdout and "N_total = N_total" not in r.stdout
    assert "params_total = 4.67 × 10¹⁰ parameters" in r.stdout
    r = cli("eval", "pretrain_tokens", "--hardware", "h100-sxm", "--model", "deepseek-v3",
            "--set", "pretrain_tokens=15T token", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["value"] == pytest.approx(15e12)


def test_list_hardware_json(cli):
    r = cli("list", "hardware", "--json")
    d = json.loads(r.stdout)
    f = d["h100-sxm"]["hbm_bandwidth"]
    assert f["unit"] and f["source"] and f["value"] == pytest.approx(3.35)


def test_list_quantities(cli):
    r = cli("list", "quantities", "--json")
    names = {q["name"] for q in json.loads(r.stdout)}
    assert {"balance_batch", "hardware_ratio", "step_time", "drain_time"} <= names


def test_list_quantities_groups_them_by_chapter(cli):
    rows = json.loads(cli("list", "quantities", "--json").stdout)
    chapter = {q["name"]: q.get("chapter") for q in rows}
    # one quantity of each chapter, as the lecture's chapter map orders them
    assert (chapter["balance_batch"], chapter["a2a_bytes_per_token"], chapter["pretrain_compute"]) == \
        ("batch", "moe", "training")
    assert chapter["hbm_bandwidth"] is None   # an input, shared by every chapter
    text = cli("list", "quantities").stdout
    heads = [line for line in text.splitlines() if line.startswith("Chapter ")]
    assert [h.split(" (")[0] for h in heads] == [f"Chapter {i}" for i in range(1, 8)]
    assert "Chapter 5 (1 h 19 min into the lecture): RL and over-training" in text
    # each quantity sits under its chapter's heading
    assert text.index("  pretrain_compute ") > text.index("Chapter 5 (")
    assert text.index("  balance_batch ") < text.index("Chapter 2 (")


def test_help_explains(cli):
    r = cli("--help")
    assert r.returncode == 0 and "eval" in r.stdout and "check" in r.stdout
    r = cli("eval", "--help")
    assert "--set" in r.stdout and "bare" in r.stdout


# -- bad input: one line naming file, entry, field; exit 2; no traceback ----------------------
def _bad_copy(tmp_path, name, edit):
    src = (ROOT / name).read_text()
    out = tmp_path / name
    out.write_text(edit(src))
    return str(out)


def _one_line_error(r, *must):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    for m in must:
        assert m in lines[0], (m, lines[0])


def test_yaml_syntax_error(tmp_path, cli):
    f = _bad_copy(tmp_path, "hardware.yaml", lambda s: s.replace("hardware:\n", "hardware:\n  - [unclosed\n", 1))
    _one_line_error(cli("check", "--hardware-file", f), "hardware.yaml", "YAML syntax error", "line")


@pytest.mark.parametrize("file,entry,field", [
    ("hardware.yaml", "h100-sxm", "hbm_bandwidth"),
    ("models.yaml", "llama-3-8b", "params_total"),
])
def test_missing_field(tmp_path, cli, file, entry, field):
    import re
    f = _bad_copy(tmp_path, file,
                  lambda s: re.sub(rf"(  {entry}:\n(?:    .*\n)*?)    {field}:.*\n", r"\1", s, count=1))
    flag = "--hardware-file" if file == "hardware.yaml" else "--models-file"
    _one_line_error(cli("check", flag, f), file, entry, field, "missing")


def test_wrong_dimension(tmp_path, cli):
    f = _bad_copy(tmp_path, "hardware.yaml", lambda s: s.replace('"3.35 TB/s"', '"3.35 TFLOP/s"', 1))
    _one_line_error(cli("check", "--hardware-file", f), "h100-sxm", "hbm_bandwidth", "wrong dimension")


def test_negative_bandwidth(tmp_path, cli):
    f = _bad_copy(tmp_path, "hardware.yaml", lambda s: s.replace('"3.35 TB/s"', '"-3.35 TB/s"', 1))
    _one_line_error(cli("check", "--hardware-file", f), "h100-sxm", "hbm_bandwidth", "negative")


@pytest.mark.parametrize("args,must", [
    (("eval", "step_time", "--hardware", "h999"), ("hardware.yaml", "h999")),
    (("eval", "step_time", "--model", "gpt-9"), ("models.yaml", "gpt-9")),
    (("eval", "no_such_quantity"), ("no_such_quantity",)),
    (("eval", "step_time", "--set", "hbm_bandwidth=3 s"), ("hbm_bandwidth", "wrong dimension")),
    (("eval", "step_time", "--set", "hbm_bandwidth=-3 TB/s"), ("hbm_bandwidth", "negative")),
    (("eval", "step_time", "--set", "nonsense=3"), ("nonsense", "unknown input")),
    (("eval", "step_time", "--set", "hbm_bandwidth=0"), ("hbm_bandwidth", "positive")),
    (("eval", "step_time", "--set", "chips=0"), ("chips", "positive")),
    (("eval", "offrack_fraction", "--set", "racks=0"), ("racks", "positive")),
    (("eval", "step_time", "--set", "batch=1e400"), ("batch", "finite")),
    (("eval", "step_time", "--set", "batch=10 10"), ("batch", "more than one number")),
    (("eval", "experts_per_chip", "--set", "experts=0.5"), ("experts", "whole number")),
    (("eval", "experts_per_chip", "--model", "llama-3-8b"), ("llama-3-8b", "experts")),
    (("eval", "balance_batch_kv"), ("not applicable", "crossover")),
    (("audit", "--claims-file", "no-such-claims.yaml"), ("no-such-claims.yaml", "not found")),
    (("eval", "cost_floor", "--hardware", "rubin"), ("rental_price",)),  # no public price for Rubin
])
def test_bad_cli_input(cli, args, must):
    _one_line_error(cli(*args), *must)


def test_a_mean_context_and_a_pure_matmul_are_accepted(cli):
    # A measurement's mean context (145.6 tokens) is an average, not a count; a pure weight read has no
    # context and no KV cache. Llama 3 8B on one H100 at batch 1, bf16 (8e9 parameters: the Llama 3
    # paper's "8B"; 3.35 TB/s: H100 datasheet; 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes a token)
    base = ("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--layout", "even", "--json",
            "--set", "chips=1", "--set", "batch=1", "--set", "weight_format=bf16", "--set", "kv_format=bf16")
    weights = 8e9 * 2 / 3.35e12
    kv = 32 * 8 * 128 * 2 * 2 / 3.35e12
    for sets, expected in ((("context=145.6",), weights + 145.6 * kv), (("context=0",), weights),
                           (("kv_bytes_per_token=0", "context=4096"), weights)):
        r = cli(*base, *[a for s in sets for a in ("--set", s)])
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["value"] * 1e-3 == pytest.approx(expected, rel=1e-6), sets


def test_list_short_is_one_line_an_entry(cli):
    import yaml
    chips = yaml.safe_load((ROOT / "hardware.yaml").read_text())["hardware"]
    lines = cli("list", "hardware", "--short").stdout.splitlines()
    assert len(lines) == len(chips)
    h100 = next(ln for ln in lines if ln.startswith("h100-sxm "))
    assert "flops_bf16 989.5 TFLOP/s" in h100 and "hbm_bandwidth 3.35 TB/s" in h100   # the datasheet's dense bf16


def test_audit_filters_keep_only_what_matches(cli, whole_audit):
    # the filters on one audit (Audit.only), then the command's flags once each through the CLI
    from chalkboard.audit import FAILS
    every = whole_audit
    fails = every.only(FAILS, None, None, None).verdicts
    assert fails and len(fails) < len(every.verdicts) and {v.verdict for v in fails} == {FAILS}
    assert {v.claim.id for v in fails} == {v.claim.id for v in every.verdicts if v.verdict == FAILS}
    moe = json.loads(cli("audit", "--json", "--chapter", "moe", "--kind", "derived").stdout)
    assert moe and all(c["chapter"] == "moe" and c["kind"] == "derived" for c in moe)
    assert {c["id"] for c in moe} == {v.claim.id for v in every.verdicts
                                      if v.claim.chapter == "moe" and v.claim.kind == "derived"}
    text = cli("audit", "--grep", "lower bound on latency").stdout
    assert text.startswith("chalkboard audit: 1 claim\n") and "latency-lower-bound-read-all-weights" in text


def test_eval_says_the_default_chips_up_front(cli):
    # a 7B-class model on H100 is served by the fewest GPUs that hold it and the default workload's KV
    # cache (one), unless told otherwise: the header says so, not only the inputs list
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--layout", "even")
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("defaults "))
    assert "chips = 1 chip" in line and "serving defaults" in line
    full = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--layout", "even", "--explain")
    assert "serving default: the fewest chips (of the 8 of one scale-up domain)" in full.stdout
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--layout", "even",
            "--set", "chips=1")
    assert not any("chips" in ln for ln in r.stdout.splitlines()[:5])


def test_the_command_ends_with_all_its_output_written_and_its_status():
    """build.py ends its process without freeing its objects one by one (build.py, _exit): what it
    printed still arrives whole, through a pipe too, and the exit status is the command's."""
    import subprocess
    import sys

    run = lambda *args: subprocess.run([sys.executable, str(ROOT / "build.py"), *args], cwd=ROOT,  # noqa: E731
                                       capture_output=True, text=True, timeout=300)
    r = run("eval", "step_time", "--sweep", "batch=1:20000", "--csv")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 20001, (r.returncode, r.stderr[-500:])
    assert lines[-1].startswith("20000,") and lines[-1].endswith(",false")
    r = run("eval", "step_time", "--set", "batch=-x")
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1] == "error: --set batch: '-x' does not start with a number"
    r = subprocess.run(f"'{sys.executable}' build.py eval step_time --sweep batch=1:200000 --csv | head -1",
                       shell=True, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.stdout.startswith("batch [sequence],") and "Traceback" not in r.stderr and "Exception" not in r.stderr
