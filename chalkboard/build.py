"""`python build.py`: load -> derive -> check -> evaluate -> audit -> render -> write.

Everything is gathered and rendered in memory first (like mkdocs' build); only then are the
files written, each to a temporary name and renamed into place, so a build that fails at
any stage leaves the previous report untouched. Output is deterministic: no timestamps,
sorted JSON, SVG ids from a fixed salt.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import jinja2


class BuildError(Exception):
    pass


def _typst_str(s) -> str:
    from .printers import typst_str  # loads the derivations: imported when rendering, not before
    return typst_str("" if s is None else str(s))


def _typst_text(s) -> str:
    """Data text in Typst markup: a string literal, shown verbatim; ';' ends the expression."""
    return f"#{_typst_str(s)};"


def environments(root: Path):
    loader = jinja2.FileSystemLoader(str(root / "templates"))
    html = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)
    typ = jinja2.Environment(loader=loader, autoescape=False, undefined=jinja2.StrictUndefined,
                             block_start_string="<%", block_end_string="%>",
                             variable_start_string="<<", variable_end_string=">>",
                             comment_start_string="<#", comment_end_string="#>",
                             trim_blocks=True, lstrip_blocks=True)
    for env in (html, typ):
        env.filters["first_upper"] = lambda s: s[:1].upper() + s[1:] if s else s
    typ.filters["tstr"] = _typst_str
    typ.filters["tx"] = _typst_text
    return html, typ


def compile_pdf(typ_source: str, figures: dict[str, str]) -> bytes:
    import typst

    with tempfile.TemporaryDirectory(prefix="chalkboard-typst-") as tmp:
        tmp = Path(tmp)
        (tmp / "figures").mkdir()
        for name, (svg, _) in figures.items():
            (tmp / "figures" / f"{name}.svg").write_text(svg, encoding="utf-8")
        (tmp / "report.typ").write_text(typ_source, encoding="utf-8")
        try:
            return typst.compile(str(tmp / "report.typ"), root=str(tmp))
        except Exception as e:  # typst reports source errors as exceptions with a message
            raise BuildError(f"Typst could not compile the PDF: {str(e).strip().splitlines()[0]}") from None


def results_json(data, res, registry) -> str:
    from .fmt import split
    from .results import list_hardware, list_models

    quantities = {}
    for q in registry.derived_quantities():
        quantities[q.name] = {"unit": q.unit, "meaning": q.meaning, "sympy": str(registry.closed_form(q.name)),
                              "inputs": [leaf.name for leaf in registry.leaves(q.name)]}
    pairs = {}
    for (hid, mid), vals in res.values.items():
        flags = res.flags[(hid, mid)]
        pairs[f"{hid}|{mid}"] = {
            "hardware": hid, "model": mid,
            "feasible": res.fit[(hid, mid)]["feasible"], "feasibility": res.fit[(hid, mid)]["reason"],
            "formats": res.formats[(hid, mid)],
            "values": {n: {**dict(zip(("value", "unit"), split(v))),
                           **({"feasible": False, "infeasible": flags[n]} if n in flags else {})}
                       for n, v in vals.items()},
            "not_applicable": res.missing[(hid, mid)],
            "inputs": res.inputs[(hid, mid)],
        }
    doc = {"quantities": quantities, "hardware": list_hardware(data), "models": list_models(data),
           "results": pairs}
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False)


def _atomic_write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(content.encode("utf-8") if isinstance(content, str) else content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _replace_dir(target: Path, files: dict[str, str]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    os.chmod(tmp, 0o755)
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(target, old)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build(root: Path, args) -> int:
    from .data import DataError, load

    t_start = time.perf_counter()
    timings = []

    def stage(name, t0):
        dt = time.perf_counter() - t0
        timings.append((name, dt))
        print(f"  {name:<10} {dt:6.2f} s", file=sys.stderr)
        return time.perf_counter()

    print("chalkboard build", file=sys.stderr)
    t = time.perf_counter()
    data = load(root, args.hardware_file, args.models_file)
    t = stage("load", t)
    from derivations import REGISTRY  # importing the lecture modules declares and solves everything

    from .audit import run_audit
    from .check import check_all
    from .evaluate import Scenario
    from .figures import draw_all
    from .report import context
    from .results import evaluate_all
    t = stage("derive", t)
    rep = check_all(REGISTRY)
    if not rep.ok:
        raise BuildError("dimension check failed: " + "; ".join(rep.failures))
    t = stage("check", t)
    overrides = dict(getattr(args, "set_pairs", {}) or {})
    res = evaluate_all(data, overrides)
    if res.errors:
        raise BuildError("evaluation failed: " + res.errors[0])
    sc = Scenario(data, args.hardware, args.model, overrides)
    sc.value("step_time")
    t = stage("evaluate", t)
    claims_path = root / args.claims_file
    if claims_path.exists():
        audit = run_audit(data, claims_path, args.claims_file)
    elif args.claims_file != "claims.yaml":
        raise DataError(args.claims_file, None, None, "file not found")
    else:
        audit = None  # no claims file: the report has no audit section
    t = stage("audit", t)
    refs = {}
    for q in ("drain_time", "hardware_ratio"):
        if audit is not None and audit.rule_of_thumb(q) is not None:
            refs[q] = audit.rule_of_thumb(q)
    figures = draw_all(data, args.hardware, args.model, overrides, refs)
    t = stage("figures", t)
    html_env, typ_env = environments(root)
    ctx = context(data, sc, figures, audit=audit.for_report() if audit else None,
                  check={"definitions": rep.definitions, "equations": rep.equations,
                         "evaluations": res.count_ok})
    html = html_env.get_template("report.html.j2").render(**ctx)
    typ_src = typ_env.get_template("report.typ.j2").render(**ctx)
    t = stage("render", t)
    pdf = None if args.no_pdf else compile_pdf(typ_src, figures)
    t = stage("pdf", t)
    rjson = results_json(data, res, REGISTRY)

    out = (root / args.out) if not Path(args.out).is_absolute() else Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _replace_dir(out / "figures", {f"{n}.svg": svg for n, (svg, _) in figures.items()})
    _atomic_write(out / "results.json", rjson)
    _atomic_write(out / "report.typ", typ_src)
    if pdf is not None:
        _atomic_write(out / "report.pdf", pdf)
    _atomic_write(out / "report.html", html)
    t = stage("write", t)
    total = time.perf_counter() - t_start
    shown = lambda p: os.path.relpath(p, Path.cwd()) if str(p).startswith(str(Path.cwd())) else str(p)  # noqa: E731
    print(f"wrote {shown(out / 'report.html')}"
          + ("" if pdf is None else f", {shown(out / 'report.pdf')}")
          + f", {len(figures)} figures, {shown(out / 'results.json')} in {total:.2f} s")
    return 0
