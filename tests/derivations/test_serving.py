"""Serving numbers you can trust: set-ups that fit, experts actually read, attention compute,
explicit number formats, coherent inputs.

Expected figures are computed here by hand from the published configurations (cited per
test) and from the YAML values, never read back from chalkboard's own output.
"""
import json
import math

import pytest

from chalkboard.errors import InputError, MissingInput

from chalkboard.evaluation.evaluate import Scenario

# bytes per number of each format (bf16 = 2 bytes, fp8 = 1, fp4 = half a byte)
BYTES = {"bf16": 2, "fp8": 1, "fp4": 0.5, "int8": 1, "int4": 0.5}
RACK = 72          # default: one copy of the model per rack at most (README, "Default layout")
BATCH, CONTEXT = 2000, 8192


def mag(q, unit):
    return q.to(unit).magnitude


# -- feasibility --------------------------------------------------------------------------------
def _hand_memory(data, hid, mid):
    """Weights + KV cache per chip, and HBM per chip, from the raw YAML values."""
    h, m = data.hardware[hid], data.models[mid]
    v = lambda e, f: e.values[f].quantity.magnitude  # noqa: E731  (units as the YAML's base units)
    chips = min(v(h, "scaleup_domain"), RACK) if "scaleup_domain" in h.values else RACK
    weights = v(m, "params_total") * BYTES[m.tags["weight_format"]]
    kv_b = BYTES[m.tags.get("kv_format", "bf16")]
    if m.tags["attention"] == "mla":   # one latent + one RoPE key per layer
        per_token = v(m, "layers") * (v(m, "kv_latent_dim") + v(m, "kv_rope_dim")) * kv_b
    else:                              # a key and a value per KV head per layer
        per_token = 2 * v(m, "layers") * v(m, "n_kv_heads") * v(m, "d_head") * kv_b
    need = (weights + BATCH * CONTEXT * per_token) / chips
    return need, mag(h.values["hbm_capacity"].quantity, "byte/chip")


SETUP_QUANTITIES = ("step_time", "throughput", "memory_time", "compute_time", "worst_latency")


def test_every_pair_at_the_default_workload_is_flagged_when_it_does_not_fit(data):
    from chalkboard.report.results_json import results_json
    from chalkboard.evaluation.results import evaluate_all
    from derivations import REGISTRY

    res = evaluate_all(data)
    doc = json.loads(results_json(data, res, REGISTRY))["results"]
    seen_unfit = seen_fit = 0
    for hid in data.hardware:
        for mid in data.models:
            need, cap = _hand_memory(data, hid, mid)
            pair = doc[f"{hid}|{mid}"]
            fits = need <= 0.9 * cap   # within the engine's share of the HBM (engine_memory_share)
            assert pair["feasible"] is fits, (hid, mid, need, cap, pair["feasibility"])
            for name in SETUP_QUANTITIES:
                if name not in pair["values"]:
                    continue
                flagged = pair["values"][name].get("feasible") is False
                assert flagged is (not fits), (hid, mid, name)
            if not fits:
                seen_unfit += 1
                assert "does not fit" in pair["feasibility"]
            else:
                seen_fit += 1
    assert seen_unfit and seen_fit  # the sweep covers both kinds


def test_h100_llama_70b_at_4k_context_does_not_fit_and_says_how_many_do(data):
    # 8 x 80 GB HBM; Llama 3 70B bf16 weights 140 GB; KV 2*80*8*128*2 = 327,680 B/token (config)
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"context": "4096"})
    cap = (8 * 80e9 - 70e9 * 2) / (4096 * 327_680)         # 372.5 sequences in the whole HBM
    assert mag(sc.value("max_batch_capacity"), "sequence") == math.floor(cap) == 372
    engine = (8 * 80e9 * 0.9 - 70e9 * 2) / (4096 * 327_680)  # 324.9 in an engine's 90% of it
    assert mag(sc.value("max_batch_engine"), "sequence") == math.floor(engine) == 324
    why = sc.fit()
    assert why and "at most 324" in why and "the engine's 90% of the 80 GB/chip" in why
    assert sc.flag("step_time") == why and sc.flag("throughput") == why
    assert sc.flag("hardware_ratio") is None            # a property of the chip, not a set-up
    assert sc.flag("latency_floor") is None             # one sequence does fit


def test_deepseek_weights_alone_do_not_fit_on_eight_h100s(data, cli):
    # 671e9 fp8 weights over 8 chips = 83.9 GB per chip > 80 GB
    r = cli("eval", "throughput", "--hardware", "h100-sxm", "--model", "deepseek-v3", "--json", "--layout", "even")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["feasible"] is False and "weights alone" in d["feasibility"]
    r = cli("eval", "throughput", "--hardware", "h100-sxm", "--model", "deepseek-v3")
    assert "fits       : NO" in r.stdout
    # deployed (experts over 8 chips, attention and shared weights whole on each) it is worse:
    # 654e9 routed parameters / 8 + the ~17e9 always read, in fp8, per chip
    assert "of weights, more than the engine's 90% of the 80 GB/chip of HBM" in r.stdout


def test_featured_scenario_fits(data):
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    need, cap = _hand_memory(data, "gb200-nvl72", "deepseek-v3")
    assert need < 0.9 * cap and sc.fit() is None
    assert mag(sc.value("hbm_fill"), "") == pytest.approx(need / cap, rel=1e-9)


# -- experts actually read ---------------------------------------------------------------------
# DeepSeek-V3 config_671B.json: n_routed_experts 256, n_activated_experts 8, dim 7168,
# moe_inter_dim 2048, n_layers 61 of which n_dense_layers 3; report: 671B total, 37B active.
DS_ROUTED = 58 * 256 * 3 * 7168 * 2048                    # 653,908,770,816 parameters
DS_ALWAYS = 37e9 - DS_ROUTED * 8 / 256                    # 16,565,350,912


def test_deepseek_parameter_split_from_the_published_config(data):
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    assert mag(sc.value("routed_params"), "parameter") == DS_ROUTED
    assert mag(sc.value("always_read_params"), "parameter") == pytest.approx(DS_ALWAYS, rel=1e-12)
    # the split sums to the published total within 0.1%
    assert (DS_ALWAYS + DS_ROUTED) / 671e9 == pytest.approx(1, abs=1e-3)


@pytest.mark.parametrize("mid", ["deepseek-v3", "kimi-k2", "qwen3-235b-a22b", "mixtral-8x22b"])
def test_every_moe_split_sums_to_its_published_total(data, mid):
    m = data.models[mid]
    v = lambda f: m.values[f].quantity.magnitude  # noqa: E731
    routed = v("moe_layers") * v("experts") * 3 * v("d_model") * v("d_expert")
    always = v("params_active") - routed * v("experts_per_token") / v("experts")
    assert always > 0
    # Kimi K2: 1,026B from the config vs 1.04T published (1.3%); the others within 0.5%
    assert (always + routed) / v("params_total") == pytest.approx(1, abs=0.02)
    sc = Scenario(data, "gb200-nvl72", mid)
    assert mag(sc.value("routed_params"), "parameter") == pytest.approx(routed, rel=1e-12)


def test_deepseek_step_reads_n_active_at_batch_1_and_all_weights_by_the_coverage_batch(data):
    one = Scenario(data, "gb200-nvl72", "deepseek-v3", {"batch": "1"})
    assert mag(one.value("params_read"), "parameter") == pytest.approx(37e9, rel=1e-12)
    assert mag(one.value("experts_touched"), "") == pytest.approx(8)
    # latency floor on GB200 NVL72 (72 chips, 8 TB/s each): 37 GB of fp8 weights plus one
    # sequence's 8,192 x 70,272 B of KV cache, over 72 x 8 TB/s
    floor = (37e9 * 1 + 8192 * 70_272) / (72 * 8e12)
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    assert mag(sc.value("latency_floor"), "s") == pytest.approx(floor, rel=1e-9)
    assert mag(sc.value("weight_fetch_time_min"), "s") == pytest.approx(37e9 / (72 * 8e12), rel=1e-9)
    # 99% of the 256 experts are touched by ln(0.01)/ln(1 - 8/256) = 145.05 sequences
    b_cov = math.log(0.01) / math.log(1 - 8 / 256)
    assert mag(sc.value("expert_coverage_batch"), "sequence") == pytest.approx(b_cov, rel=1e-9)
    at = Scenario(data, "gb200-nvl72", "deepseek-v3")
    at.fix("batch", f"{b_cov} sequence")  # the continuous batch the derivation names
    read = mag(at.value("params_read"), "parameter")
    assert read == pytest.approx(DS_ALWAYS + 0.99 * DS_ROUTED, rel=1e-9)
    assert read / 671e9 > 0.98
    # the expected weight fetch lies between the strict bound and the lecture's all-weights fetch
    for b in (1, 4, 32, 145, 2000):
        s = Scenario(data, "gb200-nvl72", "deepseek-v3", {"batch": str(b)})
        lo, mid, hi = (mag(s.value(n), "s") for n in ("weight_fetch_time_min", "weight_fetch_time",
                                                       "weight_fetch_time_all"))
        assert lo <= mid <= hi
        assert mag(s.value("step_time_min"), "s") <= mag(s.value("step_time"), "s")


def test_dense_models_read_all_their_weights_at_every_batch(data):
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"batch": "1"})
    assert mag(sc.value("params_read"), "parameter") == 70e9
    with pytest.raises(MissingInput):
        sc.value("experts_touched")  # not applicable to a dense model


# -- attention FLOPs ----------------------------------------------------------------------------
def test_gqa_attention_flops_per_cached_token(data):
    # Llama 3 70B (config): 80 layers, 64 query heads of 128; per cached token each head does a
    # 128-long dot product for the score and a 128-long weighted sum of values, 2 FLOP per MAC
    sc = Scenario(data, "h100-sxm", "llama-3-70b")
    assert mag(sc.value("attention_flops_per_token"), "FLOP/token") == 2 * 2 * 80 * 64 * 128  # 2,621,440


def test_mla_attention_flops_per_cached_token_absorbed_form(data):
    # DeepSeek-V3: 61 layers, 128 heads; absorbed MLA scores the 512-wide latent plus the 64-wide
    # RoPE key and weights the 512-wide latent: 2 * 61 * 128 * (576 + 512) = 16,990,208
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    a = 2 * 61 * 128 * (512 + 64 + 512)
    assert mag(sc.value("attention_flops_per_token"), "FLOP/token") == a
    # attention FLOPs match the 2 * 37e9 weight FLOPs per token at 74e9 / a = 4,355 tokens
    assert mag(sc.value("attention_crossover"), "token/sequence") == pytest.approx(2 * 37e9 / a, rel=1e-12)
    # compute time = weights + attention: 2000 * (74e9 + 8192 * a) / (72 * 5e15 FLOP/s fp8)
    want = BATCH * (2 * 37e9 + CONTEXT * a) / (72 * 5e15)
    assert mag(sc.value("compute_time"), "s") == pytest.approx(want, rel=1e-9)
    assert mag(sc.value("compute_time_weights"), "s") == pytest.approx(BATCH * 2 * 37e9 / (72 * 5e15), rel=1e-9)


def test_context_crossover_exists_only_where_kv_grows_faster_than_attention_compute(data):
    # Per cached token a step fetches kv bytes at W and computes a FLOP at F. The KV fetch catches
    # up with compute only if kv/W > a/F. DeepSeek-V3 (MLA): kv = 61 * (512 + 64) * 2 B = 70,272 B,
    # a = 16,990,208 FLOP (test above). A100 80GB: 2.039 TB/s, 312 TFLOP/s bf16 (its datasheet):
    # 70,272 / 2.039e12 = 34.5 ns < 16,990,208 / 312e12 = 54.5 ns, so there is no crossover (it
    # used to print a negative context). GB200 at fp8, 8 TB/s and 5 PFLOP/s: 8.8 ns > 3.4 ns.
    kv, a = 61 * 576 * 2, 2 * 61 * 128 * (512 + 64 + 512)
    assert kv / 2.039e12 < a / 312e12
    with pytest.raises(MissingInput, match="never catches up"):
        Scenario(data, "a100-80gb", "deepseek-v3").value("context_crossover")
    # L* = 2 * N_active / (kv * F / W - a), per token of context
    want = 2 * 37e9 / (kv * 5e15 / 8e12 - a)
    got = mag(Scenario(data, "gb200-nvl72", "deepseek-v3").value("context_crossover"), "token/sequence")
    assert got == pytest.approx(want, rel=1e-9)


def test_no_quantity_is_negative_or_nan_for_any_pair(data):
    # Every declared quantity is a time, a size, a count, a rate or a ratio: a negative or NaN
    # value means a formula was used outside its domain without a 'valid' condition.
    from chalkboard.evaluation.results import evaluate_all
    res = evaluate_all(data)
    assert not res.errors and res.count_ok > 10_000
    bad = [(h, m, n, v) for (h, m), vals in res.values.items() for n, v in vals.items()
           if not (math.isfinite(v) and v >= 0)]
    assert bad == []


def test_two_step_forms(data):
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    c, w, kv = (mag(sc.value(n), "s") for n in ("compute_time", "weight_fetch_time", "kv_fetch_time"))
    assert mag(sc.value("step_time"), "s") == pytest.approx(max(c, w + kv))
    assert mag(sc.value("step_time_kv_serial"), "s") == pytest.approx(kv + max(c, w))
    assert mag(sc.value("step_form_gap"), "") >= 1


# -- formats -------------------------------------------------------------------------------------
def test_a100_computes_fp8_weights_at_its_bf16_rate_and_says_so(data):
    sc = Scenario(data, "a100-80gb", "deepseek-v3")
    assert sc.formats == {"weights": "fp8", "kv": "bf16", "compute": "bf16"}
    assert "no fp8 rate" in sc.compute_note and "no fp8 rate" in sc.formats_text()
    assert any(r.name == "peak_flops" and "no fp8 rate" in (r.note or "") for r in sc.inputs_of("compute_time"))


def test_an_explicit_compute_format_the_chip_lacks_is_an_error_naming_its_rates(cli):
    r = cli("eval", "step_time", "--hardware", "h100-sxm", "--set", "compute_format=fp4")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "no fp4" in r.stderr and "fp8" in r.stderr and "bf16" in r.stderr


def test_weight_and_kv_formats_are_separate_inputs(data):
    base = Scenario(data, "h100-sxm", "llama-3-70b")
    w4 = Scenario(data, "h100-sxm", "llama-3-70b", {"weight_format": "int4"})
    kv8 = Scenario(data, "h100-sxm", "llama-3-70b", {"kv_format": "fp8"})
    assert mag(w4.value("weights_per_chip"), "GB/chip") == pytest.approx(70e9 * 0.5 / 8 / 1e9)
    assert w4.formats["compute"] == "bf16" and "dequantised" in w4.compute_note
    assert mag(kv8.value("kv_bytes_per_token"), "byte/token") == 327_680 / 2
    assert mag(base.value("kv_bytes_per_token"), "byte/token") == 327_680


# -- coherent inputs ------------------------------------------------------------------------------
@pytest.mark.parametrize("sets,words", [
    ({"params_total": "1e9"}, ("params_active", "params_total", "sparsity")),
    ({"layers": "60.5"}, ("layers", "whole number")),
    ({"experts_per_token": "300"}, ("experts_per_token", "experts")),
    ({"n_heads": "4"}, ("n_kv_heads", "n_heads")),
])
def test_incoherent_overrides_are_errors_naming_the_conflict(data, sets, words):
    mid = "llama-3-70b" if "n_heads" in sets else "deepseek-v3"
    with pytest.raises(InputError) as e:
        Scenario(data, "gb200-nvl72", mid, sets)
    for w in words:
        assert w in str(e.value)


# -- the report ----------------------------------------------------------------------------------
def test_report_marks_an_unfit_setup_and_names_formats(data):
    from chalkboard.report.templates import environments
    from chalkboard.report.context import context
    from conftest import ROOT

    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"context": "4096"})
    ctx = context(data, sc, {}, audit=None, check=None)
    html = environments(ROOT)[0].get_template("report.html.j2").render(**ctx)
    assert "This set-up does not fit." in html and "at most 324" in html   # in the engine's 90% of 8 x 80 GB
    assert "weights bf16, KV bf16, compute bf16" in html
    from chalkboard.report.context import SUMMARY_COLUMNS, summary
    table = summary(data, "deepseek-v3")
    a100 = next(r for r in table["rows"] if r["id"] == "a100-80gb")
    fmts = a100["cells"][[c for c, _ in SUMMARY_COLUMNS].index("MoE formats w/KV/c") - 1]  # no cell for "Chip"
    assert fmts["text"].startswith("fp8/bf16/bf16") and "no fp8 rate" in fmts["title"]
    for s in ctx["sections"]:   # evaluated, not for this pair, or waiting for a measurement of the user's
        assert ("Formats: weights" in s["takeaway"] or s["takeaway"].startswith("(not evaluated")
                or s["takeaway"].startswith("(Evaluated once "))
    assert "Caution: does not fit" in next(s for s in ctx["sections"] if s["id"] == "roofline")["takeaway"]
