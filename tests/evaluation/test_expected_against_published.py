"""The expected decode step of a dense 70B model on H100s against the published runs of that set-up, figures
copied from their sources (not read through the project). No published run of Llama 70B at TP8 on 8 x H100
gives a per-token time at a stated batch of 1 or 64; the closest published set-up is TP4 on 4 x H100 SXM:

* Argonne's LLM-Inference-Bench (Chitty-Venkata et al., arXiv:2411.00136), Plots/All_results.csv at commit
  4211f5d: Meta-Llama-3-70B in FP16, TensorRT-LLM and vLLM, input length = output length, latency of the
  whole batch in seconds (prefill included);
* TensorRT-LLM release/0.5.0 docs/source/performance.md: Llama 2 70B (the same layers and width), FP8,
  static batch 64, output tokens/s of the four GPUs.

Each run's time per answer token is set against step_time_expected_layout at its own formats and its
average context (the prompt and half the answer); the median over the runs at a batch must be within
×1.3 of 1."""
import statistics

import pytest

from chalkboard.evaluation.evaluate import Scenario

# (formats, input, output, batch, seconds per answer token)
RUNS = [
    ("bf16", 128, 128, 1, 2.3123 / 128),        # Argonne, TensorRT-LLM
    ("bf16", 2048, 2048, 1, 41.888 / 2048),
    ("bf16", 128, 128, 1, 2.4624 / 128),        # Argonne, vLLM
    ("bf16", 2048, 2048, 1, 39.300 / 2048),
    ("bf16", 128, 128, 64, 3.5803 / 128),       # Argonne, TensorRT-LLM
    ("bf16", 2048, 2048, 64, 71.819 / 2048),
    ("bf16", 128, 128, 64, 3.7508 / 128),       # Argonne, vLLM
    ("bf16", 2048, 2048, 64, 80.216 / 2048),
    ("fp8", 128, 128, 64, 64 / 3317),           # TensorRT-LLM 0.5: 3,317 output tokens/s at batch 64
    ("fp8", 128, 2048, 64, 64 / 2616),
    ("fp8", 2048, 2048, 64, 64 / 1583),
]


@pytest.fixture(scope="module")
def fitted(data):
    from conftest import ROOT
    from chalkboard import validation
    return validation.evidence(ROOT, data)


@pytest.mark.parametrize("batch", [1, 64])
def test_the_expected_70b_step_on_h100s_is_within_1_3_of_the_published_median(data, fitted, batch):
    ratios = []
    for fmt, n_in, n_out, b, measured in RUNS:
        if b != batch:
            continue
        sc = Scenario(data, "h100-sxm", "llama-3-70b", {
            "weight_format": fmt, "compute_format": fmt, "kv_format": fmt, "tp": "4", "chips": "4",
            "batch": str(b), "context": str(n_in + n_out // 2)})
        sc.evidence = fitted
        ratios.append(measured / sc.mag("step_time_expected_layout", "s"))
    assert len(ratios) >= 4
    assert 1 / 1.3 <= statistics.median(ratios) <= 1.3, ratios
