"""The MoE-on-a-rack chapter: expert parallelism and the all-to-all, against published figures."""
import pytest
import sympy as sp

from chalkboard.evaluation.evaluate import Scenario
from derivations import REGISTRY as R


def test_deepseek_on_a_72_gpu_rack_uses_64_gpus_4_experts_each(data):
    # Lecture (seed 004 line 33): 256 experts on a 72-GPU Blackwell rack -> use 64 GPUs, 4 each.
    # DeepSeek-V3 report: 256 routed experts per MoE layer. NVIDIA GB200 NVL72: 72 GPUs.
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    assert sc.value("expert_chips").to("chip").magnitude == 64
    assert sc.value("experts_per_chip").to("1/chip").magnitude == 4


def test_expert_chips_rule_on_other_layouts(data):
    # Kimi K2 (384 experts, Kimi K2 report) on 72 GPUs -> 64 (6 each); Mixtral's 8 experts on 8 GPUs -> 8.
    assert Scenario(data, "gb200-nvl72", "kimi-k2").value("expert_chips").magnitude == 64
    assert Scenario(data, "h100-sxm", "mixtral-8x22b").value("expert_chips").magnitude == 8


def test_expert_ratio_is_one_in_32_for_deepseek(data):
    # DeepSeek-V3 report: each token is routed to 8 of 256 experts.
    assert Scenario(data, "gb200-nvl72", "deepseek-v3").value("expert_ratio").magnitude == 32


def test_all_to_all_bytes_per_token(data):
    # DeepSeek-V3: hidden size 7168, 8 routed experts; dispatch + combine in bf16:
    # 2 x 8 x 7168 x 2 bytes = 229,376 bytes per token per MoE layer.
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    assert sc.value("a2a_bytes_per_token").to("byte/token").magnitude == pytest.approx(229_376)


def test_half_the_traffic_leaves_over_two_racks(data):
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3", {"racks": "2"})
    assert sc.value("offrack_fraction").magnitude == pytest.approx(0.5)
    assert sp.simplify(R.closed_form("offrack_fraction") - (1 - 1 / R["racks"].sym)) == 0


@pytest.mark.parametrize("hw,expected", [
    # NVLink 4: 900 GB/s bidirectional per H100 (450 per direction) vs a 400 Gb/s ConnectX-7 NIC (50 GB/s)
    ("h100-sxm", 450 / 50),
    # NVLink 5: 1.8 TB/s bidirectional per Blackwell GPU (900 per direction) vs 400 Gb/s
    ("gb200-nvl72", 900 / 50),
])
def test_scaleup_over_scaleout(data, hw, expected):
    sc = Scenario(data, hw, "deepseek-v3")
    assert sc.value("scaleup_scaleout_ratio").magnitude == pytest.approx(expected, rel=0.01)


def test_spanning_two_racks_makes_the_scaleout_share_the_bottleneck(data):
    one = Scenario(data, "gb200-nvl72", "deepseek-v3", {"racks": "1"})
    two = Scenario(data, "gb200-nvl72", "deepseek-v3", {"racks": "2"})
    assert one.value("a2a_time_scaleout").magnitude == 0
    assert two.value("comm_time") == two.value("a2a_time_scaleout")
    # the off-rack half over a link 18x slower takes 9x the whole in-rack all-to-all
    ratio = (two.value("a2a_time_scaleout") / one.value("a2a_time_scaleup")).to("").magnitude
    assert ratio == pytest.approx(0.5 * 18, rel=0.01)


def test_domain_in_dies(data):
    # NVIDIA: GB200 NVL72 = 72 Blackwell GPUs of 2 dies each = 144 dies; Rubin "NVL144" = 72 x 2.
    assert Scenario(data, "gb200-nvl72", "deepseek-v3").value("domain_dies").to("die").magnitude == 144
    assert Scenario(data, "rubin", "deepseek-v3").value("domain_dies").to("die").magnitude == 144
    # Rubin Ultra NVL576 (NVIDIA GTC 2025): 144 packages x 4 dies = 576
    ru = Scenario(data, "rubin", "deepseek-v3", {"scaleup_domain": "144 chip", "dies_per_package": "4 die/chip"})
    assert ru.value("domain_dies").to("die").magnitude == 576


def test_cables_in_a_single_tier_nvl72(data):
    # NVIDIA fifth-generation NVLink: 18 links per Blackwell GPU; 72 GPUs -> 1,296 GPU-side cables.
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    assert sc.value("cables_single_tier").to("cable").magnitude == 72 * 18
    # and SymPy finds the doubling factor from the closed form, not a typed 2
    assert R["cable_growth_on_doubling"].how.startswith("cables_single_tier at 2")
    assert R.closed_form("cable_growth_on_doubling") == 2


def test_one_rack_holds_deepseek(data):
    # 64 x 186 GB (GB200 NVL72 per-GPU HBM) at 1 byte per fp8 weight holds ~11.9e12 parameters >> 671e9
    sc = Scenario(data, "gb200-nvl72", "deepseek-v3")
    held = sc.value("moe_capacity_params").to("parameter").magnitude
    assert held == pytest.approx(64 * 186e9, rel=0.01)
    assert held > 671e9  # DeepSeek-V3's 671B parameters fit with room for the KV cache
