"""hardware.yaml and models.yaml: every number sourced, dated and of the right dimension;
headline numbers checked against published figures computed independently."""
import re

import pytest

from conftest import ROOT

from chalkboard.data.loader import fields
from chalkboard.evaluation.evaluate import Scenario
from units import Quantity

REQUIRED_HARDWARE = ["a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200", "gb200-nvl72",
                     "gb300-nvl72", "rubin", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7",
                     "mi300x", "mi355x", "trainium2"]
REQUIRED_MODELS = ["deepseek-v3", "llama-3-8b", "llama-3-70b", "llama-3-405b", "mixtral-8x22b",
                   "dense-1t"]
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def test_required_entries_present(data):
    assert set(REQUIRED_HARDWARE) <= set(data.hardware)
    assert set(REQUIRED_MODELS) <= set(data.models)
    assert {"kimi-k2", "qwen3-235b-a22b"} & set(data.models)


@pytest.mark.parametrize("kind", ["hardware", "models"])
def test_every_value_has_a_dated_source_and_the_right_dimension(data, kind):
    entries = data.hardware if kind == "hardware" else data.models
    schema = fields(kind.removesuffix("s"))
    for eid, e in entries.items():
        assert e.values, eid
        for f, v in e.values.items():
            assert v.source is not None and v.source.title, (eid, f)
            assert DATE.match(v.as_of), (eid, f, v.as_of)
            unit = schema[f].unit   # per chip where the declared unit says so (byte/s/chip)
            assert v.quantity.dimensionality == Quantity(1, unit).dimensionality, (eid, f)
            # counts may be zero (Qwen3 has no shared expert); measured figures are positive
            assert v.quantity.magnitude > 0 or (unit == "" and v.quantity.magnitude == 0), (eid, f)


def test_hardware_states_per_package_or_die(data):
    for h in data.hardware.values():
        assert h.tags["per"] in ("package", "die")


def test_flops_are_dense_not_sparse(data):
    # NVIDIA's H100 SXM datasheet: 1,979 TFLOP/s bf16 "with sparsity", i.e. 989 dense.
    h100 = data.hardware["h100-sxm"].values["flops_bf16"].quantity
    assert h100.to("TFLOP/s/chip").magnitude == pytest.approx(989, rel=0.01)
    # a format twice as narrow runs about twice as fast on the same chip
    for h in data.hardware.values():
        if "flops_fp8" in h.values and "flops_bf16" in h.values:
            r = (h.values["flops_fp8"].quantity / h.values["flops_bf16"].quantity).to("").magnitude
            assert 1.9 <= r <= 4.5, h.id  # Rubin's fp8 is more than 2x its bf16 rate


def test_h100_hardware_ratio_about_295(data):
    # Published: H100 SXM bf16 dense 989 TFLOP/s / 3.35 TB/s HBM3 (NVIDIA H100 datasheet)
    # = 295 (also the scaling-book, "How to Scale Your Model", Rooflines chapter: ~295 on H100).
    expected = 989e12 / 3.35e12
    sc = Scenario(data, "h100-sxm", "llama-3-70b", {"format": "bf16"})
    assert sc.value("hardware_ratio").to("token").magnitude == pytest.approx(expected, rel=0.01)


def test_deepseek_v3_sparsity_about_18(data):
    # DeepSeek-V3 Technical Report (arXiv:2412.19437): 671B total, 37B activated -> 18.1
    sc = Scenario(data, "h100-sxm", "deepseek-v3")
    assert sc.value("sparsity").magnitude == pytest.approx(671 / 37, rel=0.001)


def test_kv_bytes_llama_3_70b(data):
    # Llama 3 paper (arXiv:2407.21783) Table 3: 80 layers, 8 KV heads, head dim 128; bf16 cache:
    # 2 (K, V) x 80 x 8 x 128 x 2 bytes = 327,680 bytes = 320 KiB per token.
    sc = Scenario(data, "h100-sxm", "llama-3-70b")
    assert sc.value("kv_bytes_per_token").to("byte/token").magnitude == pytest.approx(327_680)


def test_kv_bytes_deepseek_v3_mla(data):
    # DeepSeek-V3 report: 61 layers, KV compression dim 512, decoupled RoPE key dim 64 (MLA);
    # bf16 cache: (512 + 64) x 61 x 2 bytes = 70,272 bytes per token.
    sc = Scenario(data, "h100-sxm", "deepseek-v3")
    assert sc.value("kv_bytes_per_token").to("byte/token").magnitude == pytest.approx(70_272)


def test_rubin_drain_time_near_the_lectures_15_ms(data):
    # Seed 004 line 57: "288 gigabytes divided by 20 terabytes per second ... about 15 milliseconds".
    sc = Scenario(data, "rubin", "deepseek-v3")
    assert sc.value("drain_time").to("ms").magnitude == pytest.approx(288 / 20, rel=0.25)


def test_tpu_capacity_kept_in_gib(data):
    # Google's Cloud TPU v5e page quotes 16 GiB of HBM: binary units survive loading.
    v = data.hardware["tpu-v5e"].values["hbm_capacity"]
    assert v.text == "16 GiB"
    assert v.quantity.to("byte/chip").magnitude == 16 * 2**30


def test_values_may_state_per_chip(tmp_path):
    from pathlib import Path
    from chalkboard.data.loader import load
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "hardware.yaml").write_text(
        (root / "hardware.yaml").read_text().replace('"3.35 TB/s"', '"3.35 TB/s/chip"', 1))
    (tmp_path / "models.yaml").write_text((root / "models.yaml").read_text())
    d = load(tmp_path)
    assert d.hardware["h100-sxm"].values["hbm_bandwidth"].quantity.to("TB/s/chip").magnitude == pytest.approx(3.35)


def test_duplicate_ids_are_an_error(tmp_path):
    from pathlib import Path
    from chalkboard.data.loader import DataError, load
    root = Path(__file__).resolve().parents[2]
    text = (root / "models.yaml").read_text()
    entry = text[text.index("  llama-3-8b:"):text.index("  llama-3-70b:")]
    (tmp_path / "models.yaml").write_text(text.replace(entry, entry + entry, 1))  # the same id twice
    (tmp_path / "hardware.yaml").write_text((root / "hardware.yaml").read_text())
    with pytest.raises(DataError, match="duplicate key 'llama-3-8b'"):
        load(tmp_path)


def test_zero_counts_are_rejected(tmp_path):
    from pathlib import Path
    from chalkboard.data.loader import DataError, load
    root = Path(__file__).resolve().parents[2]
    text = (root / "models.yaml").read_text()
    i = text.index("  llama-3-8b:")
    j = text.index("layers:", i)
    k = text.index("\n", j)
    line = text[j:k]
    import re
    bad = re.sub(r'"\d+"', '"0"', line, count=1)
    (tmp_path / "models.yaml").write_text(text[:j] + bad + text[k:])
    (tmp_path / "hardware.yaml").write_text((root / "hardware.yaml").read_text())
    with pytest.raises(DataError) as e:
        load(tmp_path)
    assert (e.value.entry, e.value.field) == ("llama-3-8b", "layers") and "positive" in e.value.message


def test_a_secondary_source_is_marked_wherever_its_figures_show(tmp_path, cli):
    """A source kept where no primary one exists says why (`secondary:`); the report's cells mark
    its figures ◊ with the reason, and eval names it as a secondary source beside the input."""
    import shutil

    from chalkboard.report import context as report
    from chalkboard.data.loader import load

    for f in ("hardware.yaml", "models.yaml", "prices.yaml"):
        shutil.copy(ROOT / f, tmp_path / f)
    hw = (tmp_path / "hardware.yaml").read_text(encoding="utf-8")
    chip = "a100-80gb"   # its HBM bandwidth from NVIDIA's own datasheet: a primary source
    src = load(ROOT).hardware[chip].values["hbm_bandwidth"].source
    assert not src.secondary
    edited = hw.replace(f"  {src.id}:\n", f"  {src.id}:\n    secondary: \"no datasheet found\"\n", 1)
    assert edited != hw
    (tmp_path / "hardware.yaml").write_text(edited, encoding="utf-8")
    d = load(tmp_path)
    plain = report._data_cell(load(ROOT).hardware[chip], "hbm_bandwidth", "TB/s")
    assert report.SECONDARY_MARK not in plain["text"] and "secondary" not in plain["title"]
    cell = report._data_cell(d.hardware[chip], "hbm_bandwidth", "TB/s")
    assert cell["text"] == plain["text"] + " " + report.SECONDARY_MARK and "no datasheet found" in cell["title"]
    r = cli("eval", "drain_time", "--hardware", chip, "--hardware-file", str(tmp_path / "hardware.yaml"), "--explain")
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("hbm_bandwidth"))
    assert line.endswith("[secondary source, low confidence]"), line
