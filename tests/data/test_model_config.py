"""--model-config: a model read from a Hugging Face config.json, its parameters counted from its
dimensions by params_total_from_dims / params_active_from_dims, checked against published totals.

The config files in tests/configs/ are exact copies of the published config.json files (see
tests/configs/README.md for where each copy was read). The expected counts below are the
figures the model makers publish, each with its source; the tolerance says how far the count
from dimensions may be from a figure rounded to two or three digits (normalisation weights and
biases, under 0.1%, are not counted).
"""
import json
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _load(name):
    from chalkboard.evaluation.configmodel import add_config_model
    from chalkboard.data.loader import load
    data = load(ROOT)
    add_config_model(data, str(CONFIGS / name))
    return data, data.models[data.config_model]


def _value(data, model, name):
    from chalkboard.evaluation.evaluate import Scenario
    return Scenario(data, "h100-sxm", model.id).value(name).to("parameter").magnitude


# (config file, published total, tolerance, where it is published)
TOTALS = [
    ("llama-3.1-70b-instruct.json", 70e9, 0.01,
     "Llama 3 paper (arXiv:2407.21783), Table 3: 70B; the nominal size, so within 1%"),
    ("qwen2.5-7b-instruct.json", 7.61e9, 0.005,
     "Qwen2.5-7B-Instruct model card, Model Overview: 'Number of Parameters: 7.61B'"),
    ("qwen3-4b.json", 4.0e9, 0.0125,
     "Qwen3-4B model card, Model Overview: 'Number of Parameters: 4.0B' (two digits: +-1.25%)"),
    ("qwen3-30b-a3b.json", 30.5e9, 0.005,
     "Qwen3-30B-A3B model card: 'Number of Parameters: 30.5B in total and 3.3B activated'"),
    ("mixtral-8x7b-v0.1.json", 46.7e9, 0.005,
     "Mistral AI, 'Mixtral of experts' (2023-12-11): '46.7B total parameters but only uses 12.9B "
     "parameters per token'"),
    ("deepseek-v3.json", 671e9, 0.005,
     "DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: '671B total parameters with 37B "
     "activated for each token'"),
]


# (config file, published active, tolerance, where it is published); the published figures
# count the embedding and the output head as active, as params_active_from_dims does.
ACTIVE = [
    ("qwen3-30b-a3b.json", 3.3e9, 0.02, "Qwen3-30B-A3B model card: '3.3B activated' (two digits)"),
    ("mixtral-8x7b-v0.1.json", 12.9e9, 0.005, "Mistral AI, 'Mixtral of experts': '12.9B parameters per token'"),
    ("deepseek-v3.json", 37e9, 0.02, "DeepSeek-V3 report, abstract: '37B activated' (two digits)"),
    ("llama-3.1-70b-instruct.json", 70e9, 0.01, "dense: active = total (Llama 3 paper, Table 3)"),
]


@pytest.mark.parametrize("field,name,published,tol,source",
                         [("params_total", *t) for t in TOTALS] + [("params_active", *t) for t in ACTIVE],
                         ids=[f"total-{t[0]}" for t in TOTALS] + [f"active-{t[0]}" for t in ACTIVE])
def test_count_from_config_matches_published(field, name, published, tol, source):
    _, m = _load(name)
    count = m.values[field].quantity.to("parameter").magnitude
    assert count == pytest.approx(published, rel=tol), source


# Qwen's model cards also give the count without the embedding and the output head.
NON_EMBEDDING = [
    ("qwen2.5-7b-instruct.json", 6.53e9, 0.005, "Qwen2.5-7B-Instruct model card: 'Non-Embedding: 6.53B'"),
    ("qwen3-30b-a3b.json", 29.9e9, 0.005, "Qwen3-30B-A3B model card: 'Non-Embedding: 29.9B'"),
    ("qwen3-4b.json", 3.6e9, 0.014, "Qwen3-4B model card: 'Non-Embedding: 3.6B' (two digits)"),
]


@pytest.mark.parametrize("name,published,tol,source", NON_EMBEDDING, ids=[t[0] for t in NON_EMBEDDING])
def test_non_embedding_count_matches_published(name, published, tol, source):
    data, m = _load(name)
    rest = _value(data, m, "params_total_from_dims") - _value(data, m, "embedding_params")
    assert rest == pytest.approx(published, rel=tol), source


def test_tied_embeddings_count_one_matrix():
    # Qwen3-4B ties its output head to the input embedding (tie_word_embeddings true): one
    # 151,936 x 2,560 matrix. Counted twice the total would be 4.41e9, not the published 4.0B.
    data, m = _load("qwen3-4b.json")
    assert m.tags["embeddings"] == "tied"
    assert _value(data, m, "embedding_params") == 151936 * 2560


def test_mla_and_moe_fields_are_read():
    data, m = _load("deepseek-v3.json")
    v = {k: x.quantity.magnitude for k, x in m.values.items()}
    # DeepSeek-V3 report, sec. 4.2: 61 layers, the first three dense; MLA d_c = 512, d_h^R = 64,
    # query compression 1536; 1 shared and 256 routed experts, 8 activated, width 2048.
    assert (v["layers"], v["moe_layers"], v["kv_latent_dim"], v["kv_rope_dim"], v["q_latent_dim"]) == \
        (61, 58, 512, 64, 1536)
    assert (v["experts"], v["experts_per_token"], v["shared_experts"], v["d_expert"]) == (256, 8, 1, 2048)
    assert m.tags["attention"] == "mla"
    assert m.tags["weight_format"] == "fp8"  # quantization_config.quant_method fp8
    assert any("multi-token-prediction" in a for a in m.assumed)


def test_models_file_entry_counts_from_its_dimensions(cli):
    # llama-3-70b in models.yaml carries its config's d_ff, vocabulary and embeddings
    r = cli("eval", "params_total_from_dims", "--model", "llama-3-70b", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["value"] == pytest.approx(70e9, rel=0.01)  # Llama 3 paper, Table 3: 70B


# models.yaml entries whose config dimensions (d_ff, vocab_size, embeddings, mlp; q_latent_dim for
# MLA) are filled in: (model, published total, tolerance, published active, tolerance, where).
# A figure given to three digits is exact to half a unit in its last digit (141B: +-0.35%); one
# given to two digits to +-1.3..2.3%. Normalisation weights (under 0.1%) are not counted.
MODELS_FILE = [
    ("llama-3-405b", 405e9, 0.005, 405e9, 0.005,
     "Llama 3 paper (arXiv:2407.21783), Table 3: 405B, a dense model (active = total). The count "
     "is 405.85e9, 0.21% above: 405B is the nominal size, so within 0.5%"),
    ("mixtral-8x22b", 141e9, 0.004, 39e9, 0.013,
     "Mistral AI, 'Cheaper, Better, Faster, Stronger' (2024-04-17): 'uses only 39B active "
     "parameters out of 141B' (three and two digits)"),
    ("qwen3-235b-a22b", 235e9, 0.003, 22e9, 0.023,
     "Qwen3 Technical Report (arXiv:2505.09388), abstract: 'a total of 235 billion parameters and "
     "22 billion activated ones per token' (three and two digits)"),
    ("kimi-k2", 1.04e12, 0.015, 32.6e9, 0.01,
     "Kimi K2 report (arXiv:2507.20534), sec. 2.3 and Table 2: 1.04T total, 32.6B activated. The "
     "count from the released config is 1.026e12, 1.3% below 1.04T (more than the rounding of a "
     "three-digit figure; the config holds no multi-token-prediction layer, which the report's "
     "total may include), and 32.86e9 active, 0.8% above 32.6B"),
]


@pytest.mark.parametrize("model,total,tol_total,active,tol_active,source", MODELS_FILE,
                         ids=[m[0] for m in MODELS_FILE])
def test_models_file_counts_match_published(model, total, tol_total, active, tol_active, source):
    from chalkboard.data.loader import load
    data = load(ROOT)
    m = data.models[model]
    assert _value(data, m, "params_total_from_dims") == pytest.approx(total, rel=tol_total), source
    assert _value(data, m, "params_active_from_dims") == pytest.approx(active, rel=tol_active), source


def test_eval_with_model_config_names_its_sources_and_assumptions(cli):
    cfg = "tests/configs/llama-3.1-70b-instruct.json"
    r = cli("eval", "weight_fetch_time_min", "--hardware", "h100-sxm", "--model-config", cfg, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["model"] == "llama-3.1-70b-instruct"  # from the file name
    assert d["formats"]["weights"] == "bf16"
    sources = {i["name"]: i["source"] for i in d["inputs"]}
    assert sources["params_active"].startswith(f"{cfg}: derived from its dimensions")
    assert "weights bf16 (no quantization_config" in r.stderr
    r = cli("eval", "params_active_from_dims", "--model-config", cfg, "--json")
    sources = {i["name"]: i["source"] for i in json.loads(r.stdout)["inputs"]}
    assert sources["d_model"] == f"{cfg}: hidden_size"
    assert sources["d_ff"] == f"{cfg}: intermediate_size"
    assert sources["embedding_matrices"] == f"{cfg}: tie_word_embeddings false: untied"


def test_compare_adds_the_config_model(cli):
    r = cli("compare", "params_total", "--hardware", "h100-sxm", "--model", "deepseek-v3",
            "--model-config", "tests/configs/mixtral-8x7b-v0.1.json", "--csv")
    assert r.returncode == 0, r.stderr
    head, *rows = [line.split(",") for line in r.stdout.strip().splitlines()]
    assert [row[1] for row in rows] == ["deepseek-v3", "mixtral-8x7b-v0.1"]
    col = head.index("params_total [parameter]")
    assert float(rows[1][col]) == pytest.approx(46.7e9, rel=0.005)  # Mistral AI: 46.7B


BAD = [
    ("notjson.json", '{"model_type": "llama", "hidden_size": 4096', "not JSON"),
    ("list.json", "[1, 2]", "expected a JSON object"),
    ("gpt2.json", '{"model_type": "gpt2", "n_layer": 12}', "model_type: unknown architecture"),
    ("missing.json", None, "intermediate_size: missing"),
    ("text.json", '{"model_type": "llama", "num_hidden_layers": "80"}', "num_hidden_layers: expected a whole number"),
    ("awq.json", "QUANT", "quantization_config: quant_method"),
]


def test_bad_configs_are_one_line_naming_file_and_field(tmp_path):
    llama = json.loads((CONFIGS / "llama-3.1-70b-instruct.json").read_text())
    for name, text, message in BAD:
        if text is None:
            d = dict(llama)
            del d["intermediate_size"]
            text = json.dumps(d)
        elif text == "QUANT":
            text = json.dumps({**llama, "quantization_config": {"quant_method": "bitsandbytes"}})
        path = tmp_path / name
        path.write_text(text)
        r = run_cli("eval", "params_total", "--model-config", str(path))
        assert r.returncode == 2, (name, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
        assert lines[0].startswith(f"error: {path}: ") and message in lines[0], lines[0]
