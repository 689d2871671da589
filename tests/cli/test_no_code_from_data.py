"""No string in a data file or on the command line runs as code.

SymPy's sympify reads text with Python's eval; a claim's `expr:` of
`x + 0*__import__('os').system('touch F')` used to create F under `audit --claims-file`. Every
payload below is put into every field that is parsed (claims' expressions, identities and the
helpers' arguments, every value of every data file, --set, --sweep, a config.json), and the test
asserts that the canary file the payload would create never appears and that the input is refused
or read as plain data.
"""
import copy
import json
import os
import re
from pathlib import Path

import pytest
import sympy as sp
import yaml

import warm
from conftest import ROOT
from chalkboard.audit import exprtext
from chalkboard.data.loader import DataError, load
from chalkboard.audit.claims import load_claims

CANARY = "chalkboard-canary"


def payloads(canary: Path) -> list[str]:
    c = str(canary)
    return [
        f"__import__('os').system('touch {c}')",
        f"batch + 0*__import__('os').system('touch {c}')",
        f"open('{c}', 'w')",
        f"exec(\"open('{c}','w')\")",
        f"eval(\"open('{c}','w')\")",
        f"getattr(__builtins__, 'open')('{c}', 'w')",
        f"().__class__.__bases__[0].__subclasses__()",
        f"(lambda: open('{c}', 'w'))()",
        f"[open('{c}', 'w') for _ in (1,)]",
        f"{{open('{c}', 'w') for _ in (1,)}}",
        f"(x := open('{c}', 'w'))",
        f"f\"{{open('{c}', 'w')}}\"",
        f"batch.__class__",
        f"Symbol('x').subs(1, 2)",
        f"Max(batch, open('{c}', 'w'))",
        f"d(batch, __import__('os').system('touch {c}'))",
        f"lhs(__import__('os').system('touch {c}'))",
        f"__builtins__",
        f"_sympy_",
        f"batch if open('{c}', 'w') else batch",
        "2**1000000000",
        "9**9**9",
        "-(" * 100 + "batch" + ")" * 100,
        "+".join(["batch"] * 900),
    ]


# -- the restricted parser -----------------------------------------------------------------------
NAMES = {n: sp.Symbol(n, positive=True) for n in ("batch", "chips", "step_time")}


@pytest.mark.parametrize("text", payloads(Path("/nonexistent") / CANARY))
def test_parser_refuses_every_payload(text):
    with pytest.raises(exprtext.ExprError) as e:
        exprtext.parse(text, NAMES)
    assert "\n" not in str(e.value) and len(str(e.value)) < 300


@pytest.mark.parametrize("text", ["batch*chips/step_time", "Max(batch, 2*chips) - 1/2", "-batch**2 + 3.5e3",
                                  "sqrt(batch)*log(chips)", "(batch + chips)**(1/2)"])
def test_parser_reads_what_sympify_read(text):
    # the trusted reading: sympify of text written here, in the test, never of data
    assert exprtext.parse(text, NAMES) == sp.sympify(text, locals=NAMES)


def test_parser_names_what_it_refuses():
    with pytest.raises(exprtext.ExprError, match="unknown quantity 'bacth'"):
        exprtext.parse("bacth * 2", NAMES)
    with pytest.raises(exprtext.ExprError, match="attribute access"):
        exprtext.parse("batch.func", NAMES)
    with pytest.raises(exprtext.ExprError, match="unknown function 'exec'"):
        exprtext.parse("exec('1')", NAMES)
    with pytest.raises(exprtext.ExprError, match="exponent"):
        exprtext.parse("batch**100000", NAMES)
    with pytest.raises(exprtext.ExprError, match=r"operator \^"):
        exprtext.parse("batch^2", NAMES)


# -- every field of claims.yaml ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def data():
    return load(ROOT)


@pytest.fixture(scope="module")
def claims_doc():
    return yaml.safe_load((ROOT / "claims.yaml").read_text(encoding="utf-8"))


def _strings(node, path=()):
    """(path, text) of every string leaf under node."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _strings(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _strings(v, path + (i,))
    elif isinstance(node, str):
        yield path, node


def _set(node, path, value):
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def _claims_with_every_kind(doc):
    """One claim of each shape: an expr, identity checks (with d/at/lhs helpers), set/given/relative_to/cited."""
    picked, seen = [], set()
    for c in doc["claims"]:
        shape = tuple(sorted(k for k in c if k in ("expr", "checks", "set", "given", "relative_to", "cited",
                                                    "parts", "quantity", "claimed")))
        if shape not in seen:
            seen.add(shape)
            picked.append(c)
    return picked


def test_no_payload_in_any_claims_field_runs(data, claims_doc, tmp_path):
    canary = tmp_path / CANARY
    claims = _claims_with_every_kind(claims_doc)
    fields = [(c, p) for c in claims for p, _ in _strings(c) if p[0] not in ("id", "where")]
    assert any(p[0] == "checks" for _, p in fields) and any(p[0] == "expr" for _, p in fields)
    tried = refused = 0
    for claim, path in fields:
        for text in payloads(canary):
            bad = copy.deepcopy(claim)
            _set(bad, path, text if path[0] != "checks" else f"{text} == 0")
            doc = {**claims_doc, "claims": [bad]}
            tried += 1
            try:
                load_claims(tmp_path / "claims.yaml", "claims.yaml", data, doc=doc)
            except DataError as e:
                refused += 1
                assert "\n" not in str(e)
            assert not canary.exists(), (claim["id"], path, text)
    # a quote or a note may hold any text; every parsed field refuses the payloads
    assert refused > tried // 3, (refused, tried)


@pytest.mark.parametrize("command", [["audit", "--claims-file", "{F}"],
                                     ["build", "--claims-file", "{F}", "--out", "{OUT}", "--no-pdf"]])
def test_claims_payload_through_the_command_line(command, tmp_path):
    """The report's case: an expr with a shell command appended, exit 2, one line, nothing run."""
    canary = tmp_path / CANARY
    text = (ROOT / "claims.yaml").read_text(encoding="utf-8")
    m = re.search(r"^(\s+expr: )(.+)$", text, re.M)
    bad = text[:m.start(2)] + f"\"{m.group(2).strip(chr(34))} + 0*__import__('os').system('touch {canary}')\"" \
        + text[m.end(2):]
    f = tmp_path / "claims.yaml"
    f.write_text(bad, encoding="utf-8")
    args = [a.replace("{F}", str(f)).replace("{OUT}", str(tmp_path / "out")) for a in command]
    r = warm.run(ROOT / "build.py", args, cwd=ROOT, env=dict(os.environ), timeout=180)
    assert not canary.exists()
    assert r.returncode == 2, (r.returncode, r.stderr[-1500:])
    assert "Traceback" not in r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
    assert len(err) == 1 and "claims.yaml" in err[0] and "expr" in err[0], r.stderr
    assert not (tmp_path / "out").exists()


# -- every value of the other data files -----------------------------------------------------------------
@pytest.mark.parametrize("name", ["hardware.yaml", "models.yaml", "prices.yaml"])
def test_no_payload_in_any_data_value_runs(name, tmp_path):
    canary = tmp_path / CANARY
    sections = {"hardware.yaml": "hardware", "models.yaml": "models", "prices.yaml": "prices"}

    def one_entry(f):
        """The file with its first entry alone, and the sources the file then names: each of the many
        loads reads (and each write dumps) only that."""
        doc = yaml.safe_load((ROOT / f).read_text(encoding="utf-8"))
        first_id = next(iter(doc[sections[f]]))
        entry = doc[sections[f]][first_id]
        doc[sections[f]] = {first_id: entry}
        named = {text for _, text in _strings({k: v for k, v in doc.items() if k != "sources"})}
        doc["sources"] = {sid: src for sid, src in doc["sources"].items() if sid in named}
        if f == "prices.yaml":
            doc["default"] = first_id
        return doc, first_id

    doc, first_id = one_entry(name)
    section = sections[name]
    # every string but free text (a note is shown, never parsed)
    entry_paths = [p for p, _ in _strings(doc[section][first_id]) if p[-1] != "note"]
    assert len(entry_paths) > 5
    for f in sections:
        if f != name:
            (tmp_path / f).write_text(yaml.safe_dump(one_entry(f)[0], sort_keys=False), encoding="utf-8")
    (tmp_path / name).write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    load(tmp_path)   # the files as written here load: a payload's refusal is the payload's
    for path in entry_paths:
        for text in payloads(canary)[:12]:
            bad = copy.deepcopy(doc)
            _set(bad[section][first_id], path, text)
            (tmp_path / name).write_text(yaml.safe_dump(bad, sort_keys=False), encoding="utf-8")
            try:
                load(tmp_path)
            except DataError as e:
                assert "\n" not in str(e)
            assert not canary.exists(), (name, path, text)


def test_no_payload_in_set_sweep_or_config_runs(tmp_path):
    canary = tmp_path / CANARY
    text = f"__import__('os').system('touch {canary}')"
    cfg = json.loads((ROOT / "tests" / "configs" / "qwen3-4b.json").read_text(encoding="utf-8"))
    cfg["hidden_size"] = text
    cfg["model_type"] = text
    (tmp_path / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    runs = [["eval", "step_time", "--set", f"batch={text}"],
            ["eval", "step_time", "--set", f"{text}=3"],
            ["eval", "step_time", "--sweep", f"batch={text}"],
            ["eval", text],
            ["eval", "step_time", "--model-config", str(tmp_path / "config.json")]]
    for args in runs:
        r = warm.run(ROOT / "build.py", args, cwd=ROOT, env=dict(os.environ), timeout=120)
        assert not canary.exists(), args
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr[-1500:])


def test_no_payload_in_any_measurement_field_runs(data, tmp_path):
    from chalkboard.validation import load_measurements
    canary = tmp_path / CANARY
    doc = yaml.safe_load((ROOT / "measurements.yaml").read_text(encoding="utf-8"))
    first_id = next(iter(doc["measurements"]))
    doc["measurements"] = {first_id: doc["measurements"][first_id]}
    named = {text for _, text in _strings(doc["measurements"])}   # the sources it names: each dump and load reads only them
    doc["sources"] = {sid: src for sid, src in doc["sources"].items() if sid in named}
    paths = [p for p, _ in _strings(doc["measurements"][first_id]) if p[-1] not in ("note", "where")]
    assert len(paths) > 5
    (tmp_path / "measurements.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    load_measurements(tmp_path, data)   # the file as written here loads: a payload's refusal is the payload's
    for path in paths:
        for text in payloads(canary)[:12]:
            bad = copy.deepcopy(doc)
            _set(bad["measurements"][first_id], path, text)
            (tmp_path / "measurements.yaml").write_text(yaml.safe_dump(bad, sort_keys=False), encoding="utf-8")
            try:
                load_measurements(tmp_path, data)
            except DataError as e:
                assert "\n" not in str(e)
            assert not canary.exists(), (path, text)
