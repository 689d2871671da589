"""Bad input, hostile data and a hostile environment: a table of cases, each one line, exit 2.

Each case writes a bad file (or picks a bad argument or environment), runs build.py as a user
would and asserts: exit status 2, exactly one error line on stderr (besides the build's progress
lines), no traceback, and the previous output in the --out folder byte for byte intact with no
temp entry left beside it. Data errors are run through a build (they stop at the load stage, so
they are cheap); --set and claims errors through `eval` and `audit`. One good build is reused.
"""
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys

import pytest

import warm
from conftest import ROOT

PROGRESS = re.compile(r"^(chalkboard build|\s+\w+\s+\d+\.\d\d s(\s+\(.*\))?)$")   # a stage, what it did in brackets
HW = (ROOT / "hardware.yaml").read_text(encoding="utf-8")
MODELS = (ROOT / "models.yaml").read_text(encoding="utf-8")
CLAIMS = (ROOT / "claims.yaml").read_text(encoding="utf-8")
H100 = "  h100-sxm:\n"
H100_NAME = '    name: "NVIDIA H100 SXM5 80 GB"\n'
BW = 'hbm_bandwidth: {value: "3.35 TB/s"'


def run(args, env=None, timeout=180, preexec_fn=None):
    return warm.run(ROOT / "build.py", args, cwd=ROOT, env={**os.environ, **(env or {})}, timeout=timeout,
                    preexec_fn=preexec_fn)


def tree(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(out):
    return [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp-")]


@pytest.fixture(scope="module")
def good(report_build):
    return report_build[0], tree(report_build[0])


@pytest.fixture
def previous(good, tmp_path):
    """A copy of the good build, the folder each case must leave untouched."""
    out = tmp_path / "prev" / "out"
    shutil.copytree(good[0], out)
    return out


def one_line_error(r, *must):
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not PROGRESS.match(ln)]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: "), lines[0]
    for m in must:
        assert m in lines[0], (m, lines[0])
    return lines[0]


# -- the table ------------------------------------------------------------------------------------
def _hw(edit):
    return ("hardware.yaml", edit(HW))


def _models(edit):
    return ("models.yaml", edit(MODELS))


def _claims(edit):
    return ("claims.yaml", edit(CLAIMS))


def _h100(field_line):
    """hardware.yaml with one line added to the h100-sxm entry."""
    return _hw(lambda s: s.replace(H100 + H100_NAME, H100 + H100_NAME + field_line, 1))


def _h100_name(yaml_value):
    return _hw(lambda s: s.replace(H100_NAME, f"    name: {yaml_value}\n", 1))


def _bw(text):
    return _hw(lambda s: s.replace(BW, f'hbm_bandwidth: {{value: "{text}"', 1))


def _ds(field, text):
    return _models(lambda s: re.sub(rf"(  deepseek-v3:\n(?:    .*\n)*?    {field}: {{value: )\"[^\"]*\"",
                                    rf'\1"{text}"', s, count=1))


def _llama(field, text):
    """models.yaml with one field of llama-3-70b (64 query heads, 8 KV heads, 80 layers) replaced."""
    return _models(lambda s: re.sub(rf"(  llama-3-70b:\n(?:    .*\n)*?    {field}: {{value: )\"[^\"]*\"",
                                    rf'\1"{text}"', s, count=1))


LLAMA_CONFIG = json.loads((ROOT / "tests" / "configs" / "llama-3.1-70b-instruct.json").read_text(encoding="utf-8"))
DEEPSEEK_CONFIG = json.loads((ROOT / "tests" / "configs" / "deepseek-v3.json").read_text(encoding="utf-8"))


def _config(base, **fields):
    """A Hugging Face config.json: ``base`` with ``fields`` replaced."""
    return ("config.json", json.dumps({**base, **fields}))


LONG_NAME = "x" * 10_000
BOMB = "".join(f"    x{i}: &x{i} [" + ", ".join([f"*x{i - 1}" if i else '"lol"'] * 10) + "]\n" for i in range(9))
NEST = "[" * 3000 + "]" * 3000

# (id, file to write or None, command arguments, environment, what the error line must name)
# "{F}" in the arguments is the written file, "{OUT}" the --out folder holding the previous build.
CASES = [
    # encoding, size, structure of the data files
    ("hw-not-utf8", ("hardware.yaml", HW.encode("utf-8").replace(b"Hopper", b"Hop\xffper", 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("hardware.yaml", "not UTF-8", "line")),
    ("models-not-utf8", ("models.yaml", MODELS.encode("utf-8").replace(b"DeepSeek-V3", b"Deep\xc3Seek", 1)),
     ["build", "--models-file", "{F}", "--out", "{OUT}"], None, ("models.yaml", "not UTF-8")),
    ("claims-not-utf8", ("claims.yaml", CLAIMS.encode("utf-8").replace(b"Reiner", b"Rei\xfe\xffner", 1)),
     ["audit", "--claims-file", "{F}"], None, ("claims.yaml", "not UTF-8")),
    ("claims-not-utf8-build", ("claims.yaml", b"claims:\n- id: \xff\n"),
     ["build", "--claims-file", "{F}", "--out", "{OUT}"], None, ("claims.yaml", "not UTF-8")),
    ("claims-a-folder", "DIR", ["audit", "--claims-file", "{F}"], None, ("is a folder",)),
    ("claims-a-folder-build", "DIR", ["build", "--claims-file", "{F}", "--out", "{OUT}"], None, ("is a folder",)),
    ("hw-a-folder", "DIR", ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("is a folder",)),
    ("hw-dev-zero", None, ["build", "--hardware-file", "/dev/zero", "--out", "{OUT}"], None,
     ("/dev/zero", "not a regular file")),
    ("hw-missing", None, ["build", "--hardware-file", "no-such.yaml", "--out", "{OUT}"], None,
     ("no-such.yaml", "not found")),
    ("hw-too-large", ("hardware.yaml", HW + "#" * (17 * 2**20) + "\n"),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("too large",)),
    ("hw-name-a-list", _h100_name("[NVIDIA, H100]"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "name", "expected text, got a list")),
    ("hw-name-a-mapping", _h100_name("{a: 1}"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "name", "got a mapping")),
    ("hw-source-a-list", _h100("    source: [a, b]\n"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("h100-sxm", "source")),
    ("hw-field-source-a-mapping", _hw(lambda s: s.replace('source: hpctech-h100-datasheet, note: "datasheet: 3,350',
                                                          'source: {x: 1}, note: "datasheet: 3,350', 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("h100-sxm", "hbm_bandwidth", "source id")),
    ("hw-value-a-list", _hw(lambda s: s.replace(BW, "hbm_bandwidth: {value: [3.35, TB/s]", 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("h100-sxm", "hbm_bandwidth", "quoted string")),
    ("hw-list-as-key", _h100("    ? [a, b]\n    : 1\n"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("hardware.yaml", "mapping key", "line")),
    ("hw-mapping-as-key", _h100("    {a: 1}: 2\n"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("hardware.yaml", "mapping key")),
    ("hw-source-unknown-key", _hw(lambda s: s.replace("  scaling-book-gpus:\n", "  scaling-book-gpus:\n    sauce: x\n", 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("hardware.yaml", "sources.scaling-book-gpus", "sauce")),
    ("hw-source-secondary-empty", _hw(lambda s: s.replace("  scaling-book-gpus:\n", "  scaling-book-gpus:\n    secondary: \"\"\n", 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("hardware.yaml", "sources.scaling-book-gpus", "secondary")),
    ("hw-deep-nesting", _h100(f"    note: {NEST}\n"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("hardware.yaml", "nested")),
    ("hw-alias-bomb", _h100("    bomb:\n" + BOMB.replace("    x", "      x")),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("hardware.yaml", "alias")),
    ("hw-alias-bomb-in-name", _hw(lambda s: s.replace("hardware:\n", "bomb:\n" + BOMB.replace("    x", "  x")
                                                      + "hardware:\n", 1).replace(H100_NAME, "    name: *x8\n", 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("hardware.yaml", "alias")),
    ("hw-recursive-alias", _h100("    note: &r [*r]\n"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("hardware.yaml", "recursive")),
    ("hw-5000-digit-int", _h100("    note: " + "9" * 5000 + "\n"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("hardware.yaml", "cannot read this value")),
    ("hw-bad-date", _h100("    note: 2024-13-45\n"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("hardware.yaml", "month")),
    ("hw-python-tag", _h100("    note: !!python/object/apply:os.system [echo hi]\n"),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("hardware.yaml", "constructor")),
    ("hw-duplicate-key", _h100('    name: "again"\n'), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("duplicate key 'name'",)),
    # numbers
    ("hw-exponent-tower", _bw("9**9**9"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "hbm_bandwidth", "not a power")),
    ("hw-power-of-two", _bw("2**40 B/s"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "hbm_bandwidth")),
    ("hw-unit-exponent-tower", _bw("3 TB/s**9**9"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "hbm_bandwidth", "exponent")),
    ("hw-overflow", _bw("1e290 TB/s"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "hbm_bandwidth", "out of range")),
    ("hw-underflow", _bw("1e-320 TB/s"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "hbm_bandwidth", "out of range")),
    ("hw-infinite", _bw("1e999 TB/s"), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "hbm_bandwidth", "finite")),
    ("hw-half-chip-domain", _hw(lambda s: s.replace('scaleup_domain: {value: "8 chip"', 'scaleup_domain: {value: "0.5 chip"', 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("scaleup_domain", "0.5 chip", "whole number")),
    ("models-fractional-experts", _ds("experts_per_token", "2.5"), ["build", "--models-file", "{F}", "--out", "{OUT}"],
     None, ("deepseek-v3", "experts_per_token", "whole number")),
    ("models-fractional-layers", _ds("layers", "32.7"), ["build", "--models-file", "{F}", "--out", "{OUT}"],
     None, ("deepseek-v3", "layers", "whole number")),
    ("models-moe-above-layers", _ds("moe_layers", "70"), ["build", "--models-file", "{F}", "--out", "{OUT}"],
     None, ("deepseek-v3", "moe_layers", "exceeds layers")),
    ("models-kv-heads-above-heads", _ds("n_kv_heads", "256"), ["build", "--models-file", "{F}", "--out", "{OUT}"],
     None, ("deepseek-v3", "n_kv_heads", "exceeds n_heads")),
    ("set-exponent-tower", None, ["eval", "step_time", "--set", "batch=9**9**9"], None, ("batch", "not a power")),
    ("set-unit-tower", None, ["eval", "step_time", "--set", "hbm_bandwidth=1 TB/s**99**99"], None,
     ("hbm_bandwidth", "exponent")),
    ("set-overflow", None, ["eval", "step_time", "--set", "hbm_bandwidth=1e290 TB/s"], None,
     ("hbm_bandwidth", "out of range")),
    ("set-underflow", None, ["eval", "step_time", "--set", "hbm_bandwidth=1e-320 TB/s"], None,
     ("hbm_bandwidth", "out of range")),
    ("set-half-batch", None, ["eval", "step_time", "--set", "batch=0.5"], None, ("batch", "whole number")),
    ("set-half-rack", None, ["eval", "offrack_fraction", "--set", "racks=0.5"], None, ("racks", "whole number")),
    ("set-half-chip", None, ["eval", "step_time", "--set", "chips=0.5"], None, ("chips", "whole number")),
    ("set-half-domain", None, ["eval", "step_time", "--set", "scaleup_domain=0.5"], None,
     ("scaleup_domain", "whole number")),
    ("set-long-value", None, ["eval", "step_time", "--set", "batch=" + "1" * 300], None, ("batch", "too long")),
    ("build-set-half-batch", None, ["build", "--set", "batch=0.5", "--out", "{OUT}", "--no-pdf"], None,
     ("batch", "whole number")),
    ("claims-set-exponent-tower", _claims(lambda s: s.replace("set: {batch: 2000 sequence}", "set: {batch: '9**9**9'}", 1)),
     ["audit", "--claims-file", "{F}"], None, ("claims.yaml", "batch")),
    ("claims-alias-bomb", ("claims.yaml", "bomb:\n" + BOMB.replace("    x", "  x") + CLAIMS),
     ["audit", "--claims-file", "{F}"], None, ("claims.yaml", "alias")),
    ("claims-deep-nesting", ("claims.yaml", f"x: {NEST}\n" + CLAIMS), ["audit", "--claims-file", "{F}"], None,
     ("claims.yaml", "nested")),
    # text that would attack the reader
    ("url-javascript", _hw(lambda s: s.replace('url: "https://jax-ml.github.io/scaling-book/gpus/"',
                                               'url: "javascript:alert(document.domain)"', 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("scaling-book-gpus", "url", "http")),
    ("url-data", _hw(lambda s: s.replace('url: "https://jax-ml.github.io/scaling-book/gpus/"',
                                         'url: "data:text/html,<script>alert(1)</script>"', 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("scaling-book-gpus", "url", "http")),
    ("name-nul", _h100_name('"H100\\0"'), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "name", "U+0000")),
    ("name-escape", _h100_name('"H100 \\e[31mred"'), ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None,
     ("h100-sxm", "name", "U+001B")),
    ("name-bidi-override", _h100_name('"H100 \\u202Eevil"'), ["build", "--hardware-file", "{F}", "--out", "{OUT}"],
     None, ("h100-sxm", "name", "U+202E")),
    ("note-bidi-override", _h100('    note: "HBM3 \u202e"\n'),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("h100-sxm", "U+202E")),
    # output folder and environment
    ("out-a-file", None, ["build", "--out", "hardware.yaml"], None, ("hardware.yaml", "not a folder")),
    ("out-under-a-file", None, ["build", "--out", "hardware.yaml/sub"], None, ("is a file, not a folder",)),
    ("out-dev-null", None, ["build", "--out", "/dev/null"], None, ("/dev/null", "not a folder")),
    ("out-dangling-link", "LINK", ["build", "--out", "{F}"], None, ("does not exist",)),
    ("out-foreign-folder", None, ["build", "--out", "."], None, ("did not write",)),
    ("source-date-epoch", None, ["build", "--out", "{OUT}"], {"SOURCE_DATE_EPOCH": "yesterday"},
     ("SOURCE_DATE_EPOCH",)),
    # limits: each count's largest value (the most its input declares in derivations/), checked before any work
    ("set-chips-10-12", None, ["eval", "step_time", "--set", "chips=1000000000000"], None,
     ("chips", "at most 1,000,000,000")),
    ("set-tp-past-the-heads", None, ["eval", "step_time", "--set", "tp=999999999989"], None, ("tp",)),
    ("set-tp-not-dividing", None, ["eval", "step_time", "--set", "tp=3"], None, ("tp=3", "does not divide n_heads")),
    ("set-tp-above-the-heads", None, ["eval", "step_time", "--set", "tp=256"], None, ("tp=256", "does not divide n_heads")),
    ("set-batch-10-12", None, ["eval", "step_time", "--set", "batch=1e12"], None, ("batch", "at most")),
    ("set-layers-10-12", None, ["eval", "step_time", "--set", "layers=1e12"], None, ("layers", "at most 65,536")),
    ("set-kv-heads-not-dividing", None, ["eval", "kv_bytes_per_token", "--model", "llama-3-70b",
                                         "--set", "n_kv_heads=7"], None, ("n_kv_heads", "does not divide n_heads")),
    ("sweep-10-9-points", None, ["eval", "step_time", "--sweep", "batch=1:1000000000"], None,
     ("batch=1:1000000000", "10,000,000 points")),
    ("sweep-10-12-linspace", None, ["eval", "step_time", "--sweep", "batch=1:64:1000000000000"], None,
     ("10,000,000 points",)),
    ("sweep-10-9-list-crossed", None, ["eval", "step_time", "--sweep", "batch=1:1000", "--sweep", "context=1:100000",
                                       "--sweep", "hbm_bandwidth=1e12,2e12,3e12"], None, ("300,000,000 points",)),
    ("sweep-past-the-limit", None, ["eval", "step_time", "--sweep", "tp=1:10000000000:log"], None,
     ("tp", "at most 1,000,000,000")),
    ("sweep-infinite-end", None, ["eval", "step_time", "--sweep", "batch=1:inf"], None, ("finite",)),
    ("models-layers-10-6", _llama("layers", "1000000"), ["check", "--models-file", "{F}"], None,
     ("llama-3-70b", "layers", "at most 65,536")),
    ("models-kv-heads-not-dividing", _llama("n_kv_heads", "7"), ["check", "--models-file", "{F}"], None,
     ("llama-3-70b", "n_kv_heads", "does not divide n_heads")),
    ("models-kv-heads-not-dividing-build", _llama("n_kv_heads", "7"),
     ["build", "--models-file", "{F}", "--out", "{OUT}"], None, ("llama-3-70b", "n_kv_heads")),
    ("hw-domain-10-12", _hw(lambda s: s.replace('scaleup_domain: {value: "8 chip"', 'scaleup_domain: {value: "1e12 chip"', 1)),
     ["check", "--hardware-file", "{F}"], None, ("scaleup_domain", "at most 1,048,576")),
    # a year on the figures' time axis: 1e29 once collapsed a figure (matplotlib's raw warning on stderr)
    ("hw-launch-year-1e29", _hw(lambda s: s.replace('launch_year: {value: "2020"', 'launch_year: {value: "1e29"', 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}"], None, ("hardware.yaml", "a100-40gb", "launch_year", "1e29",
                                                                    "a year from 1958 to 2100")),
    ("hw-launch-year-3000", _hw(lambda s: s.replace('launch_year: {value: "2020"', 'launch_year: {value: "3000"', 1)),
     ["check", "--hardware-file", "{F}"], None, ("a100-40gb", "launch_year", "a year from 1958 to 2100")),
    ("hw-launch-year-12", _hw(lambda s: s.replace('launch_year: {value: "2020"', 'launch_year: {value: "12"', 1)),
     ["build", "--hardware-file", "{F}", "--out", "{OUT}", "--no-pdf"], None, ("a100-40gb", "launch_year", "1958")),
    ("config-hidden-1e300", _config(LLAMA_CONFIG, hidden_size=1e300), ["eval", "params_total", "--model-config", "{F}"],
     None, ("config.json", "hidden_size", "at most")),
    ("config-hidden-1e40", _config(LLAMA_CONFIG, hidden_size=1e40), ["eval", "params_total", "--model-config", "{F}"],
     None, ("config.json", "hidden_size", "at most 16,777,216")),
    ("config-layers-10-12", _config(LLAMA_CONFIG, num_hidden_layers=10**12),
     ["eval", "params_total", "--model-config", "{F}"], None, ("num_hidden_layers", "at most 65,536")),
    ("config-moe-layers-10-12", _config(DEEPSEEK_CONFIG, num_hidden_layers=10**12),
     ["eval", "params_total", "--model-config", "{F}"], None, ("num_hidden_layers", "at most")),
    ("config-kv-heads-not-dividing", _config(LLAMA_CONFIG, num_key_value_heads=7),
     ["eval", "params_total", "--model-config", "{F}"], None, ("num_key_value_heads", "does not divide")),
    ("config-kv-heads-not-dividing-check", _config(LLAMA_CONFIG, num_key_value_heads=7),
     ["build", "--model-config", "{F}", "--out", "{OUT}", "--no-pdf"], None, ("num_key_value_heads", "does not divide")),
    # the smaller checks
    ("set-long-unknown-name", None, ["eval", "step_time", "--set", LONG_NAME + "=3"], None,
     ("xxxxxxxx...", "10,000 characters", "unknown input")),
    ("set-long-unknown-hardware", None, ["eval", "step_time", "--hardware", LONG_NAME], None, ("10,000 characters",)),
    ("eval-long-unknown-quantity", None, ["eval", LONG_NAME], None, ("unknown quantity", "10,000 characters")),
    ("set-long-without-value", None, ["eval", "step_time", "--set", LONG_NAME], None, ("NAME=VALUE", "10,000 characters")),
    ("plan-long-ttft", None, ["plan", "--min-tokens-per-user", "20", "--max-ttft", LONG_NAME], None,
     ("--max-ttft", "10,000 characters")),
    ("plan-infinite-speed", None, ["plan", "--min-tokens-per-user", "inf"], None, ("--min-tokens-per-user", "finite")),
    ("plan-nan-speed", None, ["plan", "--min-tokens-per-user", "nan"], None, ("--min-tokens-per-user",)),
    ("plan-no-formats", None, ["plan", "--min-tokens-per-user", "20", "--formats", ""], None, ("--formats",)),
    ("plan-no-hardware", None, ["plan", "--min-tokens-per-user", "20", "--hardware", ","], None, ("--hardware",)),
    ("compare-no-hardware", None, ["compare", "step_time", "--hardware", ","], None, ("--hardware",)),
    ("compare-no-model", None, ["compare", "step_time", "--model", ""], None, ("--model",)),
    ("unknown-argument", None, ["build", "--frobnicate", "--out", "{OUT}"], None, ("--frobnicate",)),
    ("missing-argument-value", None, ["eval", "step_time", "--set"], None, ("--set",)),
]


def _first_of_each_kind(cases):
    """The default run tries the first case of each kind of input (its id's first word: hw, set,
    models, claims, sweep, plan, ...); the slow set tries every case."""
    seen = set()
    for c in cases:
        kind = c[0].split("-")[0]
        yield pytest.param(c, id=c[0], marks=() if kind not in seen else pytest.mark.slow)
        seen.add(kind)


@pytest.mark.parametrize("case", list(_first_of_each_kind(CASES)))
def test_bad_input_is_one_line(case, previous, tmp_path):
    name, content, args, env, must = case
    f = tmp_path / "input.yaml"
    if content == "DIR":
        f.mkdir()
    elif content == "LINK":
        f.symlink_to(tmp_path / "nowhere")
    elif content is not None:
        f = tmp_path / content[0]
        body = content[1]
        (f.write_bytes if isinstance(body, bytes) else lambda b: f.write_text(b, encoding="utf-8"))(body)
        if isinstance(body, str):
            assert body not in (HW, MODELS, CLAIMS), f"{name}: the edit did not apply"
    before = tree(previous)
    args = [a.replace("{F}", str(f)).replace("{OUT}", str(previous)) for a in args]
    r = run(args, env=env, timeout=120)
    line = one_line_error(r, *must)
    assert len(line) < 400, f"a long input is quoted whole: {line[:200]}..."
    assert tree(previous) == before, "the previous output changed"
    assert not leftovers(previous), leftovers(previous)


# -- the environment ------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [["eval", "step_time", "--hardware", "h100-sxm"], ["audit"],
                                  ["eval", "balance_batch", "--json"]])
def test_ascii_only_stdout_does_not_crash(args):
    r = run(args, env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stdout.isascii()
    if "--json" in args:
        import json
        json.loads(r.stdout)  # escapes, not broken JSON


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_FSIZE"), reason="needs RLIMIT_FSIZE")
def test_full_disk_leaves_the_previous_output(previous):
    """A file-size limit makes the PDF write fail as a full disk would (EFBIG instead of ENOSPC)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))
    before = tree(previous)
    r = run(["build", "--force", "--out", str(previous)], preexec_fn=limit)
    one_line_error(r, "cannot write", "previous output is unchanged")
    assert tree(previous) == before
    assert not leftovers(previous)


def test_unwritable_parent_is_one_line(good, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    parent = tmp_path / "locked"
    parent.mkdir()
    out = parent / "out"
    shutil.copytree(good[0], out)
    before = tree(out)
    parent.chmod(0o555)
    try:
        one_line_error(run(["build", "--force", "--out", str(out), "--no-pdf"]), "Permission denied")
        assert tree(out) == before
    finally:
        parent.chmod(0o755)


def test_stale_entries_removed_and_read_only_folder_replaced_whole(good, tmp_path):
    """Leftovers of killed builds (beside) and of the old in-place writer (inside) go; a read-only
    output folder in a writable parent is replaced whole, not written into."""
    out = tmp_path / "out"
    shutil.copytree(good[0], out)
    (out / ".figures.old").mkdir()
    (out / ".report.pdf.abc123").write_bytes(b"partial")
    dead = tmp_path / ".out.tmp-999999999-abcd1234"  # no such process
    dead.mkdir()
    (dead / "report.html").write_text("half")
    for p in [out / "figures", out]:
        p.chmod(0o555)
    try:
        r = run(["build", "--force", "--out", str(out), "--no-pdf"])
        assert r.returncode == 0, r.stderr
    finally:
        for p in [out, out / "figures"]:
            if p.exists():
                p.chmod(0o755)
    assert not dead.exists() and not leftovers(out)
    assert not (out / ".figures.old").exists() and not (out / ".report.pdf.abc123").exists()
    assert tree(out)["report.html"] == good[1]["report.html"]


@pytest.mark.slow   # a build of its own; the default run's kill and signal tests hold the output folder's exchange
def test_out_through_a_symlink_keeps_the_link(good, tmp_path):
    real = tmp_path / "real"
    shutil.copytree(good[0], real)
    link = tmp_path / "link"
    link.symlink_to(real)
    r = run(["build", "--force", "--out", str(link), "--no-pdf"])
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and (link / "report.html").is_file()


def test_sigterm_during_build_leaves_nothing_behind(good, tmp_path):
    import signal
    import time
    out = tmp_path / "out"
    shutil.copytree(good[0], out)
    before = tree(out)
    p = subprocess.Popen([sys.executable, str(ROOT / "build.py"), "--force", "--out", str(out)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    line = ""
    while time.time() < deadline and "render" not in line:  # kill it while it writes or compiles
        line = p.stderr.readline()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert "Traceback" not in err
    assert tree(out) in (before, tree(good[0])), "neither wholly old nor wholly new"
    assert not leftovers(out)


# -- what reaches the reader ----------------------------------------------------------------------
def test_links_and_control_characters_are_neutralised_in_templates():
    from chalkboard.report.templates import environments, page_link, web_link
    from chalkboard.data.safety import visible

    assert web_link("https://example.com/a?b=1") == "https://example.com/a?b=1"
    for bad in ("javascript:alert(1)", "JAVASCRIPT:alert(1)", "data:text/html,x", "file:///etc/passwd",
                " javascript:alert(1)", "//evil.example", "http://x\u202e.com", None, ""):
        assert web_link(bad) == "" and page_link(bad) == "", bad
    assert page_link("#sec-roofline") == "#sec-roofline"
    assert visible("a\x00b\x1bc\u202ed\x7f\u2066") == "a\u2400b\u241bc\ufffdd\u2421\ufffd"
    html, typ = environments(ROOT)
    out = html.from_string('<a href="{{ u | web_link }}">{{ t }}</a>').render(u="javascript:x", t="A\u202eB\x1b")
    assert out == '<a href="">A\ufffdB\u241b</a>'
    out = typ.from_string("<< t | tx >>").render(t="A\u202eB\x00")
    assert "\u202e" not in out and "\x00" not in out


def test_claims_file_outside_the_project_is_read(tmp_path):
    f = tmp_path / "claims.yaml"
    f.write_text(CLAIMS, encoding="utf-8")
    r = run(["audit", "--claims-file", str(f), "--json"])
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.slow
def test_kill_at_every_write_step(tmp_path):
    """bench/kill_build.py: SIGKILL before each filesystem step of the write stage."""
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "kill_build.py"), "--work", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "wholly old or wholly new after every kill" in r.stdout


def test_an_unreadable_template_is_named_not_taken_for_the_output(good, tmp_path):
    """The build writes while it still reads (results.json while the figures are drawn): an input
    it cannot read there (here a template that is a folder) is named as what it is, not reported
    as a failed write of the output."""
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache"))
    template = proj / "templates" / "report.typ.j2"
    template.unlink()
    template.mkdir()
    out = tmp_path / "out"
    shutil.copytree(good[0], out)
    before = tree(out)
    r = warm.run(proj / "build.py", ["build", "--force", "--no-pdf", "--out", str(out)], cwd=proj,
                 env=dict(os.environ), timeout=180)
    line = one_line_error(r, "report.typ.j2")
    assert "cannot write" not in line and "templates" in line
    assert tree(out) == before and not leftovers(out)
