"""A model from a Hugging Face config.json (--model-config), evaluated like a models.yaml entry.

The config's fields are mapped to the model inputs (layers, widths, heads, experts, MLA
widths), each value carried with its source ``<file>: <field>``. Its total and active
parameters are not in the config: they are derived from those dimensions by the declared
``params_total_from_dims`` and ``params_active_from_dims``. What the reading assumed (the
weight format, a default the file leaves out, the model id) is kept in ``Entry.assumed``.

Families read: Llama, Mistral, Qwen2, Qwen3 (dense, MHA or GQA); Mixtral, Qwen2-MoE, Qwen3-MoE;
DeepSeek-V2/V3 and Kimi K2 (MLA, shared experts, leading dense layers). Anything else is an
error naming the file and its model_type.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from units import parse

from .loader import ID_RE, DataError, Entry, Source, Value, read_text, too_large
from .safety import escaped

DENSE, MIXTRAL, QWEN_MOE, DEEPSEEK = "dense", "mixtral", "qwen-moe", "deepseek"
FAMILIES = {"llama": DENSE, "mistral": DENSE, "qwen2": DENSE, "qwen3": DENSE,
            "mixtral": MIXTRAL, "qwen2_moe": QWEN_MOE, "qwen3_moe": QWEN_MOE,
            "deepseek_v2": DEEPSEEK, "deepseek_v3": DEEPSEEK, "kimi_k2": DEEPSEEK}
ARCHITECTURES = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
                 "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
                 "MixtralForCausalLM": "mixtral", "Qwen2MoeForCausalLM": "qwen2_moe",
                 "Qwen3MoeForCausalLM": "qwen3_moe", "DeepseekV2ForCausalLM": "deepseek_v2",
                 "DeepseekV3ForCausalLM": "deepseek_v3"}
UNDATED = "undated (read from the file)"
COUNT_MOST = 2**53   # the largest whole number a float holds exactly
# the model input each count of a config is read as (the largest value it declares is checked as it is read)
AS_INPUT = {"num_hidden_layers": "layers", "hidden_size": "d_model", "vocab_size": "vocab_size",
            "intermediate_size": "d_ff", "num_attention_heads": "n_heads", "num_key_value_heads": "n_kv_heads",
            "head_dim": "d_head", "q_lora_rank": "q_latent_dim", "kv_lora_rank": "kv_latent_dim",
            "qk_rope_head_dim": "kv_rope_dim", "qk_nope_head_dim": "d_head", "v_head_dim": "d_head",
            "num_local_experts": "experts", "num_experts": "experts", "n_routed_experts": "experts",
            "moe_intermediate_size": "d_expert", "shared_expert_intermediate_size": "d_ff",
            "num_experts_per_tok": "experts_per_token", "n_shared_experts": "shared_experts",
            "decoder_sparse_step": "layers", "first_k_dense_replace": "layers", "moe_layer_freq": "layers"}


class _Config:
    """The parsed file, and the entry its fields fill."""

    def __init__(self, label: str, doc: dict, entry: Entry):
        self.label, self.doc, self.entry = label, doc, entry

    def fail(self, fld: str | None, message: str):
        raise DataError(self.label, None, fld, message)

    def count(self, fld: str, default=None, allow_zero: bool = False) -> int:
        """A whole-number field; ``default`` (with an assumption) when the file leaves it out."""
        v = self.doc.get(fld)
        if v is None:
            if default is None:
                self.fail(fld, f"missing (a {self.doc.get('model_type')} config needs it)")
            self.entry.assumed.append(f"{fld} not given: {default[1]}")
            return default[0]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v):
            self.fail(fld, f"expected a whole number, got {json.dumps(v)[:40]}")
        if v < 0 or (v == 0 and not allow_zero):
            self.fail(fld, f"must be {'zero or more' if allow_zero else 'positive'} (got {v:g})")
        big = too_large(AS_INPUT.get(fld, ""), v)   # the bounds the models file is held to (loader.too_large)
        if big or v > COUNT_MOST:
            self.fail(fld, f"{v:.3g}: {big or f'at most {COUNT_MOST:,}'}")
        return int(v)

    def put(self, name: str, value: int, fields: str, note: str | None = None) -> None:
        big = too_large(name, value)   # the bounds the models file is held to
        if big:
            self.fail(fields, f"{value:,} as {name}: {big}")
        src = Source("config", f"{self.label}: {fields}", "", UNDATED)
        self.entry.values[name] = Value(parse(str(value)), str(value), src, None, note)

    def tag(self, name: str, value: str, where: str) -> None:
        self.entry.tags[name] = value
        self.entry.tag_sources[name] = f"{self.label}: {where}"


def _family(c: _Config) -> str:
    mt = c.doc.get("model_type")
    if isinstance(mt, str) and mt in FAMILIES:
        return mt
    arch = c.doc.get("architectures")
    for a in arch if isinstance(arch, list) else []:
        if a in ARCHITECTURES:
            c.entry.assumed.append(f"model_type {mt!r} not known: read as {ARCHITECTURES[a]} "
                                   f"(architectures {a})")
            return ARCHITECTURES[a]
    shown = f"model_type {json.dumps(mt)[:40]}" if mt is not None else "no model_type"
    c.fail("model_type", f"unknown architecture ({shown}); known: {', '.join(sorted(FAMILIES))}")


def _model_id(path: Path, doc: dict, taken) -> tuple[str, str]:
    """An id for the model and where it came from: the file name, else _name_or_path, else the folder."""
    name = doc.get("_name_or_path") if isinstance(doc.get("_name_or_path"), str) else None
    candidates = []
    if path.stem.lower() != "config":
        candidates.append((path.stem, "the file name"))
    if name:
        candidates.append((name.rstrip("/").split("/")[-1], "_name_or_path"))
    candidates.append((path.resolve().parent.name, "the folder name"))
    for raw, how in candidates:
        mid = re.sub(r"[^a-z0-9.]+", "-", raw.lower()).strip("-.")
        mid = re.sub(r"\.{2,}", ".", mid)
        if mid and ID_RE.match(mid):
            if mid in taken:
                return f"{mid}-config", f"{how} ({mid!r} is in the models file, so '-config' is added)"
            return mid, how
    return "model-config", "a fixed name (neither the file nor the config gives a usable one)"


def _weight_format(c: _Config) -> None:
    q = c.doc.get("quantization_config")
    if isinstance(q, dict):
        method, bits = q.get("quant_method"), q.get("bits")
        if method == "fp8":
            c.tag("weight_format", "fp8", "quantization_config.quant_method fp8")
            c.entry.assumed.append("weights fp8 (quantization_config.quant_method fp8)")
            return
        if method in ("awq", "gptq") and bits in (4, 8):
            c.tag("weight_format", f"int{bits}", f"quantization_config ({method}, bits {bits})")
            c.entry.assumed.append(f"weights int{bits} (quantization_config: {method}, bits {bits})")
            return
        c.fail("quantization_config", f"quant_method {json.dumps(method)[:30]} is not read "
                                      "(known: fp8; awq or gptq with 4 or 8 bits)")
    dtype = c.doc.get("torch_dtype") or c.doc.get("dtype")
    dtype = str(dtype)[:40] if dtype else None
    c.tag("weight_format", "bf16", "no quantization_config")
    c.entry.assumed.append(f"weights bf16 (no quantization_config; torch_dtype {dtype or 'not given'})")


def _attention_gqa(c: _Config) -> None:
    heads = c.count("num_attention_heads")
    kv = c.count("num_key_value_heads", default=(heads, "as many KV heads as query heads"))
    if kv > heads:
        c.fail("num_key_value_heads", f"{kv} exceeds num_attention_heads ({heads})")
    if heads % kv:
        c.fail("num_key_value_heads", f"{kv} does not divide num_attention_heads ({heads}): each KV head "
                                      "serves a whole group of query heads")
    d_model = c.entry.values["d_model"].quantity.magnitude
    if c.doc.get("head_dim") is not None:
        c.put("d_head", c.count("head_dim"), "head_dim")
    else:
        if d_model % heads:
            c.fail("head_dim", f"missing, and hidden_size {d_model:g} is not a multiple of "
                               f"num_attention_heads {heads}")
        c.put("d_head", int(d_model) // heads, "hidden_size / num_attention_heads")
    c.put("n_heads", heads, "num_attention_heads")
    c.put("n_kv_heads", kv, "num_key_value_heads" if "num_key_value_heads" in c.doc else "num_attention_heads")
    c.tag("attention", "gqa" if kv < heads else "mha",
          f"num_key_value_heads {kv} of num_attention_heads {heads}")


def _attention_mla(c: _Config) -> None:
    heads = c.count("num_attention_heads")
    c.put("n_heads", heads, "num_attention_heads")
    c.put("n_kv_heads", c.count("num_key_value_heads", default=(heads, "as many as the query heads")),
          "num_key_value_heads")
    if c.doc.get("q_lora_rank") is None:
        c.fail("q_lora_rank", "missing or null: MLA without query compression is not counted here")
    c.put("q_latent_dim", c.count("q_lora_rank"), "q_lora_rank")
    c.put("kv_latent_dim", c.count("kv_lora_rank"), "kv_lora_rank")
    c.put("kv_rope_dim", c.count("qk_rope_head_dim"), "qk_rope_head_dim")
    nope, v = c.count("qk_nope_head_dim"), c.count("v_head_dim")
    if nope != v:
        c.fail("v_head_dim", f"{v} differs from qk_nope_head_dim {nope}: the MLA count takes one head width")
    c.put("d_head", nope, "qk_nope_head_dim (= v_head_dim)")
    c.tag("attention", "mla", "model_type (multi-head latent attention)")
    mtp = c.doc.get("num_nextn_predict_layers")
    if mtp:
        c.entry.assumed.append(f"the {json.dumps(mtp)[:40]} multi-token-prediction layer(s) (num_nextn_predict_layers) "
                               "are not counted, as the published totals leave them out")


def _experts(c: _Config, family: str, layers: int) -> None:
    if family == MIXTRAL:
        c.put("experts", c.count("num_local_experts"), "num_local_experts")
        c.put("d_expert", c.count("intermediate_size"), "intermediate_size")
        c.put("moe_layers", layers, "num_hidden_layers (every Mixtral layer is MoE)")
        c.put("shared_experts", 0, "model_type mixtral (no shared experts)")
    elif family == QWEN_MOE:
        c.put("experts", c.count("num_experts"), "num_experts")
        width = c.count("moe_intermediate_size")
        c.put("d_expert", width, "moe_intermediate_size")
        step = c.count("decoder_sparse_step", default=(1, "every layer is MoE (decoder_sparse_step 1)"))
        dense = c.doc.get("mlp_only_layers") or []
        if not isinstance(dense, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in dense):
            c.fail("mlp_only_layers", "expected a list of layer numbers")
        # layers step, 2·step, ... are MoE, less those listed dense (counted, never walked one by one)
        moe = layers // step - sum(1 for i in set(dense) if 0 <= i < layers and (i + 1) % step == 0)
        c.put("moe_layers", moe, "num_hidden_layers, decoder_sparse_step, mlp_only_layers")
        if c.doc.get("model_type") == "qwen3_moe" or "shared_expert_intermediate_size" not in c.doc:
            c.put("shared_experts", 0, "model_type (no shared_expert_intermediate_size: no shared expert)")
            return _experts_per_token(c)
        shared = c.count("shared_expert_intermediate_size", allow_zero=True)
        if shared % width:
            c.fail("shared_expert_intermediate_size", f"{shared} is not a whole number of experts of "
                                                      f"moe_intermediate_size {width}")
        c.put("shared_experts", shared // width, "shared_expert_intermediate_size / moe_intermediate_size")
    else:
        c.put("experts", c.count("n_routed_experts"), "n_routed_experts")
        c.put("d_expert", c.count("moe_intermediate_size"), "moe_intermediate_size")
        first = c.count("first_k_dense_replace", default=(0, "no leading dense layers"), allow_zero=True)
        freq = c.count("moe_layer_freq", default=(1, "every layer after the dense ones is MoE"))
        # the layers from `first` on whose number is a multiple of freq, counted without walking them
        moe = max(0, -(-layers // freq) - -(-first // freq))
        c.put("moe_layers", moe, "num_hidden_layers, first_k_dense_replace, moe_layer_freq")
        c.put("shared_experts", c.count("n_shared_experts", default=(0, "no shared experts"), allow_zero=True),
              "n_shared_experts")
    _experts_per_token(c)


def _experts_per_token(c: _Config) -> None:
    k = c.count("num_experts_per_tok")
    if k > c.entry.values["experts"].quantity.magnitude:
        c.fail("num_experts_per_tok", f"{k} exceeds the number of experts")
    c.put("experts_per_token", k, "num_experts_per_tok")


def read_config(path: Path, label: str, taken=()) -> Entry:
    """The model entry a config.json describes, without its parameter counts (see add_config_model)."""
    text = read_text(path, label)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(label, None, None, f"not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except ValueError as e:  # a number too long to read
        raise DataError(label, None, None, f"not readable JSON: {str(e).splitlines()[0][:80]}") from None
    except RecursionError:
        raise DataError(label, None, None, "not JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise DataError(label, None, None, "expected a JSON object (a Hugging Face config.json)")
    mid, how = _model_id(path, doc, taken)
    name = doc.get("_name_or_path") if isinstance(doc.get("_name_or_path"), str) and doc["_name_or_path"] else mid
    name = escaped(name)   # a control or bidi character is shown as an escape, never sent to a terminal, page or figure
    entry = Entry(mid, name, "model", file=label)
    entry.assumed.append(f"model id {mid!r} from {how}")
    c = _Config(label, doc, entry)
    family = FAMILIES[_family(c)]
    layers = c.count("num_hidden_layers")
    c.put("layers", layers, "num_hidden_layers")
    c.put("d_model", c.count("hidden_size"), "hidden_size")
    c.put("vocab_size", c.count("vocab_size"), "vocab_size")
    c.put("d_ff", c.count("intermediate_size"), "intermediate_size")
    tied = doc.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        c.fail("tie_word_embeddings", f"expected true or false, got {json.dumps(tied)[:40]}")
    if "tie_word_embeddings" not in doc:
        entry.assumed.append("tie_word_embeddings not given: untied (the architecture's default)")
    c.tag("embeddings", "tied" if tied else "untied", f"tie_word_embeddings {json.dumps(tied)}")
    c.tag("mlp", "gated", f"model_type {doc.get('model_type')} (a SwiGLU MLP)")
    _attention_mla(c) if family == DEEPSEEK else _attention_gqa(c)
    if family != DENSE:
        _experts(c, family, layers)
    _weight_format(c)
    c.tag("kv_format", "bf16", "no KV-cache format in a config.json")
    entry.assumed.append("KV cache bf16")
    entry.assumed = [escaped(a) for a in entry.assumed]   # they quote the file's own text
    return entry
