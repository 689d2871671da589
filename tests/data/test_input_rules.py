"""Each input's rules are declared once, with the input (derivations/: whole, may be zero, its
largest value, a value it stays below, an input it may not exceed, an input it divides), and every
reader takes them from there: a value is refused by --set, by the library and by the data files'
loader alike, in the same words. A new input needs its declaration only."""
import math
import re

import pytest

from conftest import ROOT

import chalkboard as cb
from chalkboard.data.loader import DataError, fields, load
from chalkboard.errors import InputError
from chalkboard.evaluation.evaluate import Scenario
from derivations import REGISTRY

SOURCES = "sources:\n  s: {title: a test set-up, url: \"\", as_of: \"2025\"}\n"
# one chip and one model that give every field the files know, so that any one of them can be set wrong
CHIP = {"launch_year": "2024", "dies_per_package": "2 die", "flops_bf16": "1000 TFLOP/s", "flops_fp8": "2000 TFLOP/s",
        "hbm_capacity": "100 GB", "hbm_bandwidth": "4 TB/s", "scaleup_bandwidth": "900 GB/s",
        "scaleup_domain": "8 chip", "rental_price": "3 USD/hour"}
MODEL = {"params_total": "100e9 parameter", "params_active": "10e9 parameter", "layers": "60", "d_model": "4096",
         "n_heads": "64", "n_kv_heads": "8", "d_head": "128", "experts": "64", "experts_per_token": "8",
         "moe_layers": "58", "d_expert": "1024", "shared_experts": "1", "d_ff": "8192", "vocab_size": "100000"}


def _entry(eid, values, tags):
    return f"  {eid}:\n" + "".join(f"    {k}: {v}\n" for k, v in tags.items()) + "".join(
        f"    {k}: \"{v}\"\n" for k, v in values.items())


def _write(folder, chip=(), model=()):
    (folder / "hardware.yaml").write_text(SOURCES + "hardware:\n" + _entry(
        "chip", {**CHIP, **dict(chip)}, {"name": "a chip", "vendor": "v", "per": "package", "source": "s"}))
    (folder / "models.yaml").write_text(SOURCES + "models:\n" + _entry(
        "moe", {**MODEL, **dict(model)}, {"name": "a model", "source": "s", "weight_format": "bf16",
                                          "attention": "gqa"}))
    return folder


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The chip and the model as written (read once, as the library reads a folder once)."""
    return _write(tmp_path_factory.mktemp("rules"))


@pytest.fixture
def root(base, tmp_path):
    """``write(chip=..., model=...)``: a folder whose chip and model take those values; none: ``base``."""
    return lambda chip=(), model=(): _write(tmp_path, chip, model) if chip or model else base


def _text(q, x) -> str:
    unit = q.unit.removesuffix("/chip") if q.unit.endswith("/chip") else q.unit
    return f"{x:.12g} {unit}".strip()


def _wrong(q):
    """(the value, as text) each of the input's declared rules refuses."""
    r = q.rules
    yield _text(q, -1 if r.zero else 0)
    if r.whole:
        yield _text(q, 2.5)
    if r.most:
        yield _text(q, math.floor(r.most[0]) * 2)
    if r.below:
        yield _text(q, r.below[0])


def _refusals(name, text, write):
    """What --set, the library and (for a field of the files) the loader say of ``name`` = ``text``:
    each one's message without the place it names."""
    said = {}
    root = write()
    data = load(root)
    with pytest.raises(InputError) as e:
        Scenario(data, "chip", "moe", {name: text})
    said["--set"] = str(e.value).removeprefix(f"--set {name}={text}: ")
    with pytest.raises(InputError) as e:
        cb.scenario("chip", "moe", root=root, **{name: text})
    said["library"] = str(e.value).removeprefix(f"{name}={text}: ")
    q = REGISTRY[name]
    if q.origin in ("hardware", "model") and q.field in fields(q.origin):
        with pytest.raises(DataError) as e:
            load(write(**{"chip" if q.origin == "hardware" else "model": {q.field: text}}))
        file = "hardware.yaml" if q.origin == "hardware" else "models.yaml"
        said["loader"] = str(e.value).removeprefix(f"{file}: {'chip' if q.origin == 'hardware' else 'moe'}: "
                                                   f"{q.field}: ").removesuffix(f" (got {text!r})")
    return said


RULED = [q.name for q in REGISTRY.inputs() if q.rules.whole or q.rules.most or q.rules.below or not q.rules.zero]
CASES = [(n, t) for n in RULED for t in _wrong(REGISTRY[n])
         if REGISTRY[n].origin in ("hardware", "model", "workload") and "<" not in (REGISTRY[n].field or "")]


def test_every_input_with_rules_is_tried():
    # the counts, limits and shares of the files and the workload (a sample of what the declarations hold)
    assert {"layers", "scaleup_domain", "dies_per_package", "pipeline_stages", "zero_stage", "prefix_cache_share",
            "mtp_acceptance", "engine_memory_share", "tp", "batch"} <= {n for n, _ in CASES}
    assert len(CASES) > 150


@pytest.mark.parametrize("name,text", CASES)
def test_set_the_library_and_the_loader_refuse_alike(name, text, root):
    said = _refusals(name, text, root)
    assert len(set(said.values())) == 1, said
    assert said["--set"] and not said["--set"].startswith("--set"), said
    rules = REGISTRY[name].rules   # the refusal names the rule and why it holds
    for rule in (rules.most, rules.below):
        if rule and text.split()[0] in (f"{rule[0]:.12g}", f"{math.floor(rule[0]) * 2:.12g}"):
            assert rule[1] in said["--set"]


def test_a_fractional_pipeline_is_refused_by_the_library_as_by_eval(root, cli):
    # once the library answered 60% where `eval --set pipeline_stages=2.5` refused it
    said = _refusals("pipeline_stages", "2.5", root)
    assert said == {"--set": "must be a whole number (it counts something)",
                    "library": "must be a whole number (it counts something)"}
    r = cli("eval", "step_time", "--set", "pipeline_stages=2.5")
    assert r.returncode == 2 and r.stderr.strip() == ("error: --set pipeline_stages=2.5: must be a whole number "
                                                      "(it counts something)"), r.stderr


@pytest.mark.parametrize("name,other,x,why", [
    ("params_active", "params_total", 200e9, "the sparsity"), ("experts_per_token", "experts", 65, "more experts"),
    ("moe_layers", "layers", 61, "more MoE layers"), ("n_kv_heads", "n_heads", 65, "more KV heads"),
    ("n_kv_heads", "n_heads", 3, "whole group of query heads")])
def test_an_order_or_a_divisor_is_refused_alike(name, other, x, why, root):
    """An input set past the one its declaration keeps it within, or not dividing it: the same words
    from the loader (models.yaml) and from --set (the model's value against the one set)."""
    text = _text(REGISTRY[name], x)
    with pytest.raises(DataError) as e:
        load(root(model={name: text}))
    loader = str(e.value).removeprefix(f"models.yaml: moe: {name}: ")
    with pytest.raises(InputError) as e:
        Scenario(load(root()), "chip", "moe", {name: text})
    assert str(e.value) == f"--set {name}={x:g}: moe: {loader}"
    word = "exceeds" if x > 64 or name != "n_kv_heads" else "does not divide"
    assert loader.startswith(f"{name} ({x:g}) {word} {other} (") and why in loader


@pytest.mark.parametrize("degree,heads", [("tp", "n_heads"), ("train_tp", "n_heads"), ("pp", "layers"),
                                          ("train_pp", "layers"), ("ep", "experts")])
def test_a_layout_degree_divides_what_its_declaration_names(degree, heads, root):
    # the model's 64 heads, 60 layers, 64 experts: 7 divides none of them; 4 divides each
    with pytest.raises(InputError, match=rf"^--set {degree}=7: moe: {degree} \(7\) does not divide {heads} \("):
        Scenario(load(root()), "chip", "moe", {degree: "7"})
    Scenario(load(root()), "chip", "moe", {degree: "4"})


@pytest.fixture
def widgets():
    """A workload input added as a test would add one: its declaration, and nothing else."""
    R = REGISTRY
    R.workload("test_widgets", "", "widgets a test adds", "w", "test", default="4", whole=True,
               most=(100, "a test allows a hundred widgets"))
    try:
        yield R["test_widgets"]
    finally:
        q = R.quantities.pop("test_widgets")
        del R.by_symbol[q.sym]
        if q.section:
            R.sections[q.section].quantities.remove("test_widgets")
        R._memo.clear()


def test_a_new_input_needs_its_declaration_only(widgets, data):
    from chalkboard.evaluation.sweep import parse_axis
    from chalkboard.report.explorer import accepted

    assert Scenario(data, "h100-sxm", "llama-3-70b", {"test_widgets": "7"}).overrides["test_widgets"].magnitude == 7
    for text, said in (("2.5", "must be a whole number (it counts something)"), ("0", "must be positive"),
                       ("101", "at most 100 (a test allows a hundred widgets)")):
        with pytest.raises(InputError, match=re.escape(f"--set test_widgets={text}: {said}")):
            Scenario(data, "h100-sxm", "llama-3-70b", {"test_widgets": text})
        with pytest.raises(InputError, match="^" + re.escape(f"test_widgets={text}: {said}")):
            cb.scenario("h100-sxm", "llama-3-70b", test_widgets=text)
    assert list(parse_axis("test_widgets=1:4")[1]) == [1, 2, 3, 4]   # a count: whole points
    with pytest.raises(InputError, match="test_widgets is at most 100"):
        parse_axis("test_widgets=1,1000")
    box = accepted("test_widgets")
    assert (box["whole"], box["zero"], box["most"]) == (True, False, 100)


def test_the_declared_defaults_keep_their_own_rules():
    from units import parse

    for q in REGISTRY.inputs():
        if q.default and not str(q.default).startswith("="):
            assert q.rules.problem(parse(q.default), q.unit) is None, (q.name, q.default)


def test_hbm_bandwidth_has_one_unit(data):
    # declared once (byte/s/chip); the file's "3.35 TB/s" (H100 SXM datasheet) read per chip by it
    assert fields("hardware")["hbm_bandwidth"] is REGISTRY["hbm_bandwidth"]
    bandwidth = data.hardware["h100-sxm"].values["hbm_bandwidth"].quantity
    assert bandwidth.to("TB/s/chip").magnitude == pytest.approx(3.35)
