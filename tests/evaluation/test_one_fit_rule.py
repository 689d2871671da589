"""One rule of "fits", everywhere: the serving engine's share of each chip's HBM
(engine_memory_share, 0.9, vLLM's default gpu_memory_utilization) decides it in eval, compare,
sweeps, plan and the library, and the KV cache a set-up needs counts the tokens its prompt caches.

The figures below are worked by hand from the published specifications, not read from the code:
- H100 SXM: 80 GB of HBM (NVIDIA H100 datasheet).
- Llama 3 70B (Llama 3 paper, Table 3): 70e9 parameters (the nominal size), 80 layers, 8 KV heads
  of 128: a bf16 KV of 2 x 80 x 8 x 128 x 2 = 327,680 bytes a token.
- DeepSeek-V3 (its report): 671e9 parameters in fp8, 671 GB of weights.
"""
import json

import pytest

KV_70B = 2 * 80 * 8 * 128 * 2          # bytes a token, bf16
H100_HBM = 80e9


def test_two_h100s_at_97_percent_do_not_fit(cli):
    """Llama 3 70B in fp8 on 2 H100s, 64 sequences of 4,096 tokens: (70 GB + 64 x 4,096 x 327,680 B)
    / 2 = 78 GB of each 80 GB, 97%: the physical HBM holds it, an engine's 90% does not. eval,
    compare, a sweep and the library say the same, and name the fill."""
    sets = ("--set", "weight_format=fp8", "--set", "chips=2", "--set", "batch=64", "--set", "context=4096")
    at = ("--hardware", "h100-sxm", "--model", "llama-3-70b", *sets)
    d = json.loads(cli("eval", "step_time", *at, "--json").stdout)
    fill = (70e9 + 64 * 4096 * KV_70B) / 2 / H100_HBM
    assert 0.96 < fill < 0.98
    assert d["feasible"] is False and f"({fill:.0%} of it)" in d["feasibility"]
    assert "the engine's 90% of the 80 GB/chip" in d["feasibility"]
    text = cli("eval", "step_time", *at).stdout
    assert "  fits       : NO" in text
    rows = json.loads(cli("compare", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-70b", *sets,
                          "--json").stdout)
    assert rows[0]["feasible"] is False and rows[0]["chips"] == 2
    csv = cli("eval", "step_time", *at[:4], *sets[:4], "--set", "context=4096", "--sweep", "batch=56,64",
              "--csv").stdout.splitlines()
    # 56 sequences: (70 GB + 56 x 4,096 x 327,680 B) / 2 = 72.6 GB, 91%: over 90% too; so is 64
    assert [ln.rsplit(",", 1)[1] for ln in csv[1:]] == ["false", "false"]
    # the engine's share is an input: at 1 the whole HBM is given, and 97% fits
    whole = json.loads(cli("eval", "step_time", *at, "--set", "engine_memory_share=1", "--json").stdout)
    assert whole["feasible"] is True


def test_the_library_and_plan_agree_with_eval_on_the_fit():
    import chalkboard as cb

    s = cb.scenario("h100-sxm", "llama-3-70b", weight_format="fp8", chips=2, batch=64, context=4096)
    assert s.evaluate("step_time").feasible is False
    s = cb.scenario("h100-sxm", "deepseek-v3", chips=8, batch=64, context=4096)
    r = s.evaluate("step_time")
    assert r.feasible is False and "weights" in r.feasibility   # 671 GB of weights on 8 x 80 GB x 0.9


def test_plan_never_picks_a_candidate_over_the_engines_share():
    import chalkboard as cb

    found = cb.plan("llama-3-70b", 30, context=4096, hardware=["h100-sxm"])
    rows = [found["best"], *found["frontier"]]
    assert all(r["hbm_fill"] <= 0.9 for r in rows if r)
    # every frontier row's eval says it fits: one rule
    for r in found["frontier"][:3]:
        sets = dict(x.split("=", 1) for x in r["command"].split("--set ")[1:] if x.strip())
        s = cb.scenario(r["hardware"], "llama-3-70b", **{k: v.strip() for k, v in sets.items()})
        assert s.evaluate("step_time").feasible is True


# -- the prompt's tokens in the KV cache -------------------------------------------------------
def test_a_long_prompt_is_not_fitted_in_a_short_default_context(cli):
    """8 H100s, Llama 3 70B, 64 prompts of 131,072 tokens: their KV cache alone is 64 x 131,072 x
    327,680 B = 2.75 TB against 8 x 80 GB = 640 GB. With no context given, the context is raised to
    the prompt and its answer (131,072 + 1,024), said in the output, and the set-up does not fit."""
    at = ("--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "chips=8", "--set", "batch=64",
          "--set", "pass_tokens=131072")
    r = cli("eval", "time_to_first_token", *at)
    assert r.returncode == 0, r.stderr
    assert "  fits       : NO" in r.stdout
    assert "context    : 132,096 tokens/sequence, raised to hold the prompt and its answer" in r.stdout
    d = json.loads(cli("eval", "time_to_first_token", *at, "--json").stdout)
    need = (70e9 * 2 + 64 * 132_096 * KV_70B) / 8
    assert f"{need / H100_HBM:.0%} of it" in d["feasibility"]
    assert d["context_raised"]["display"] == "132,096 tokens/sequence"


def test_a_prompt_longer_than_a_given_context_is_refused(cli):
    r = cli("eval", "time_to_first_token", "--hardware", "h100-sxm", "--model", "llama-3-70b",
            "--set", "pass_tokens=131072", "--set", "context=4096")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "longer than the context of 4,096 tokens" in r.stderr and "Traceback" not in r.stderr
    r = cli("plan", "--model", "llama-3-70b", "--prompt", "131072", "--context", "4096", "--min-tokens-per-user", "30")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "--prompt 131,072: longer than --context 4,096" in r.stderr


def test_plan_sizes_the_kv_cache_by_a_long_prompt(cli):
    """plan --prompt 131072 with no context: the context is the prompt and its answer, and the pick's
    KV cache holds it: batch x 132,096 x (its KV bytes a token) fits within 90% of its HBM."""
    r = cli("plan", "--model", "llama-3-70b", "--prompt", "131072", "--min-tokens-per-user", "30", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["context"] == 132_096 and d["context_raised"] is True
    b = d["best"]
    assert b["hbm_fill"] <= 0.9 and "--set context=132096" in b["command"]
    # the old answer, one chip at batch 117, would hold 117 x 132,096 tokens: far over any chip's HBM
    assert b["batch"] < 117
