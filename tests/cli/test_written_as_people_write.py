"""Inputs as people write them, and labels that say what the number used: a per-sequence count
with its unit ("4096 tokens"), a speed with its ("30 token/s"), formats in any case, thousands
separators refused by name; a count whole in the library as on the command line, and the
library's errors in its own words."""
import json

import pytest

AT = ("--hardware", "h100-sxm", "--model", "llama-3-70b")


def test_a_context_in_tokens_is_each_sequences(cli):
    bare = json.loads(cli("eval", "step_time", *AT, "--set", "context=4096", "--json").stdout)
    worded = json.loads(cli("eval", "step_time", *AT, "--set", "context=4096 tokens", "--json").stdout)
    assert worded["value"] == bare["value"]


def test_plan_takes_units_as_eval_does(cli):
    r = cli("plan", "--model", "llama-3-70b", "--hardware", "h100-sxm", "--formats", "FP8",
            "--min-tokens-per-user", "30 token/s", "--context", "4096 tokens", "--max-ttft", "500 ms", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["targets"]["min_tokens_per_user"] == 30 and d["context"] == 4096 and d["targets"]["max_ttft_s"] == 0.5
    assert d["best"]["weight_format"] == "fp8"
    bad = cli("plan", "--model", "llama-3-70b", "--min-tokens-per-user", "30 GB")
    assert bad.returncode == 2 and "wrong dimension" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["FP8", "Fp8", " fp8"])
def test_formats_in_any_case(cli, text):
    r = cli("eval", "step_time", *AT, "--set", f"format={text}", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["formats"]["weights"] == "fp8"


@pytest.mark.parametrize("sets,written", [("batch=1,024", "write 1024"), ("context=2,000,000 tokens",
                                                                         "write 2000000 tokens")])
def test_thousands_separators_are_refused_by_name(cli, sets, written):
    r = cli("eval", "step_time", *AT, "--set", sets)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "thousands separator" in r.stderr and written in r.stderr


def test_a_rate_given_whole_is_named_as_used(cli):
    r = cli("eval", "step_time", "--hardware", "custom", "--model", "llama-3-8b", "--set", "hbm_bandwidth=3 TB/s",
            "--set", "peak_flops=1000 TFLOP/s", "--set", "hbm_capacity=80 GB")
    assert r.returncode == 0, r.stderr
    assert "compute at the given peak_flops" in r.stdout and "compute none" not in r.stdout


def test_a_quantity_is_listed_in_the_unit_eval_prints(cli):
    listed = {ln.split()[0]: ln.split()[1] for ln in cli("list", "quantities").stdout.splitlines()
              if ln.startswith("  ") and len(ln.split()) > 2}
    assert listed["cost_per_token_spec"] == listed["cost_per_token"] == "USD/Mtoken"
    r = cli("eval", "cost_per_token", *AT)
    assert " USD/Mtoken " in r.stdout.splitlines()[0]


def test_flop_per_token_reads_in_a_prefix_that_fits():
    # GPT-3's forward pass: 2 x 175e9 = 350 GFLOP a token (Kaplan et al. 2020, 2N per token)
    from chalkboard.typeset.fmt import fmt
    from units import Quantity

    assert fmt(Quantity(350e9, "FLOP/token")) == "350 GFLOP/token"
    assert fmt(Quantity(2.62e6, "FLOP/token")) == "2.62 MFLOP/token"


def test_the_library_refuses_what_the_command_refuses_in_its_own_words():
    import chalkboard as cb
    from chalkboard.errors import InputError

    with pytest.raises(InputError, match=r"^pipeline_stages=2.5: must be a whole number"):
        cb.scenario("h100-sxm", "llama-3-70b", pipeline_stages=2.5)
    with pytest.raises(InputError) as e:
        cb.scenario("h100-sxm", "llama-3-70b", pass_tokens=131072, context=4096)
    assert "--set" not in str(e.value) and "raise context to at least 131,072" in str(e.value)
