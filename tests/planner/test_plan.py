"""`plan`: the cheapest deployment that meets a speed target (chalkboard/planner/).

Every row of the answer must be reproducible with the `eval` command it carries, the frontier
must be a frontier (each row cheaper than every faster one), and a chip is kept out of the
ranking for the reason the data gives (it does not fit, it is too slow, it has no price).
"""
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest


def _main(*argv):
    import build
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = build.main(list(argv))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def llama_plan():
    # the check: the cheapest way to serve Llama 3 70B at 30 token/s per user, 4k context
    status, out, err = _main("plan", "--model", "llama-3-70b", "--context", "4096", "--min-tokens-per-user", "30",
                             "--json")
    assert status == 0, err
    return json.loads(out)


def _eval(command: str) -> dict:
    argv = command.split()[2:]          # "python3 build.py eval ..."
    status, out, err = _main(*argv, "--json")
    assert status == 0, err
    return json.loads(out)


def test_the_cheapest_meets_the_targets_and_fits(llama_plan):
    b = llama_plan["best"]
    assert b is not None and llama_plan["judged_by"] == "expected"
    # within the engine's 90% of the HBM (vLLM's default gpu_memory_utilization), not all of it
    assert b["expected"]["tokens_per_user"] >= 30 and b["hbm_fill"] <= 0.9
    # nothing in any chip's frontier that meets the target is cheaper
    for chip in llama_plan["chips"].values():
        for r in chip.get("frontier", []):
            if r["expected"]["tokens_per_user"] >= 30 and r["expected"]["cost_per_mtoken"] is not None:
                assert r["expected"]["cost_per_mtoken"] >= b["expected"]["cost_per_mtoken"] * (1 - 1e-12)
    # the expected number says which efficiency it assumed, and is never faster than the bound
    assert 0 < b["expected"]["efficiency"] < 1
    assert b["expected"]["tokens_per_user"] <= b["bound"]["tokens_per_user"]


def test_rows_are_reproduced_by_their_eval_command(llama_plan):
    rows = [llama_plan["best"], llama_plan["frontier"][0], llama_plan["frontier"][-1]]   # the pick and both ends
    speed_of = {"colocated": "user_speed_colocated_expected", "in-flight": "user_speed_inflight_expected",
                "disaggregated": "user_speed_expected"}
    for r in rows:
        d = _eval(r["command"])
        assert d["quantity"] == f"cost_per_token_{r['deployment']}_expected" and d["unit"] == "USD/Mtoken"
        assert d["value"] == pytest.approx(r["expected"]["cost_per_mtoken"], rel=1e-9)
        assert d["feasible"] is True
        assert d["layout"] == {k: r[k] for k in ("tp", "dp_attention", "ep", "pp", "chips")}
        speed = _eval(r["command"].replace(f" {d['quantity']} ", f" {speed_of[r['deployment']]} "))
        assert speed["value"] == pytest.approx(r["expected"]["tokens_per_user"], rel=1e-9)


def test_deepseek_is_planned_over_several_nodes_and_both_deployments():
    # Issue check: plan --model deepseek-v3 considers multi-node expert-parallel and disaggregated
    # deployments, and says which wins and why
    status, out, err = _main("plan", "--model", "deepseek-v3", "--context", "4096", "--min-tokens-per-user", "20",
                             "--hardware", "h100-sxm,h200", "--json")
    assert status == 0, err
    d = json.loads(out)
    rows = [r for c in d["chips"].values() for r in c.get("frontier", [])]
    # H100's scale-up domain is 8 GPUs (640 GB): the fp8 weights alone (671 GB) need two nodes and more
    h100 = [r for r in rows if r["hardware"] == "h100-sxm"]
    assert h100 and min(r["chips"] for r in h100) >= 16 and all(r["ep"] == r["chips"] for r in h100)
    # every deployment searched: at one batch a pool costs the same chip time per request as in-flight
    # batching, and decodes uninterrupted, so the pick is disaggregated and the best in-flight one is named beside it
    assert d["best"] is not None and d["best_other"] is not None
    assert (d["best"]["deployment"], d["best_other"]["deployment"]) == ("disaggregated", "in-flight")
    assert {r["deployment"] for r in rows} <= {"colocated", "in-flight", "disaggregated"}
    assert d["best"]["expected"]["cost_per_mtoken"] <= d["best_other"]["expected"]["cost_per_mtoken"]
    # a disaggregated row states its pools
    assert all(r["prefill_pool_ratio"] > 0 for r in rows if r["deployment"] == "disaggregated")
    status, out, _ = _main("plan", "--model", "deepseek-v3", "--context", "4096", "--min-tokens-per-user", "20",
                           "--hardware", "h100-sxm,h200")
    assert " wins, " in out and "x cheaper than the best " in out
    # tensor parallelism never leaves a node, even when the experts span several
    assert all(r["tp"] <= 8 for r in rows)


def test_the_frontier_is_a_frontier(llama_plan):
    f = llama_plan["frontier"]
    assert len(f) > 3
    for a, b in zip(f, f[1:]):   # fastest first: each next row slower and cheaper
        assert b["expected"]["tokens_per_user"] <= a["expected"]["tokens_per_user"]
        assert b["expected"]["cost_per_mtoken"] < a["expected"]["cost_per_mtoken"]


def test_chips_lose_for_the_reason_the_data_gives():
    status, out, err = _main("plan", "--model", "deepseek-v3", "--min-tokens-per-user", "20", "--json",
                             "--hardware", "a100-40gb,gb200-nvl72,gb300-nvl72")
    assert status == 0, err
    chips = json.loads(out)["chips"]
    # 671e9 fp8 weights do not fit in 8 x 40 GB, whatever the layout
    assert chips["a100-40gb"]["verdict"] == "does not fit"
    # GB300 NVL72 has no rental price in hardware.yaml: searched for speed, not ranked
    assert chips["gb300-nvl72"]["verdict"] == "no price"
    assert chips["gb200-nvl72"]["verdict"] == "cheapest"
    status, out, err = _main("plan", "--model", "llama-3-70b", "--min-tokens-per-user", "400", "--json",
                             "--hardware", "h100-sxm", "--by", "bound", "--formats", "bf16")
    d = json.loads(out)
    # at batch 1 eight H100s read 140 GB of bf16 weights at 8 x 3.35 TB/s: at most 1 / 5.2 ms = 191 token/s
    assert d["best"] is None and d["chips"]["h100-sxm"]["verdict"] == "too slow"
    assert d["chips"]["h100-sxm"]["fastest"]["bound"]["tokens_per_user"] < 8 * 3.35e12 / 140e9


def test_text_and_csv(llama_plan):
    status, out, _ = _main("plan", "--model", "llama-3-70b", "--context", "4096", "--min-tokens-per-user", "30")
    assert status == 0 and out.startswith("plan: llama-3-70b, context 4,096 tokens, answers of 1,024 tokens, "
                                          "at least 30 token/s per user")
    assert "cheapest: " + llama_plan["best"]["hardware"] in out and "reproduce: python3 build.py eval" in out
    assert "left out:" in out
    status, out, _ = _main("plan", "--model", "llama-3-70b", "--context", "4096", "--min-tokens-per-user", "30",
                           "--csv")
    head = out.splitlines()[0].split(",")
    assert "cost_per_mtoken [USD/Mtoken]" in head and "tokens_per_user [token/s/sequence]" in head
    assert len(out.splitlines()) == len(llama_plan["frontier"]) + 1


@pytest.mark.parametrize("args,words", [
    (("--model", "nope"), "unknown model id"),
    (("--hardware", "h999"), "unknown hardware id"),
    (("--formats", "fp9"), "--formats fp9"),
    (("--max-ttft", "3 m"), "--max-ttft"),
    (("--set", "nonsense=3"), "nonsense"),
])
def test_bad_plans_are_one_line(cli, args, words):
    r = cli("plan", "--min-tokens-per-user", "20", *args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr


def test_the_default_context_is_the_workloads():
    from chalkboard.evaluation.settings import SERVING_WORKLOAD
    from units import parse
    status, out, _ = _main("plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--min-tokens-per-user", "20",
                           "--json")
    assert status == 0   # the context eval takes where none is given
    assert json.loads(out)["context"] == parse(SERVING_WORKLOAD["context"][0]).magnitude == 4096

