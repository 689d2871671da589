"""The launch command of a plan's pick for a serving engine: `plan --emit vllm|sglang|trtllm`.

Each flag is the engine's own documented name; the pages read (as of December 2026):
- vLLM, `vllm serve`: https://docs.vllm.ai/en/stable/configuration/engine_args.html (--tensor-parallel-size,
  --pipeline-parallel-size, --data-parallel-size, --enable-expert-parallel, --max-num-seqs,
  --gpu-memory-utilization, --max-model-len, --quantization, --kv-cache-dtype, --max-num-batched-tokens,
  --speculative-config) and https://docs.vllm.ai/en/stable/features/disagg_prefill.html (--kv-transfer-config).
- SGLang, `python -m sglang.launch_server`: https://docs.sglang.io/advanced_features/server_arguments.html
  (--model-path, --tp-size, --dp-size, --ep-size, --enable-dp-attention, --max-running-requests,
  --mem-fraction-static, --context-length, --quantization, --kv-cache-dtype, --chunked-prefill-size,
  --disaggregation-mode) and https://docs.sglang.io/advanced_features/speculative_decoding.html
  (--speculative-algorithm, --speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens).
- TensorRT-LLM, `trtllm-serve`: https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve/trtllm-serve.html
  (--tp_size, --pp_size, --ep_size, --max_batch_size, --max_num_tokens, --max_seq_len,
  --kv_cache_free_gpu_memory_fraction, --extra_llm_api_options: a YAML of LLM API fields, here
  kv_cache_config.dtype, enable_attention_dp, speculative_config and cache_transceiver_config).
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter

from .workers import TOKEN_BUDGET

ENGINES = ("vllm", "sglang", "trtllm")
TITLES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


def hub_repo(data, model: str) -> str:
    """The Hugging Face repository the model's data cites most (its config.json), else a placeholder."""
    entry = data.models[model]
    urls = [v.source.url for v in entry.values.values() if v.source is not None and v.source.url]
    urls += [data.sources[s].url for s in entry.tag_sources.values() if s in data.sources]
    repos = Counter(m.group(1) for u in urls
                    if (m := re.search(r"huggingface\.co/([\w.-]+/[\w.-]+)", u)))
    return repos.most_common(1)[0][0] if repos else f"<{model} weights>"


def workers(pick: dict) -> list[dict]:
    """The kinds of worker a pick launches: each with its role, count, layout and batch."""
    if pick.get("workers"):
        return [{"role": role, **w} for role, w in pick["workers"].items()]
    keys = ("tp", "dp_attention", "ep", "pp", "chips", "batch")
    role = "decode" if pick["deployment"] == "disaggregated" else pick["deployment"]
    budget = {"token_budget": TOKEN_BUDGET} if role == "in-flight" else {}   # a step's prompt chunks within it
    return [{"role": role, "count": pick.get("copies", 1), **{k: pick[k] for k in keys}, **budget}]


def command(engine: str, pick: dict, context: float, repo: str) -> str:
    """The launch script of ``pick`` on ``engine``: one command per kind of worker, each headed by a
    comment saying how many to start and on how many chips."""
    if engine not in ENGINES:
        raise ValueError(f"--emit {engine}: expected one of {', '.join(ENGINES)}")
    out = [f"# {TITLES[engine]}: {pick['hardware']}, weights {pick['weight_format']}, KV cache "
           f"{pick['kv_format']}, {pick['deployment']}"]
    for w in workers(pick):
        out.append(f"# {w['role']}: {w['count']} worker{'s' if w['count'] != 1 else ''} of {w['chips']} chip"
                   f"{'s' if w['chips'] != 1 else ''} each")
        out += _ONE[engine](pick, w, int(math.ceil(context)), repo)
    return "\n".join(out)


def _formats(pick: dict, engine: str) -> tuple[list[str], list[str]]:
    """(flags, comments) that set the weight and KV cache formats. An fp8 copy of bf16 weights is
    quantized at load by vLLM's and SGLang's --quantization fp8; fp4 and TensorRT-LLM read the
    checkpoint's own format."""
    flags, notes = [], []
    w, native = pick["weight_format"], pick.get("native_format")
    if w != native:
        if w == "fp8" and engine in ("vllm", "sglang"):
            flags.append("--quantization fp8")
        else:
            notes.append(f"# weights in {w}: serve a checkpoint quantized to {w} (the engine reads its format)")
    if pick["kv_format"] == "fp8" and engine != "trtllm":
        flags.append("--kv-cache-dtype " + ("fp8_e4m3" if engine == "sglang" else "fp8"))
    return flags, notes


def _per_rank(w: dict) -> int:
    # vLLM's data-parallel ranks and TensorRT-LLM's attention-DP ranks each schedule their own sequences
    return int(math.ceil(w["batch"] / w["dp_attention"]))


def _vllm(pick, w, context, repo):
    flags, notes = _formats(pick, "vllm")
    args = [f"vllm serve {repo}", f"--tensor-parallel-size {w['tp']}", f"--pipeline-parallel-size {w['pp']}"]
    if w["dp_attention"] > 1:
        args.append(f"--data-parallel-size {w['dp_attention']}")
    if w["ep"] > 1:   # experts spread over the tp x dp ranks
        args.append("--enable-expert-parallel")
    args += [f"--max-num-seqs {_per_rank(w)}", f"--gpu-memory-utilization {pick['memory_share']:g}",
             f"--max-model-len {context}", *flags]
    if w.get("token_budget"):
        args.append(f"--max-num-batched-tokens {int(w['token_budget'])}")
    if pick.get("draft_tokens"):
        spec = {"method": "mtp" if pick.get("draft") == "mtp" else "draft_model",
                "num_speculative_tokens": int(pick["draft_tokens"])}
        args.append(f"--speculative-config '{json.dumps(spec)}'")
    if w["role"] in ("prefill", "decode"):
        args.append("--kv-transfer-config '" + json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"})
                    + "'")
    return notes + [" \\\n  ".join(args)]


def _sglang(pick, w, context, repo):
    flags, notes = _formats(pick, "sglang")
    chips = w["tp"] * w["dp_attention"]
    args = [f"python -m sglang.launch_server --model-path {repo}", f"--tp-size {chips}"]
    if w["dp_attention"] > 1:   # attention tensor-parallel by tp inside each of dp groups
        args += [f"--dp-size {w['dp_attention']}", "--enable-dp-attention"]
    if w["ep"] > 1:
        args.append(f"--ep-size {w['ep']}")
    if w["pp"] > 1:
        args.append(f"--pp-size {w['pp']}")
    args += [f"--max-running-requests {int(w['batch'])}", f"--mem-fraction-static {pick['memory_share']:g}",
             f"--context-length {context}", *flags]
    if w.get("token_budget"):
        args.append(f"--chunked-prefill-size {int(w['token_budget'])}")
    if pick.get("draft_tokens"):
        k = int(pick["draft_tokens"])
        args += ["--speculative-algorithm EAGLE", f"--speculative-num-steps {k}", "--speculative-eagle-topk 1",
                 f"--speculative-num-draft-tokens {k + 1}"]
    if w["role"] in ("prefill", "decode"):
        args.append(f"--disaggregation-mode {w['role']}")
    return notes + [" \\\n  ".join(args)]


def _trtllm(pick, w, context, repo):
    _, notes = _formats(pick, "trtllm")
    chips = w["tp"] * w["dp_attention"]
    extra = {}
    if pick["kv_format"] == "fp8":
        extra["kv_cache_config"] = {"dtype": "fp8"}
    if w["dp_attention"] > 1:
        extra["enable_attention_dp"] = True
        if w["tp"] > 1:
            notes.append(f"# TensorRT-LLM's attention data parallelism runs attention at tp 1 on each of the "
                         f"{chips} ranks, not tp {w['tp']} x dp {w['dp_attention']}")
    if pick.get("draft_tokens"):
        extra["speculative_config"] = ({"decoding_type": "MTP", "num_nextn_predict_layers": int(pick["draft_tokens"])}
                                       if pick.get("draft") == "mtp" else
                                       {"decoding_type": "Eagle", "max_draft_len": int(pick["draft_tokens"])})
    if w["role"] in ("prefill", "decode"):
        extra["cache_transceiver_config"] = {"backend": "DEFAULT"}
    # --kv_cache_free_gpu_memory_fraction is a share of the memory left after the weights: the engine's
    # share of the whole HBM, less the weights' share, over what the weights leave
    share, wshare = pick["memory_share"], pick.get("weight_share", 0.0)
    kv_fraction = (share - wshare) / (1 - wshare)
    lines = []
    name = f"extra-{w['role']}.yaml"
    if extra:
        lines.append(f"cat > {name} <<'EOF'\n" + _yaml(extra) + "EOF")
    args = [f"trtllm-serve {repo}", "--backend pytorch", f"--tp_size {chips}", f"--pp_size {w['pp']}"]
    if w["ep"] > 1:
        args.append(f"--ep_size {w['ep']}")
    args += [f"--max_batch_size {_per_rank(w)}", f"--max_seq_len {context}",
             f"--kv_cache_free_gpu_memory_fraction {kv_fraction:.2f}"]
    if w.get("token_budget"):
        args.append(f"--max_num_tokens {int(w['token_budget'])}")
    if extra:
        args.append(f"--extra_llm_api_options {name}")
    return notes + lines + [" \\\n  ".join(args)]


def _yaml(d: dict, indent: str = "") -> str:
    """A small mapping as YAML (no dependency for two levels of plain values)."""
    out = ""
    for k, v in d.items():
        if isinstance(v, dict):
            out += f"{indent}{k}:\n" + _yaml(v, indent + "  ")
        else:
            out += f"{indent}{k}: {str(v).lower() if isinstance(v, bool) else v}\n"
    return out


_ONE = {"vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm}
