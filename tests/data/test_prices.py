"""Chapter 6: prices.yaml and derivations/prices.py.

The lecture's own numbers (chapters-3-7.md#A-05: ≈ 1,667 bytes per token; #C-12: $5 and $6.25),
and for each derivation at least one figure computed here by hand from published numbers.
"""
import json
import shutil

import pytest

from chalkboard.data.loader import DataError, load
from chalkboard.errors import InputError, MissingInput
from chalkboard.evaluation.evaluate import Scenario
from derivations import REGISTRY
from derivations.prices import best_tier
from tests.conftest import ROOT, run_cli

LECTURE_TIER = {"params_active": "100e9 parameter", "long_context_threshold": "200000 token/sequence",
                # F/W = 300 multiply-accumulates per byte = 600 FLOP per byte (chapters-3-7.md#A-04)
                "peak_flops": "600e12 FLOP/s", "hbm_bandwidth": "1e12 B/s"}


def mag(sc, name, unit):
    return sc.value(name).to(unit).magnitude


# -- the lecture's own numbers ------------------------------------------------------------------
def test_lecture_1667_bytes_per_token(data):
    # chapters-3-7.md#A-05: N_active / (300 · L) = 100e9 / (300 · 200e3) ≈ 1,667 bytes per token
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3", LECTURE_TIER)
    assert mag(sc, "kv_bytes_implied_by_tier", "byte/token") == pytest.approx(100e9 / (300 * 200e3), rel=1e-9)
    # the reference path agrees with the compiled one
    assert sc.pint_value("kv_bytes_implied_by_tier").to("byte/token").magnitude == pytest.approx(1666.667, rel=1e-6)


def test_lecture_prices_five_and_six_twenty_five(data):
    # chapters-3-7.md#C-12; Anthropic pricing page: Claude Opus 4.5 $5 base input, $6.25 5m cache write
    sc = Scenario(data, "h100-sxm", "deepseek-v3", {"price": "anthropic-claude-opus-4-5"})
    assert mag(sc, "input_price", "USD/Mtoken") == pytest.approx(5)
    assert mag(sc, "cache_write_5m_price", "USD/Mtoken") == pytest.approx(6.25)
    assert mag(sc, "cache_write_premium_5m", "") == pytest.approx(1.25)
    assert mag(sc, "cache_hit_discount", "") == pytest.approx(10)        # $0.50 cache hit


def test_batch_cancels_symbolically():
    expr = REGISTRY.closed_form("kv_bytes_implied_by_tier")
    assert REGISTRY["batch"].sym not in expr.free_symbols
    assert REGISTRY["chips"].sym not in expr.free_symbols


# -- independent figures --------------------------------------------------------------------------
def test_implied_kv_bytes_gb200_deepseek(data):
    # GB200 NVL72 per GPU: 5 PFLOP/s dense FP8 (10 with sparsity), 8 TB/s HBM3e (NVIDIA GB200 NVL72
    # spec table); DeepSeek-V3: 37 B activated parameters (report, sec. 4.2); a 200K-token tier.
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3", {"price": "google-gemini-3-1-pro"})
    assert mag(sc, "kv_bytes_implied_by_tier", "byte/token") == pytest.approx(
        2 * 37e9 * 8e12 / (5e15 * 200e3), rel=1e-6)   # 592 bytes per token


def test_gemini_long_context_premiums(data):
    # Gemini 3.1 Pro Preview: $2 / $12 up to 200K tokens, $4 / $18 above (Google's rates as listed)
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"price": "google-gemini-3-1-pro"})
    assert mag(sc, "long_output_premium", "") == pytest.approx(18 / 12)
    assert mag(sc, "long_input_premium", "") == pytest.approx(4 / 2)
    assert mag(sc, "output_over_input_price", "") == pytest.approx(6)
    with pytest.raises(MissingInput):      # Gemini's snapshot gives no cache-write price
        sc.value("cache_write_premium_5m")


def test_one_shared_layer_kv_bytes(data):
    # chapters-3-7.md#K-03: 1 layer × 2 (K, V) × 8 KV heads × 128 numbers × 1 byte (fp8) = 2,048 bytes
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"kv_format": "fp8"})
    assert mag(sc, "kv_bytes_shared_layer", "byte/token") == 2 * 8 * 128 * 1
    # Llama 3 70B's own cache: 80 layers × 2 × 8 × 128 × 2 bytes (bf16) = 327,680 bytes per token
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"unique_kv_layers": "80"})
    assert mag(sc, "kv_bytes_shared_layer", "byte/token") == 80 * 2 * 8 * 128 * 2


def test_prefill_turns_compute_bound(data):
    # Llama 3 70B (70e9 parameters, bf16) on one H100 SXM (989.5 TFLOP/s dense bf16, 3.35 TB/s):
    # a pass of one sequence of 4,096 tokens reads 140 GB of weights and 4,096 × 327,680 B of KV;
    # it is compute-bound from n = F·(weights + KV) / (W · 2 · N) new tokens.
    sets = {"batch": "1", "context": "4096", "chips": "1"}
    sc = Scenario(data, "h100-sxm", "llama-3-70b", sets)
    memory = 70e9 * 2 + 4096 * 327_680
    n_star = 989.5e12 * memory / (3.35e12 * 2 * 70e9)
    assert mag(sc, "pass_tokens_compute_bound", "token/sequence") == pytest.approx(n_star, rel=1e-6)
    assert mag(sc, "prefill_mfu", "") == 1.0            # a prefill of 4,096 tokens: compute-bound
    # decode is memory-bound; its compute adds attention, 4 · 80 layers · 64 heads · 128 FLOP per cached token
    decode_flop = 2 * 70e9 + 4096 * 4 * 80 * 64 * 128
    assert mag(sc, "mfu", "") == pytest.approx(decode_flop / (2 * 70e9) / n_star, rel=1e-6)
    assert mag(sc, "decode_over_prefill_cost", "") == pytest.approx(n_star, rel=1e-6)


def test_remat_cost_h100(data):
    # one forward pass of 70e9 parameters: 2 · 70e9 FLOP at 989.5 TFLOP/s, rented at $3.99 per hour
    sc = Scenario(data, "h100-sxm", "llama-3-70b")
    t = 2 * 70e9 / 989.5e12
    assert mag(sc, "remat_chip_time_per_token", "chip*s/token") == pytest.approx(t, rel=1e-9)
    assert mag(sc, "remat_cost_per_token", "USD/Mtoken") == pytest.approx(3.99 / 3600 * t * 1e6, rel=1e-9)


def test_hold_and_retrieve_costs_and_drain_times(data):
    # Micron 9400 Pro: 30.72 TB at 7,000 MB/s; Seagate Exos X24: 24 TB at 285 MB/s;
    # Grace CPU Superchip: 960 GB LPDDR5X at 1 TB/s; H100 SXM: 80 GB HBM3 at 3.35 TB/s.
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"ddr_cost": "1 USD/hour"})
    assert mag(sc, "flash_drain_time", "s") == pytest.approx(30.72e12 / 7e9)
    assert mag(sc, "disk_drain_time", "s") == pytest.approx(24e12 / 285e6)
    assert mag(sc, "ddr_drain_time", "s") == pytest.approx(0.96)
    assert mag(sc, "drain_time", "ms") == pytest.approx(80e9 / 3.35e12 * 1e3)  # H100: 80 GB at 3.35 TB/s
    b = 327_680                                   # Llama 3 70B, bf16 KV, bytes per token
    assert mag(sc, "ddr_hold_cost", "USD/token/hour") == pytest.approx(b * 1 / 960e9)
    assert mag(sc, "ddr_retrieve_cost", "USD/token") == pytest.approx(b * 1 / 3600 / 1e12)
    # holding for the break-even time costs one retrieval, and that time is the drain time
    assert mag(sc, "break_even_hold_time_ddr", "s") == pytest.approx(0.96)
    assert sc.pint_value("break_even_hold_time_ddr").to("s").magnitude == pytest.approx(0.96)
    # HBM: the share of an $3.99/hour chip's 80 GB one token's KV takes
    assert mag(sc, "hbm_hold_cost", "USD/token/hour") == pytest.approx(b * 3.99 / 80e9)
    with pytest.raises(MissingInput):   # no cost per hour is published for the flash device
        Scenario(data, "h100-sxm", "llama-3-70b").value("flash_hold_cost")


def test_cache_lifetimes_by_drain_time():
    drains = {"hbm": 0.0232, "ddr": 0.96, "flash": 30.72e12 / 7e9, "disk": 24e12 / 285e6}
    assert best_tier(drains, 5 * 60) == "flash"      # 5 minutes: flash (4,389 s) beats DDR (0.96 s)
    assert best_tier(drains, 3600) == "flash"        # 1 hour: flash (1.2x), not disk (23x)
    assert best_tier(drains, 0.02) == "hbm"
    assert best_tier(drains, 86_400) == "disk"


def test_default_price_entry_evaluates_every_price_field(data):
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    assert sc.price.id == data.default_price
    for q in REGISTRY.inputs("price"):
        assert sc.input(q.name).magnitude > 0, q.name


def test_unknown_price_id_is_an_input_error(data):
    with pytest.raises(InputError, match="unknown price id 'nope'"):
        Scenario(data, "h100-sxm", "llama-3-70b", {"price": "nope"})
    r = run_cli("eval", "input_price", "--set", "price=nope")
    assert r.returncode == 2 and "unknown price id 'nope'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


# -- validation of prices.yaml ----------------------------------------------------------------------
def _copy(tmp_path, text):
    for f in ("hardware.yaml", "models.yaml"):
        shutil.copy(ROOT / f, tmp_path / f)
    (tmp_path / "prices.yaml").write_text(text, encoding="utf-8")


def _edited(old, new):
    text = (ROOT / "prices.yaml").read_text(encoding="utf-8")
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("old, new, where", [
    ('    input_price: "5 USD/Mtoken"', '    input_price: "5 USD/hour"',
     "prices.yaml: anthropic-claude-opus-4-5: input_price: "),
    ('    input_price: "5 USD/Mtoken"', '    input_price: 5',
     "prices.yaml: anthropic-claude-opus-4-5: input_price: value must be a quoted string"),
    ('    output_price: "25 USD/Mtoken"\n', '',
     "prices.yaml: anthropic-claude-opus-4-5: output_price: missing"),
    ('    long_output_price: "18 USD/Mtoken"\n', '',
     "prices.yaml: google-gemini-3-1-pro: long_output_price: missing (a long-context tier"),
    ('    long_input_price: "4 USD/Mtoken"', '    long_input_price: "1 USD/Mtoken"',
     "prices.yaml: google-gemini-3-1-pro: long_input_price: is below input_price"),
    ('default: anthropic-claude-sonnet-4', 'default: nope', "prices.yaml: default: 'nope' is not a price entry"),
    ('    capacity: "24 TB"', '    capacity: "24 TB/s"', "prices.yaml: disk: capacity: "),
    ('  disk:\n', '  tape:\n', "prices.yaml: tape: unknown memory tier"),
    ('    source: seagate-exos-x24\n', '    source: nowhere\n', "prices.yaml: disk: source: unknown source 'nowhere'"),
])
def test_bad_prices_file_names_file_entry_field(tmp_path, old, new, where):
    _copy(tmp_path, _edited(old, new))
    with pytest.raises(DataError) as e:
        load(tmp_path)
    assert str(e.value).startswith(where), str(e.value)
    assert "\n" not in str(e.value)


def test_bad_prices_file_on_the_command_line_exits_2(tmp_path):
    bad = tmp_path / "bad-prices.yaml"
    bad.write_text(_edited('    input_price: "5 USD/Mtoken"', '    input_price: "5 USD/hour"'), encoding="utf-8")
    r = run_cli("eval", "input_price", "--prices-file", str(bad))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "anthropic-claude-opus-4-5: input_price:" in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_without_prices_file_price_quantities_are_not_applicable(tmp_path):
    for f in ("hardware.yaml", "models.yaml"):
        shutil.copy(ROOT / f, tmp_path / f)
    d = load(tmp_path)
    assert d.prices == {} and d.default_price is None
    sc = Scenario(d, "h100-sxm", "llama-3-70b")
    with pytest.raises(MissingInput, match="no price snapshot"):
        sc.value("output_over_input_price")
    assert mag(sc, "drain_time", "ms") > 0        # the rest still evaluates
    r = run_cli("eval", "input_price", "--prices-file", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and "missing.yaml: file not found" in r.stderr


def test_eval_names_the_tier_for_a_hold_time(tmp_path):
    # Drain times from the tier devices' data sheets (prices.yaml memory_tiers): flash
    # 30.72 TB / 7 GB/s = 4,389 s, disk 24 TB / 285 MB/s = 84,211 s, host memory 960 GB / 1 TB/s =
    # 0.96 s; HBM of an H100: 80 GB / 3.35 TB/s = 23.9 ms. The tier nearest the hold time (log scale).
    for hold, tier in (("5 min", "flash"), ("1 hour", "flash"), ("20 ms", "hbm"), ("1 s", "ddr"),
                       ("1 day", "disk")):
        r = run_cli("eval", "best_kv_tier", "--hardware", "h100-sxm", "--set", f"hold_time={hold}", "--json")
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert d["value"] == tier, (hold, d["value"])
        drains = {o["option"]: o for o in d["options"]}
        assert drains["flash"]["ratio"] == pytest.approx(30.72e12 / 7e9 / _seconds(hold), rel=1e-9)
    r = run_cli("eval", "best_kv_tier", "--hardware", "h100-sxm")
    assert r.returncode == 0 and r.stdout.startswith("best_kv_tier = NVMe flash")
    assert "-> NVMe flash" in r.stdout and "drain_time = 23.9 ms" in r.stdout
    r = run_cli("eval", "best_kv_tier", "--sweep", "hold_time=1:100")
    assert r.returncode == 2 and "names an option, not a number" in r.stderr
    names = {q["name"]: q for q in json.loads(run_cli("list", "quantities", "--json").stdout)}
    assert names["best_kv_tier"]["origin"] == "choice" and names["best_kv_tier"]["chapter"] == "prices"


def _seconds(text):
    n, unit = text.split()
    return float(n) * {"min": 60, "hour": 3600, "ms": 1e-3, "s": 1, "day": 86400}[unit]
