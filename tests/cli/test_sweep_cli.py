"""`eval --sweep` and `compare`: many numbers at once, each equal to the one-number path."""
import csv
import io
import json

import pytest

# H100 SXM (datasheet, dense): 989.5 TFLOP/s bf16, 3.35 TB/s, 80 GB; 8 per scale-up domain.
# Llama 3 70B (config): 70e9 parameters in bf16, 80 layers, 64 query heads, 8 KV heads of 128.
F, W, S = 989.5e12, 3.35e12, 8
KV = 2 * 80 * 8 * 128 * 2            # 327,680 bytes of KV cache per token
ATTN = 2 * 2 * 80 * 64 * 128         # 2,621,440 attention FLOP per cached token


def step_by_hand(batch, context):
    compute = batch * (2 * 70e9 + context * ATTN) / (S * F)
    memory = (70e9 * 2 + batch * context * KV) / (S * W)
    return max(compute, memory)


def test_sweep_json_matches_hand_computation(cli):
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-70b",
            "--sweep", "batch=1:64:log", "--sweep", "context=1024,8192", "--json", "--layout", "even", "--set", "chips=8")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    pts = d["points"]
    assert len(pts) == 7 * 2                       # 1, 2, 4, ..., 64 crossed with two contexts
    assert d["units"]["step_time"] == "ms" and d["units"]["batch"] == "sequence"   # as the table reads them
    for p in pts:
        assert p["step_time"] == pytest.approx(step_by_hand(p["batch"], p["context"]) * 1e3, rel=1e-9)
        fill = (70e9 * 2 + p["batch"] * p["context"] * KV) / S / 80e9
        assert p["feasible"] is (fill <= 1)


def allreduces_by_hand(batch):
    """Megatron-LM's two all-reduces a layer (Shoeybi et al. 2019, sec. 3) of the batch's bf16
    residual vectors (d_model 8192) over 8 H100s on NVSwitch at 450 GB/s per direction (scaling-book
    GPUs chapter), 3.19 µs a step (the fastest small all-reduce in AIConfigurator 0.4.0's measured
    TensorRT-LLM table for H100, hardware.yaml's allreduce_latency): the faster of one-shot (one step, each GPU sends its buffer to the 7
    others) and two-shot (a one-step reduce-scatter and all-gather, 2 · 7/8 of the buffer), as
    TensorRT-LLM's ONESHOT/TWOSHOT all-reduces run them."""
    buffer = 2 * batch * 8192 * 2
    step = 3.19e-6
    one = 2 * step + 7 * buffer / 0.45e12
    two = 2 * (2 * step + 7 / 8 * buffer / 0.45e12)
    return 80 * min(one, two)


def test_deployed_sweep_adds_the_tensor_parallel_all_reduces(cli):
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-70b",
            "--sweep", "batch=1:64:log", "--set", "context=8192", "--json", "--set", "chips=8")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    pts = d["points"]
    assert len(pts) == 7 and "step_time as step_time_layout" in r.stderr
    # keyed by the name asked, with the quantity that answered it named beside
    assert d["answered_as"] == {"step_time": "step_time_layout"} and d["units"]["step_time"] == "ms"
    for p in pts:   # tp = 8 over the 8 chips: the even spread's reads and compute, then the all-reduces
        assert p["step_time"] == pytest.approx(
            (step_by_hand(p["batch"], 8192) + allreduces_by_hand(p["batch"])) * 1e3, rel=1e-9)


def test_sweep_table_and_csv(cli):
    r = cli("eval", "step_time", "throughput", "--hardware", "h100-sxm", "--model", "llama-3-70b",
            "--sweep", "batch=1,2000", "--set", "context=4096", "--layout", "even", "--set", "chips=8")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "weights bf16, KV bf16, compute bf16" in lines[0]
    assert "step_time [ms]" in lines[1] and "fits" in lines[1]   # the table a person reads: fits, yes/NO
    assert lines[2].rstrip().endswith("yes") and lines[3].rstrip().endswith("NO †")  # 372 fit at 4k
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-70b",
            "--sweep", "batch=1:3", "--csv", "--layout", "even", "--set", "chips=8", "--set", "context=8192")
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == ["batch [sequence]", "step_time [ms]", "feasible"] and len(rows) == 4
    assert {r[2] for r in rows[1:]} == {"true"}   # a yes-or-no as JSON writes it, in every CSV
    assert float(rows[2][1]) == pytest.approx(step_by_hand(2, 8192) * 1000, rel=1e-9)   # in ms, as the table


def test_compare_flags_what_does_not_fit(cli):
    r = cli("compare", "step_time", "latency_floor", "--hardware", "h100-sxm,gb200-nvl72",
            "--model", "deepseek-v3", "--json", "--layout", "even")
    assert r.returncode == 0, r.stderr
    rows = {x["hardware"]: x for x in json.loads(r.stdout)}
    # 671 GB of fp8 weights cannot fit in 8 x 80 GB; 72 x 186 GB holds them and the KV cache
    assert rows["h100-sxm"]["feasible"] is False and rows["gb200-nvl72"]["feasible"] is True
    assert rows["h100-sxm"]["values"]["step_time"]["flag"]
    assert "compute fp8" in rows["gb200-nvl72"]["formats"]
    text = cli("compare", "step_time", "--hardware", "h100-sxm,gb200-nvl72", "--model", "deepseek-v3",
               "--layout", "even").stdout
    assert "NO †" in text and "yes" in text and "step_time [ms]" in text
    # under the deployed layout (expert-parallel, attention replicated on each chip) the same holds
    r = cli("compare", "step_time", "--hardware", "h100-sxm,gb200-nvl72", "--model", "deepseek-v3", "--json")
    rows = {x["hardware"]: x for x in json.loads(r.stdout)}
    assert rows["h100-sxm"]["feasible"] is False and rows["gb200-nvl72"]["feasible"] is True
    assert rows["h100-sxm"]["values"]["step_time"]["answered_as"] == "step_time_layout"
    assert rows["h100-sxm"]["values"]["step_time"]["unit"] == "ms" and "step_time as step_time_layout" in r.stderr


@pytest.mark.parametrize("args,words", [
    (("eval", "step_time", "--sweep", "batch=0:3"), "positive"),
    (("eval", "step_time", "--sweep", "batch"), "NAME=SPEC"),
    (("eval", "step_time", "--sweep", "step_time=1:3"), "not an input"),
    (("eval", "step_time", "--sweep", "batch=1:x"), "start:stop"),
    (("eval", "step_time", "throughput", "--csv"), "--csv goes with --sweep"),
    (("compare", "nope", "--hardware", "h100-sxm"), "unknown quantity"),
    (("compare", "step_time", "--hardware", "nope"), "unknown hardware"),
])
def test_bad_sweeps_and_comparisons_are_one_line(cli, args, words):
    r = cli(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr


def test_csv_is_the_table_at_full_precision():
    """sweep_csv (columns turned to text at once, joined in chunks) writes the table's columns in
    the table's units (ms, not s; USD/Mtoken, not USD/token), each value the table's to its 3
    figures, an empty field where the table says n/a, and the fit as true or false (yes or NO † in the
    table)."""
    import numpy as np

    from chalkboard.evaluation import tables as tb
    from chalkboard.typeset.fmt import sig

    nan = float("nan")
    result = {"axes": {"batch": np.array([1.0, 2.0, 3.0, 4.0, 5.0]), "context": np.array([10.0, 10.0, 20.0, 20.0, 1e5])},
              "columns": {"step_time": np.array([1e-3, nan, 2.5e-3, 1.0 / 300.0, 7e-3]),
                          "cost_per_token": np.array([nan, nan, 1e-6, 2e-6, 3e-6]),
                          "mfu": np.array([0.5, 0.25, nan, 0.125, 1.0])},
              "fill": np.array([0.5, 1.0, 1.5, nan, 1.0000001])}
    names = ["step_time", "cost_per_token", "mfu"]
    table = tb.sweep_table(result, names)
    texts = {"".join(tb.sweep_csv(result, names, chunk=chunk)) for chunk in (1, 2, 65_536)}
    assert len(texts) == 1                       # chunking changes nothing
    head, *rows = list(csv.reader(io.StringIO(texts.pop())))
    assert table[0] == ["batch [sequence]", "context [token/sequence]", "step_time [ms]",
                        "cost_per_token [USD/Mtoken]", "mfu [%]", "fits"]
    assert head[:-1] == table[0][:-1] and head[-1] == "feasible"
    for got, shown in zip(rows, table[1:]):
        assert got[0] == shown[0]                # a count as a whole number, as the table shows it
        for value, cell in zip(got[2:5], shown[2:5]):
            assert (value == "") == (cell == "n/a") and (value == "" or sig(float(value)) == cell)
        assert {"true": "yes", "false": "NO †", "": "n/a"}[got[5]] == shown[5]
    assert rows[3][2] == repr(1.0 / 300.0 * 1000)   # full precision, not the table's 3.33
    no_fill = {**result, "fill": None}
    assert [r[-1] for r in csv.reader(io.StringIO("".join(tb.sweep_csv(no_fill, ["mfu"]))))][1:] == [""] * 5


def test_a_share_reads_as_a_percentage_in_eval_sweep_and_compare(cli):
    """MFU and HBM fill (declared share=True) are percentages everywhere, "%" named beside them:
    eval's line and its JSON, a sweep's column and JSON, compare's column (one rule, fmt.split_named)."""
    from chalkboard.typeset.fmt import sig

    sets = ("--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "batch=64", "--layout", "even")
    got = {q: json.loads(cli("eval", q, *sets, "--json").stdout) for q in ("mfu", "hbm_fill")}
    values = {q: d["value"] for q, d in got.items()}
    assert all(d["unit"] == "%" for d in got.values())
    assert 0 < values["mfu"] < 100 and 0 < values["hbm_fill"] < 100
    text = cli("eval", "mfu", *sets).stdout
    assert f"mfu = {sig(values['mfu'])}%" in text
    swept = cli("eval", "mfu", "hbm_fill", "--hardware", "h100-sxm", "--model", "llama-3-70b",
                "--sweep", "batch=64,128", "--layout", "even").stdout.splitlines()
    assert "mfu [%]" in swept[1] and "hbm_fill [%]" in swept[1]
    assert swept[2].split()[1:3] == [sig(values["mfu"]), sig(values["hbm_fill"])]
    compared = cli("compare", "mfu", "--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "batch=64",
                   "--layout", "even").stdout
    assert "mfu [%]" in compared and sig(values["mfu"]) in compared


def test_eval_of_several_quantities_is_each_one(cli):
    sets = ("--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "batch=8", "--json")
    both = json.loads(cli("eval", "step_time", "throughput", *sets).stdout)
    one = [json.loads(cli("eval", q, *sets).stdout) for q in ("step_time", "throughput")]
    assert [d["quantity"] for d in both] == ["step_time_layout", "throughput_layout"]
    assert [d["value"] for d in both] == [d["value"] for d in one]
    # throughput is the batch over the step: 8 sequences x 1 token / step
    assert both[1]["value"] == pytest.approx(8 / (both[0]["value"] * 1e-3), rel=1e-12)

