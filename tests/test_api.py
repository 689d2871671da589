"""chalkboard as a library (chalkboard/api.py): the same numbers as the command line."""
import json

import pytest

import chalkboard as cb

SETS = {"tp": 8, "batch": 1, "context": 2048, "weight_format": "bf16", "kv_format": "bf16"}


def test_evaluate_is_eval(cli):
    r = cb.scenario("h100-sxm", "llama-3-70b", **SETS).evaluate("step_time")
    argv = [a for k, v in SETS.items() for a in ("--set", f"{k}={v}")]
    d = json.loads(cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-70b", *argv, "--json").stdout)
    assert r.name == d["quantity"] == "step_time_layout" and r.asked == "step_time"
    assert float(r) == d["value"] and r.unit == d["unit"] == "ms" and r.display == d["display"]
    # Megatron's two all-reduces a layer on 8 H100s (tests/derivations/test_layout.py works them out by hand)
    assert {b["name"] for b in r.breakdown} >= {"tp_comm_time"}
    html = r._repr_html_()
    assert html.count("<math") == 2 and "step_time_layout = 5.8 ms" in html   # 5.25 ms of reads, 0.55 ms of all-reduces
    even = cb.scenario("h100-sxm", "llama-3-70b", layout="even", **SETS).evaluate("step_time")
    assert even.name == "step_time" and float(even) < float(r)


def test_sweep_compare_audit_plan_are_tables_and_dicts():
    s = cb.scenario("h100-sxm", "llama-3-70b", **SETS)
    t = s.sweep("step_time", batch=[1, 8, 64])
    assert [row["batch"] for row in t] == [1, 8, 64]
    # keyed by the name asked, in the unit named for it (ms: as `eval --sweep --json` gives it)
    assert t.units == {"batch": "sequence", "step_time": "ms"}
    assert t[0]["step_time"] == pytest.approx(float(s.evaluate("step_time")), rel=1e-12)
    assert t.to_csv().splitlines()[:2] == ["batch [sequence],step_time [ms],feasible", f"1,{t[0]['step_time']!r},true"]
    rows = cb.compare(["kv_per_chip"], hardware=["h200"], models=["deepseek-v3"], tp=8, batch=16, context=4096,
                      kv_format="bf16")
    # DeepSeek-V3's MLA latent (61 layers x 576 numbers x 2 bytes a token) sits whole on each of the 8 ranks
    kv = rows[0]["values"]["kv_per_chip"]
    assert kv["answered_as"] == "kv_per_chip_layout" and kv["unit"] == "GB/chip"
    assert kv["value"] == pytest.approx(16 * 4096 * 61 * 576 * 2 / 1e9, rel=1e-9)
    assert rows.to_csv().splitlines()[0] == ("hardware,model,chips [chip],layout,batch [sequence],kv_per_chip [GB/chip],"
                                            "feasible,formats")
    claims = cb.verdicts()
    assert len(claims) > 100 and {"id", "verdict"} <= set(claims[0])
    best = cb.plan("llama-3-70b", min_tokens_per_user=30)["best"]
    assert best["expected"]["tokens_per_user"] >= 30


def test_bad_names_fail_clearly():
    from chalkboard.errors import InputError
    with pytest.raises(KeyError, match="unknown quantity"):
        cb.scenario("h100-sxm", "llama-3-70b").evaluate("nonsense")
    with pytest.raises(InputError, match="--layout diagonal"):
        cb.scenario("h100-sxm", "llama-3-70b", layout="diagonal")
    with pytest.raises(InputError, match="unknown hardware id"):
        cb.scenario("h999", "llama-3-70b")


def test_no_name_of_the_face_is_a_module_of_the_package():
    # a submodule imported anywhere (chalkboard.audit by the report) would hide a face function of its name
    import importlib
    import pkgutil

    import chalkboard
    modules = {m.name for m in pkgutil.iter_modules(chalkboard.__path__)}
    assert not modules & set(chalkboard.__all__)
    importlib.import_module("chalkboard.audit")
    importlib.import_module("chalkboard.planner")
    assert callable(cb.verdicts) and callable(cb.plan) and callable(cb.scenario)
