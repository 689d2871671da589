"""A label beside a number says what computed it: the all-reduce eval names is the one the term it
labels costs (a prefill's carries every prompt token, so it can differ from a decode step's), and
plan's reason names both deployments' chips, and its text frontier holds the row it picks."""
import json

import pytest


def test_the_prefill_all_reduce_named_is_the_one_costed(cli):
    """Llama 3 70B on 8 H100s (NVSwitch: one hop to every peer), one 4,096-token prompt: the
    one-shot all-reduce sends tp - 1 = 7 copies of each buffer, the two-shot 2 x 7/8 of it, so at a
    prompt's bytes two-shot is the faster and is what prefill_tp_comm_time costs."""
    at = ("--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "tp=8", "--set", "batch=1",
          "--set", "pass_tokens=4096", "--set", "context=4096")
    d = json.loads(cli("eval", "prefill_tp_comm_time", *at, "--json").stdout)
    one = json.loads(cli("eval", "tp_allreduce_time_one_shot", *at, "--set", "batch=4096", "--json").stdout)
    two = json.loads(cli("eval", "tp_allreduce_time_two_shot", *at, "--set", "batch=4096", "--json").stdout)
    cheaper = min(one["value"] * {"ms": 1e-3, "µs": 1e-6, "s": 1}[one["unit"]],
                  two["value"] * {"ms": 1e-3, "µs": 1e-6, "s": 1}[two["unit"]])
    assert d["value"] * {"ms": 1e-3, "µs": 1e-6, "s": 1}[d["unit"]] == pytest.approx(cheaper, rel=1e-9)
    # the prefill's own one- and two-shot times are the decode step's at 4,096 times the tokens
    for way, decode in (("one_shot", one), ("two_shot", two)):
        own = json.loads(cli("eval", f"prefill_allreduce_time_{way}", *at, "--json").stdout)
        assert own["value"] * {"ms": 1e-3, "µs": 1e-6, "s": 1}[own["unit"]] == pytest.approx(
            decode["value"] * {"ms": 1e-3, "µs": 1e-6, "s": 1}[decode["unit"]], rel=1e-9)
    said = json.loads(cli("eval", "time_to_first_token", *at, "--json").stdout)["collectives"]
    prefill = [c for c in said if c["term"] == "prefill_tp_comm_time"]
    assert prefill and prefill[0]["algorithm"].startswith("two-shot")
    assert two["value"] * {"ms": 1e-3, "µs": 1e-6, "s": 1}[two["unit"]] < \
        one["value"] * {"ms": 1e-3, "µs": 1e-6, "s": 1}[one["unit"]]


def test_plan_names_both_deployments_chips_and_shows_its_pick():
    from chalkboard import planner as pl
    from chalkboard.data.loader import load
    from chalkboard.runtime.home import ROOT
    from chalkboard.validation import evidence

    data = load(ROOT)
    found = pl.plan(data, "llama-3-70b", ["h100-sxm", "h200", "b200"], pl.Targets(4096.0, 30.0), None, evidence(ROOT, data))
    text = pl.text(found)
    d = pl.as_json(found)
    b, o = d["best"], d["best_other"]
    assert b is not None and o is not None
    why = next(ln for ln in text.splitlines() if " wins, " in ln)
    assert f"= {o['chips']} chips, batch {o['batch']:,}" in why
    frontier = text.split("frontier (no candidate")[1].split("by chip:")[0].splitlines()
    layout = f"tp {b['tp']} · dp {b['dp_attention']} · ep {b['ep']} = {b['chips']}"
    assert any(ln.split()[:2] == [b["hardware"], b["weight_format"]] and layout in ln
               and f"  {b['batch']:,}  " in ln for ln in frontier), (b, frontier)
    assert len(d["frontier"]) > 24   # the text shows 24 of them, the pick among them
