"""`plan --emit`: the launch command of a pick, in each engine's documented flags.

The expected commands are written by hand from the engines' pages (vLLM's engine arguments,
SGLang's server arguments, TensorRT-LLM's trtllm-serve options, all read December 2026), for a pick
stated here, not one the search computes.
"""
import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from chalkboard.planner.emit import command, hub_repo

# DeepSeek-V3 on 16 H200s as SGLang's DeepSeek recipe lays it out: experts over all 16, attention
# tensor-parallel by 2 in 8 data-parallel groups; fp8 weights as released, the KV cache in fp8
MOE = {"hardware": "h200", "weight_format": "fp8", "native_format": "fp8", "kv_format": "fp8",
       "deployment": "colocated", "tp": 2, "dp_attention": 8, "ep": 16, "pp": 1, "chips": 16, "batch": 256,
       "memory_share": 0.9, "weight_share": 0.3}
# Llama 3 70B in fp8 from its bf16 release on 4 H100s, KV cache in bf16
DENSE = {"hardware": "h100-sxm", "weight_format": "fp8", "native_format": "bf16", "kv_format": "bf16",
         "deployment": "colocated", "tp": 4, "dp_attention": 1, "ep": 1, "pp": 1, "chips": 4, "batch": 64,
         "memory_share": 0.9, "weight_share": 0.25}


def _flags(text: str) -> list[str]:
    """The command's words, one flag and its value together, continuation lines joined."""
    line = [x for x in text.replace("\\\n", " ").splitlines() if not x.startswith(("#", "cat", "EOF", " "))][-1]
    words = line.split()
    out, i = [], 0
    while i < len(words):
        if words[i].startswith("--") and i + 1 < len(words) and not words[i + 1].startswith("--"):
            out.append(f"{words[i]} {words[i + 1]}")
            i += 2
        else:
            out.append(words[i])
            i += 1
    return out


def test_vllm_dense():
    f = _flags(command("vllm", DENSE, 8192, "meta-llama/Llama-3.1-70B-Instruct"))
    assert f[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"]
    # --max-num-seqs is the batch; --gpu-memory-utilization the engine's share of each GPU's memory;
    # --quantization fp8 quantizes the bf16 checkpoint at load; no data or expert parallelism
    assert set(f[3:]) == {"--tensor-parallel-size 4", "--pipeline-parallel-size 1", "--max-num-seqs 64",
                          "--gpu-memory-utilization 0.9", "--max-model-len 8192", "--quantization fp8"}


def test_vllm_and_sglang_moe():
    f = _flags(command("vllm", MOE, 4096, "deepseek-ai/DeepSeek-V3"))
    # vLLM's data-parallel ranks each schedule their own sequences: 256 / 8 each; experts over tp x dp
    assert set(f[3:]) == {"--tensor-parallel-size 2", "--pipeline-parallel-size 1", "--data-parallel-size 8",
                          "--enable-expert-parallel", "--max-num-seqs 32", "--gpu-memory-utilization 0.9",
                          "--max-model-len 4096", "--kv-cache-dtype fp8"}
    f = _flags(command("sglang", MOE, 4096, "deepseek-ai/DeepSeek-V3"))
    # SGLang's --tp-size is every GPU of the copy; --dp-size with --enable-dp-attention splits attention
    assert f[:4] == ["python", "-m", "sglang.launch_server", "--model-path deepseek-ai/DeepSeek-V3"]
    assert set(f[4:]) == {"--tp-size 16", "--dp-size 8", "--enable-dp-attention", "--ep-size 16",
                          "--max-running-requests 256", "--mem-fraction-static 0.9", "--context-length 4096",
                          "--kv-cache-dtype fp8_e4m3"}


def test_trtllm_moe_with_mtp():
    pick = {**MOE, "draft_tokens": 1, "draft": "mtp"}
    text = command("trtllm", pick, 4096, "deepseek-ai/DeepSeek-V3")
    f = _flags(text)
    # the KV cache's fraction is of the memory the weights leave: (0.9 - 0.3) / (1 - 0.3) = 0.857
    assert set(f[2:]) == {"--backend pytorch", "--tp_size 16", "--pp_size 1", "--ep_size 16",
                          "--max_batch_size 32", "--max_seq_len 4096", "--kv_cache_free_gpu_memory_fraction 0.86",
                          "--extra_llm_api_options extra-colocated.yaml"}
    assert ("kv_cache_config:\n  dtype: fp8\nenable_attention_dp: true\nspeculative_config:\n"
            "  decoding_type: MTP\n  num_nextn_predict_layers: 1\n") in text
    # SGLang runs DeepSeek's MTP head as EAGLE with one step
    f = _flags(command("sglang", pick, 4096, "deepseek-ai/DeepSeek-V3"))
    assert {"--speculative-algorithm EAGLE", "--speculative-num-steps 1", "--speculative-eagle-topk 1",
            "--speculative-num-draft-tokens 2"} <= set(f)


def test_disaggregated_workers_are_launched_each_in_its_role():
    pick = {**DENSE, "deployment": "disaggregated",
            "workers": {"prefill": {"count": 2, "tp": 2, "dp_attention": 1, "ep": 1, "pp": 1, "chips": 2,
                                    "batch": 2, "token_budget": 8192},
                        "decode": {"count": 1, "tp": 4, "dp_attention": 1, "ep": 1, "pp": 1, "chips": 4,
                                   "batch": 64}}}
    text = command("sglang", pick, 8192, "m")
    assert "# prefill: 2 workers of 2 chips each" in text and "# decode: 1 worker of 4 chips each" in text
    pre, dec = text.split("# decode")
    assert "--disaggregation-mode prefill" in pre and "--chunked-prefill-size 8192" in pre and "--tp-size 2" in pre
    assert "--disaggregation-mode decode" in dec and "--tp-size 4" in dec


def test_the_model_is_named_by_the_repository_its_data_cites():
    from chalkboard.data.loader import load
    from chalkboard.runtime.home import ROOT
    data = load(ROOT)
    # models.yaml reads Llama 3 70B's dimensions from the Llama 3.1 70B Instruct config.json
    assert hub_repo(data, "llama-3-70b") == "meta-llama/Llama-3.1-70B-Instruct"
    assert hub_repo(data, "dense-1t") == "<dense-1t weights>"


def _main(*argv):
    import build
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = build.main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_plan_emits_the_pick():
    status, out, err = _main("plan", "--model", "llama-3-8b", "--hardware", "h100-sxm", "--context", "4096",
                             "--min-tokens-per-user", "50", "--formats", "bf16", "--emit", "vllm")
    assert status == 0, err
    assert out.startswith("# vLLM: h100-sxm, weights bf16") and "vllm serve meta-llama/" in out
    assert "--max-model-len 4096" in out and "--gpu-memory-utilization 0.9" in out


def test_nothing_to_emit_is_one_line(cli):
    r = cli("plan", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--min-tokens-per-user", "4000",
            "--emit", "sglang")
    assert r.returncode == 2 and "no deployment searched meets the targets" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_engine_states_the_formats(engine):
    text = command(engine, {**DENSE, "weight_format": "fp4"}, 4096, "m")
    assert "# weights in fp4: serve a checkpoint quantized to fp4" in text


def test_an_in_flight_pick_sets_each_engines_token_budget():
    # in-flight batching: a step's prompt chunks within TensorRT-LLM's default max_num_tokens of 8,192, set
    # with each engine's own flag (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size, trtllm-serve
    # --max_num_tokens)
    pick = {**DENSE, "deployment": "in-flight"}
    assert "--max-num-batched-tokens 8192" in _flags(command("vllm", pick, 4096, "meta-llama/Llama-3.3-70B-Instruct"))
    assert "--chunked-prefill-size 8192" in _flags(command("sglang", pick, 4096, "meta-llama/Llama-3.3-70B-Instruct"))
    assert "--max_num_tokens 8192" in _flags(command("trtllm", pick, 4096, "meta-llama/Llama-3.3-70B-Instruct"))
    assert "--max-num-batched-tokens 8192" not in _flags(command("vllm", DENSE, 4096, "meta-llama/Llama-3.3-70B-Instruct"))
