"""One answer in one convention: a sweep and compare keyed by the names asked, numbers in the unit
named beside them, true/false in every CSV, units that --set reads back, no bare number read in
base units, and a one-chip set-up that asks only for what it reads."""
import csv
import io
import json

import pytest

# H100 SXM (NVIDIA datasheet, dense): 989 TFLOP/s bf16, 3.35 TB/s, 80 GB.
# Llama 3 8B (Llama 3 paper, Table 3): 8e9 parameters, 32 layers, 8 KV heads of 128 -> bf16 KV of
# 2 (K and V) x 32 x 8 x 128 x 2 bytes = 131,072 bytes a token.
CHIP = ("--hardware", "custom", "--set", "hbm_bandwidth=3.35 TB/s", "--set", "flops_bf16=989 TFLOP/s",
        "--set", "hbm_capacity=80 GB")
KV_8B = 2 * 32 * 8 * 128 * 2


def llama_8b_step(batch, context):
    """One chip: the whole model's weights and the batch's KV read once a step (memory-bound)."""
    return (8e9 * 2 + batch * context * KV_8B) / 3.35e12


# -- no bare number read in base units ---------------------------------------------------------
@pytest.mark.parametrize("sets,example", [
    (("hbm_bandwidth=3.35",), 'hbm_bandwidth="3.35 TB/s"'),
    (("flops_bf16=989",), 'flops_bf16="989 TFLOP/s"'),
    (("ring_hop_latency=1e-6",), 'ring_hop_latency="1e-06 s"'),
])
def test_a_bare_number_for_a_dimensional_input_is_one_line(cli, sets, example):
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-8b",
            *[a for s in sets for a in ("--set", s)])
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "needs a unit" in r.stderr and example in r.stderr


def test_counts_still_take_bare_numbers(cli):
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-8b", "--set", "chips=1",
            "--set", "batch=8", "--set", "context=4096", "--set", "tp=1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["value"] == pytest.approx(llama_8b_step(8, 4096) * 1e3, rel=2e-2)  # + compute


def test_every_unit_eval_prints_reads_back_with_set(data):
    """Each input eval --json lists, given back to --set as "VALUE UNIT" exactly as printed, is
    the same value; and the units the program prints with a dot or a percent sign parse."""
    from chalkboard.errors import InputError
    from chalkboard.evaluation.evaluate import Scenario
    from chalkboard.evaluation.results import describe
    from units import parse

    sc = Scenario(data, "h100-sxm", "deepseek-v3", {"batch": "64"})
    checked = 0
    for i in describe(sc, "step_time_layout")["inputs"]:
        if i["value"] == 0:   # a share of 0 (nothing off the domain) is computed, not a --set value
            continue
        try:
            again = Scenario(data, "h100-sxm", "deepseek-v3", {"batch": "64", i["name"]: f"{i['value']!r} {i['unit']}"})
        except InputError as e:   # not a --set name (peak_flops is set as flops_FORMAT)
            assert "unknown input" in str(e) or "derived" in str(e), e
            continue
        assert again.mag(i["name"]) == pytest.approx(sc.mag(i["name"]), rel=1e-12), i
        checked += 1
    assert checked >= 20
    assert parse("2 chip·h").to("chip*s").magnitude == 7200
    assert parse("50 %").to("").magnitude == 0.5 and parse("3 1/chip").to("1/chip").magnitude == 3


# -- a sweep and compare keyed by the name asked -----------------------------------------------
def test_a_sweep_keys_its_columns_by_the_names_asked(cli):
    r = cli("eval", "step_time", "--sweep", "batch=1,2", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["answered_as"] == {"step_time": "step_time_layout"} and d["layout"] == "deployed"
    assert [set(p) for p in d["points"]] == [{"batch", "step_time", "feasible"}] * 2
    one = json.loads(cli("eval", "step_time", "--set", "batch=2", "--json").stdout)
    assert d["units"]["step_time"] == one["unit"] == "ms"
    assert d["points"][1]["step_time"] == pytest.approx(one["value"], rel=1e-12)


def test_every_column_of_a_sweep_row_is_of_one_layout(cli):
    """mfu beside step_time is the layout's MFU (one chip's compute over the layout's step), not the
    even spread's; a column with no form under the layout is refused beside one that has."""
    sets = ("--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "context=4096")
    r = cli("eval", "step_time", "mfu", *sets, "--sweep", "batch=8,64", "--csv")
    assert "note: chips = 4 chips held over the sweep" in r.stderr   # chosen for the default batch of 64
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    for row in rows:
        at = ("--set", f"batch={row['batch [sequence]']}", "--set", "chips=4", "--json")
        step = json.loads(cli("eval", "step_time", *sets, *at).stdout)
        compute = json.loads(cli("eval", "compute_time_layout", *sets, *at).stdout)
        assert float(row["step_time [ms]"]) == pytest.approx(step["value"], rel=1e-12)
        share = compute["value"] * {"µs": 1e-3, "ms": 1.0}[compute["unit"]] / step["value"]
        assert float(row["mfu [%]"]) == pytest.approx(100 * share, rel=1e-9)
        even = json.loads(cli("eval", "mfu", *sets, *at, "--layout", "even").stdout)["value"]
        assert float(row["mfu [%]"]) != pytest.approx(even, rel=1e-3)
    r = cli("eval", "step_time", "kv_fetch_time_sqrt", *sets, "--sweep", "batch=8,64")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--layout even" in r.stderr


def test_compare_csv_names_its_units_and_writes_true_false(cli):
    args = ("compare", "step_time", "cost_per_token", "--hardware", "h100-sxm,b200", "--model", "llama-3-8b",
            "--set", "batch=8")
    rows = list(csv.reader(io.StringIO(cli(*args, "--csv").stdout)))
    assert rows[0] == ["hardware", "model", "chips [chip]", "layout", "batch [sequence]", "step_time [ms]",
                       "cost_per_token [USD/Mtoken]", "feasible", "formats"]
    assert {r[7] for r in rows[1:]} <= {"true", "false"}
    js = {r["hardware"]: r for r in json.loads(cli(*args, "--json").stdout)}
    for r in rows[1:]:
        v = js[r[0]]["values"]
        assert v["step_time"]["unit"] == "ms" and v["cost_per_token"]["unit"] == "USD/Mtoken"
        assert float(r[5]) == v["step_time"]["value"] and float(r[6]) == v["cost_per_token"]["value"]
        assert r[7] == str(js[r[0]]["feasible"]).lower()
        # each row names its deployment, the same in CSV and JSON
        assert int(r[2]) == js[r[0]]["chips"] and int(r[4]) == js[r[0]]["batch"] == 8
        lay = js[r[0]]["layout"]
        assert r[3] == f"tp{lay['tp']}·dp{lay['dp_attention']}·ep{lay['ep']}·pp{lay['pp']}"


def test_compare_names_each_rows_chips_and_holds_them_with_chips(cli):
    """The README's recipe (which chip is cheapest, which fastest): each chip is on the fewest chips
    that hold Llama 3 70B and the 64 x 4,096 tokens of KV within the engine's 90% of HBM (H100: 4 of
    80 GB; H200: 2 of 141 GB), which the table says; --chips 8 puts every row on 8."""
    args = ("compare", "cost_per_token", "user_speed", "--hardware", "h100-sxm,h200", "--model", "llama-3-70b")
    rows = {r["hardware"]: r for r in json.loads(cli(*args, "--json").stdout)}
    assert rows["h100-sxm"]["chips"] == 4 and rows["h200"]["chips"] == 2
    text = cli(*args)
    assert text.stdout.splitlines()[0].split()[:5] == ["hardware", "model", "chips", "layout", "batch"]
    assert "--chips N" in text.stderr
    held = {r["hardware"]: r for r in json.loads(cli(*args, "--chips", "8", "--json").stdout)}
    assert {r["chips"] for r in held.values()} == {8}
    assert {r["layout"]["tp"] for r in held.values()} == {8}
    # with the chips held equal, the faster memory is the faster chip: H200 (4.8 TB/s) beats H100 (3.35 TB/s)
    assert held["h200"]["values"]["user_speed"]["value"] > held["h100-sxm"]["values"]["user_speed"]["value"]
    bad = cli(*args, "--chips", "8", "--set", "chips=4")
    assert bad.returncode == 2 and "--chips" in bad.stderr


# -- inputs asked only where they matter -------------------------------------------------------
def test_a_one_chip_custom_chip_needs_no_interconnect(cli):
    r = cli("eval", "step_time", *CHIP, "--model", "llama-3-8b", "--set", "batch=8", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["layout"]["chips"] == 1
    compute = 8 * (2 * 8e9 + 4096 * 2 * 2 * 32 * 32 * 128) / 989e12   # weights' and attention's FLOPs
    assert compute < llama_8b_step(8, 4096)   # the serving default context: 4,096 tokens
    assert d["value"] == pytest.approx(llama_8b_step(8, 4096) * 1e3, rel=1e-9)
    names = {i["name"] for i in d["inputs"]}
    assert not names & {"scaleup_bandwidth", "scaleup_domain", "ring_hop_latency", "direct_collectives",
                        "offdomain_bandwidth", "tp", "pp", "ep", "dp_attention", "d_model", "kv_shards"}
    text = cli("eval", "step_time", *CHIP, "--model", "llama-3-8b", "--set", "batch=8").stdout
    assert "layout     : one chip" in text and "workload default: a dense model tensor-parallel" not in text
    for q in ("latency_floor", "step_time_min", "throughput", "cost_per_token_layout"):
        r = cli("eval", q, *CHIP, "--model", "llama-3-8b", "--set", "rental_price=2 USD/h")
        assert r.returncode == 0, (q, r.stderr)


def test_a_custom_model_on_one_chip_needs_no_width_or_heads(cli):
    model = ("--model", "custom", "--set", "params_active=8e9", "--set", "params_total=8e9",
             "--set", f"kv_bytes_per_token={KV_8B} B/token", "--set", "attention_flops_per_token=0.5 MFLOP/token")
    r = cli("eval", "step_time", *CHIP, *model, "--set", "batch=8", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["value"] == pytest.approx(llama_8b_step(8, 4096) * 1e3, rel=1e-9)
    # on 8 chips the heads decide the tensor-parallel degree: then, and only then, asked for
    r = cli("eval", "step_time", *CHIP, *model, "--set", "chips=8", "--set", "scaleup_domain=8")
    assert r.returncode == 2 and "n_heads" in r.stderr and "d_model" not in r.stderr


# -- defaults a user expects -------------------------------------------------------------------
def test_the_default_copy_is_the_fewest_chips_that_hold_the_model(cli):
    """Llama 3 8B in bf16 (16 GB) with 64 sequences of 4,096 tokens of KV (64 x 4,096 x 131,072 B =
    34 GB) fits one 80 GB H100; Llama 3 70B (140 GB, 320 kB of KV a token: 86 GB) needs 226 GB, so
    3 chips, and the fewest that split its 64 query heads evenly is 4."""
    at = ("--hardware", "h100-sxm", "--json")
    one = json.loads(cli("eval", "chips", *at, "--model", "llama-3-8b").stdout)
    assert one["value"] == 1 and one["defaults"]["chips"] == "1 chip"
    seventy = json.loads(cli("eval", "step_time", *at, "--model", "llama-3-70b").stdout)
    assert seventy["feasible"] is True and seventy["layout"] == {"tp": 4, "dp_attention": 1, "ep": 1, "pp": 1, "chips": 4}
    assert seventy["defaults"] == {"batch": "64 sequences", "context": "4,096 tokens/sequence", "chips": "4 chips"}
    fill = (70e9 * 2 + 64 * 4096 * 2 * 80 * 8 * 128 * 2) / 4 / 80e9
    hbm = json.loads(cli("eval", "hbm_fill", *at, "--model", "llama-3-70b").stdout)
    assert hbm["value"] == pytest.approx(100 * fill, rel=1e-9)
    # what the user gives is kept: a batch (512 x 4,096 x 131,072 B = 275 GB of KV beside 16 GB of
    # weights: on 4 chips 91% of each one's 80 GB, over the engine's 90%; 8 the next that splits the
    # 32 heads evenly), or the chips
    assert json.loads(cli("eval", "chips", *at, "--model", "llama-3-8b", "--set", "batch=512").stdout)["value"] == 8
    held = json.loads(cli("eval", "chips", *at, "--model", "llama-3-8b", "--set", "chips=8").stdout)
    assert held["value"] == 8 and held["defaults"] == {}   # the chips read nothing the serving defaults give
    help_text = cli("eval", "--help").stdout
    assert "64" in help_text and "4,096" in help_text and "fewest chips" in help_text


def test_a_default_that_does_not_fit_is_named(cli):
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--model", "deepseek-v3")   # 671 GB > 8 x 80 GB
    assert r.returncode == 0
    assert "fits       : NO" in r.stdout and "they do not fit, --set them" in r.stdout and "chips = 8 chips" in r.stdout
