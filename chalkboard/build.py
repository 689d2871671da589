"""`python build.py`: load -> derive -> check -> evaluate -> audit -> render -> write.

Everything is gathered and rendered in memory first (like mkdocs' build); then the whole output
is written into a fresh sibling folder (`.build.tmp-PID-XXXX` beside `build/`), the PDF compiled
there, and the sibling exchanged with the output folder in one atomic rename (Linux
renameat2 RENAME_EXCHANGE). At every instant the output folder holds either the complete old
output or the complete new one: a build that fails, is interrupted or is killed at any point
leaves the previous report untouched, and the next build removes what it left behind.
Output is deterministic: no build times, sorted JSON, SVG ids from a fixed salt, and a PDF
dated SOURCE_DATE_EPOCH (or the newest as-of date of the data), so two builds are byte-identical.
"""
from __future__ import annotations

import re
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import jinja2

from .cache import pdfcache
from .data import SAFE_URL
from .safety import CONTROL_CHARS, visible  # noqa: F401  (re-exported)
from .report.chip_reports import chip_reports
from .report.reader import cite_lecture, code_html, code_typst, linked, prose_html, prose_typst
from .errors import BuildError  # noqa: F401  (re-exported)
from .cache.forked import Forked
from .report.pdf import (compile_pdf, compile_pdf_background, fit_formulas, pdf_timestamp,  # noqa: F401  (re-exported)
                  source_date_epoch, typst_display)
from .results_json import results_json_parts
from .staging import Staging, output_folder, shown_path

# the documents a build writes, each as NAME.html, NAME.typ and NAME.pdf: the report, which reads
# like the lecture, and the reference beside it (every closed form, claim card, table and source)
DOCUMENTS = ("report", "reference")


# -- text that reaches the reader -------------------------------------------------------------
def unfitted(typ_src: str) -> str:
    """The report's Typst source with each formula marked #fit[...] set as it is: without a PDF,
    nothing is measured, so Typst is neither needed nor imported (--no-pdf)."""
    from .report.pdf import MAYBE_WIDE
    return MAYBE_WIDE.sub(lambda m: f"$ {m.group(1)} $", typ_src)


def _finalize(v):
    """Applied to every value a template prints (before HTML escaping): no raw control characters,
    and the lecture's notes cited by their time in the lecture, not by their file."""
    if isinstance(v, str):
        v = cite_lecture(v)
        if CONTROL_CHARS.search(v):
            return type(v)(visible(v))  # a Markup stays Markup
    return v


def web_link(url) -> str:
    """``url`` if it is an http(s) address, else "": no javascript:, data: or file: links."""
    u = "" if url is None else str(url).strip()
    return u if SAFE_URL.match(u) and not CONTROL_CHARS.search(u) else ""


def page_link(href) -> str:
    """An href for the HTML page: an anchor in the page (#...) or an http(s) address, else ""."""
    h = "" if href is None else str(href).strip()
    return h if re.fullmatch(r"#[\w.:-]+", h) else web_link(h)


def _typst_str(s) -> str:
    from .typeset.printers import typst_str  # loads the derivations: imported when rendering, not before
    return typst_str("" if s is None else str(s))


def _typst_text(s) -> str:
    """Data text in Typst markup: a string literal, shown verbatim; ';' ends the expression."""
    return f"#{_typst_str(s)};"


class _KeptTemplates(jinja2.BytecodeCache):
    """Each template as Jinja2 compiled it, kept with SymPy's work (chalkboard/cache/symcache.py)
    under the template's name, all that decides the compiled code besides the template's source
    (the delimiters, whitespace and escaping, whether each filter, test and the finalize function
    is handed the context or the environment, the compiler's policies, async) and Jinja2's
    version; Jinja2 itself takes the kept code only if it was compiled from the template's source
    as it is now, by this Python. Compiling the templates costs about 0.13 s a build."""

    def __init__(self, env: jinja2.Environment):
        def passes(f) -> str:   # how Jinja2 calls it, decided when a template is compiled
            return str(getattr(f, "jinja_pass_arg", None))
        self.reads = (env.block_start_string, env.block_end_string, env.variable_start_string,
                      env.variable_end_string, env.comment_start_string, env.comment_end_string,
                      env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks, env.lstrip_blocks,
                      env.newline_sequence, env.keep_trailing_newline, env.autoescape, env.optimized,
                      env.is_async, None if env.finalize is None else passes(env.finalize),
                      tuple(sorted((n, passes(f)) for n, f in env.filters.items())),
                      tuple(sorted((n, passes(f)) for n, f in env.tests.items())),
                      tuple(sorted((k, v) for k, v in env.policies.items()
                                   if v is None or isinstance(v, (str, int, float, bool)))),
                      tuple(sorted(env.extensions)), jinja2.__version__)

    def get_cache_key(self, name: str, filename=None) -> str:
        return name   # one folder of templates: the name is enough, wherever the project is

    def _key(self, bucket) -> tuple:
        return ("template", bucket.key, self.reads)

    def load_bytecode(self, bucket) -> None:
        from derivations import REGISTRY

        kept = REGISTRY.fresh.get(self._key(bucket)) or REGISTRY.saved.get(self._key(bucket))
        if kept is not None:
            bucket.bytecode_from_string(kept)   # reset (compiled again) if the source changed

    def dump_bytecode(self, bucket) -> None:
        from derivations import REGISTRY

        REGISTRY.fresh[self._key(bucket)] = bucket.bytecode_to_string()


def environments(root: Path):
    loader = jinja2.FileSystemLoader(str(root / "templates"))
    html = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, finalize=_finalize)
    typ = jinja2.Environment(loader=loader, autoescape=False, undefined=jinja2.StrictUndefined, finalize=_finalize,
                             block_start_string="<%", block_end_string="%>",
                             variable_start_string="<<", variable_end_string=">>",
                             comment_start_string="<#", comment_end_string="#>",
                             trim_blocks=True, lstrip_blocks=True)
    for env in (html, typ):
        env.filters["first_upper"] = lambda s: s[:1].upper() + s[1:] if s else s
        env.filters["web_link"] = web_link
    html.filters["page_link"] = page_link
    html.filters["links"] = linked
    typ.filters["tstr"] = _typst_str
    typ.filters["tx"] = _typst_text
    typ.filters["txcode"] = lambda s: code_typst(s, _typst_str)
    typ.filters["prose"] = lambda s: prose_typst(s, _typst_str)
    html.filters["prose"] = prose_html
    html.filters["code"] = code_html
    typ.filters["display"] = typst_display
    for env in (html, typ):   # (an escaping decided by a function would be code the key cannot read)
        env.bytecode_cache = _KeptTemplates(env) if isinstance(env.autoescape, bool) else None
    return html, typ


def numbers_first(ctx, sc, drawing, watch, validation, html_env, put) -> None:
    """The edit loop's first output of a rebuild: the pages with the new numbers, each figure
    still being drawn shown in its last version (``watch.figures``) and marked as updating."""
    from .report.context import attach_figures
    from .report.svgpage import lighten

    figures, updating = {}, set()
    for n, shown in watch.figures.items():
        if drawing.ready.get(n) is not None:
            figures[n] = drawing.ready[n]
        elif n in drawing.drawn:
            figures[n] = shown
            updating.add(n)
    figures.update({n: f for n, f in drawing.ready.items() if f is not None and n not in figures})
    attach_figures(ctx, figures, sc)
    for s in ctx["sections"]:
        for f in s["figures"]:
            f["updating"] = f["name"] in updating
    if validation is not None and "validation" in figures:
        validation["svg"] = figures["validation"][0]
    ctx["sprite"] = lighten(ctx["sections"]).sprite()
    for n, (svg, _) in figures.items():
        put(f"figures/{n}.svg", svg)
    for doc in DOCUMENTS:
        put(f"{doc}.html", html_env.get_template(f"{doc}.html.j2").render(ctx))


# A display formula wider than the text is set over lines (chalkboard/typeset/linebreak.py, lines of at
# most 49 em of the printers' estimate, printers._em); one still wider (a piece that cannot break)
# is scaled down to the text's width. Which ones are wide is measured by Typst itself, but only for
# formulas that might be: on the report's formulas the set width is at most 1.08x the estimate
# (0.97x above 30 em), and the text is 48.2 em wide (17 cm at 10 pt), so a formula estimated
# under 49 em always fits. tests/report/test_report_defects.py measures every formula of the report.
def build(root: Path, args, process=None, watch=None) -> int:
    """The report, built from the inputs ``args`` names into its output folder. ``process``: the
    figure process forked as the command started (chalkboard/report/figure_process.py, standby),
    or None (the figures not kept are drawn by a process forked once the build knows them).
    ``watch``: the edit loop (chalkboard/watch/loop.py), or None. Given, nothing is printed, a PDF
    not kept is handed to its warm Typst process (``watch.compile``) instead of compiled here, the
    page is committed with the previous PDF (``watch.keep_pdf``), and ``watch.built`` is told
    what was done; the loop writes the new PDF, and the stamp, once Typst is done."""
    from .data import load, read_yaml

    t_start = time.perf_counter()
    timings = []

    solved = [0]   # SymPy results this run had computed when the last stage ended

    def stage(name, t0, note=""):
        """A stage's time, and what it computed and what it kept: its own note, and the SymPy
        results it had to compute (none where the kept or shipped ones served)."""
        dt = time.perf_counter() - t0
        timings.append((name, dt))
        registry = sys.modules.get("derivations")
        fresh = len(registry.REGISTRY.fresh) if registry is not None and hasattr(registry, "REGISTRY") else 0
        parts = [note] if note else []
        if fresh > solved[0]:
            parts.append(f"{fresh - solved[0]:,} SymPy results computed")
        solved[0] = fresh
        if watch is None:
            print(f"  {name:<10} {dt:6.2f} s" + (f"   ({'; '.join(parts)})" if parts else ""), file=sys.stderr)
        return time.perf_counter()

    out = output_folder(root, args.out)   # a bad --out fails before anything is computed
    source_date_epoch()
    if watch is None:
        print("chalkboard build", file=sys.stderr)
    t = time.perf_counter()
    data = load(root, args.hardware_file, args.models_file, getattr(args, "prices_file", "prices.yaml"))
    if getattr(args, "model_config", None):
        from .configmodel import add_config_model
        add_config_model(data, args.model_config)
    if data.config_model:
        m = data.models[data.config_model]
        print(f"  note: {m.file}: read as model {m.id}: {'; '.join(m.assumed)}", file=sys.stderr)
    if getattr(args, "model", None) is None:  # --model not given: the config's model, else the featured one
        from .featured import FEATURED_MODEL
        args.model = data.config_model or FEATURED_MODEL
    claims_path = root / args.claims_file
    if claims_path.exists() or claims_path.is_symlink() or args.claims_file != "claims.yaml":
        claims_doc = read_yaml(claims_path, args.claims_file)  # encoding, size, nesting, aliases: one line each
        has_claims = True
    else:
        claims_doc, has_claims = None, False  # no claims file: the report has no audit section
    measurements_file = getattr(args, "measurements_file", "measurements.yaml")
    has_measurements = ((root / measurements_file).exists() or (root / measurements_file).is_symlink()
                        or measurements_file != "measurements.yaml")  # none: no validation section
    timestamp = None if args.no_pdf else pdf_timestamp(data)
    t = stage("load", t)
    from derivations import REGISTRY  # importing the lecture modules declares and solves everything

    from .audit import read_claims, run_audit
    from .evaluation.check import check_all
    from .evaluation.evaluate import Scenario
    from .report.figures import MARKED_RULES_OF_THUMB
    from .report.figure_process import Drawing
    from .report.context import attach_figures, context
    from .evaluation.results import evaluate_all
    t = stage("derive", t, f"{len(REGISTRY.quantities):,} quantities; SymPy's results "
                           + ("kept" if REGISTRY.saved else "solved"))
    overrides = dict(getattr(args, "set_pairs", {}) or {})
    parts = watch.kept if watch is not None else None   # the edit loop's parts of earlier builds
    if parts is not None:
        from .cache import incremental
        parts.use(data)
    sc = Scenario(data, args.hardware, args.model, overrides)
    validation = None
    if has_measurements:
        from . import validation as val
        records = val.load_measurements(root, data, measurements_file)
        checked = val.evaluate_all(data, records) if parts is None else incremental.measurements(parts, records)
        fitted = val.efficiency_model(checked, data) if parts is None else incremental.efficiency(parts, checked, data)
        validation = val.for_report(checked, fitted, measurements_file)
        sc.evidence = lambda: fitted   # the featured numbers' expected efficiencies (expected_mfu, expected_mbu)
    # the claims, read and checked before anything is drawn: the figures mark their rules of thumb
    claims = None if not has_claims else read_claims(data, claims_path, args.claims_file, claims_doc) \
        if parts is None else incremental.claims(parts, claims_path, args.claims_file, claims_doc)
    refs = {q: v for q in MARKED_RULES_OF_THUMB
            if claims is not None and (v := claims.rule_of_thumb(q)) is not None}
    t = stage("validate", t, f"{len(checked):,} records checked, the engine model fitted" if validation else "")
    # the figures not kept are drawn on the other core from here on
    from .report.figures_validation import figure_svg, points
    extra = {"validation": (figure_svg, points(checked))} if validation is not None else {}
    from .cache.figcache import FigureCache
    # figures kept from earlier builds under exactly what they read
    kept = FigureCache(root, getattr(args, "program", None), recheck=True)
    drawing = Drawing(data, args.hardware, args.model, overrides, extra, refs, kept, process)
    # the claims are evaluated in a process of their own beside the check and the evaluation
    auditing = None if not has_claims else \
        Forked("auditing the claims", run_audit, data, claims_path, args.claims_file, None, claims) if parts is None \
        else Forked("auditing the claims", incremental.audit, parts, claims)
    rep = check_all(REGISTRY)
    if not rep.ok:
        raise BuildError("dimension check failed: " + "; ".join(rep.failures))
    t = stage("check", t)
    res = evaluate_all(data, overrides) if parts is None else incremental.evaluate(parts, data, overrides)
    if res.errors:
        raise BuildError("evaluation failed: " + res.errors[0])
    sc.value("step_time")
    t = stage("evaluate", t, f"{len(res.values):,} chip x model pairs, {res.count_ok:,} numbers")
    with ExitStack() as stack:
        staged = stack.enter_context(Staging(out))
        written = {}

        def put(rel, content):
            written[rel] = staged.write(rel, content)
        # results.json (written as it is made: 300 MB at 6,400 pairs, never held whole) is
        # written while this process would wait for the audit and the figures made beside it,
        # and what is left of it while the PDF compiles
        results = staged.writing("results.json", results_json_parts(data, res, REGISTRY, None if parts is None else parts.json))
        if auditing is not None:
            results.write_while(lambda: not auditing.ready())
        audit = auditing.result() if auditing is not None else None
        if parts is not None and audit is not None:
            audit, new = audit
            incremental.take(parts, new)
        t = stage("audit", t, "" if audit is None else f"{len(audit.verdicts):,} claims judged")   # made beside the stages before
        html_env, typ_env = environments(root)
        from .report.context import shared_tables
        audit_ctx = audit.for_report() if audit else None
        check_ctx = {"definitions": rep.definitions, "equations": rep.equations, "evaluations": res.count_ok}
        shared = shared_tables(data, sc.model.id, parts)
        ctx = context(data, sc, {}, audit=audit_ctx, check=check_ctx, validation=validation, shared=shared)
        t = stage("render", t)
        early = watch is not None and not drawing.finished() and bool(watch.figures)
        if early:   # the edit loop: the new numbers first, then the figures, then the PDF
            numbers_first(ctx, sc, drawing, watch, validation, html_env, put)
            written["results.json"] = results.finish()
            watch.keep(staged.path, [f"{doc}.{ext}" for doc in DOCUMENTS for ext in ("pdf", "typ")])
            staged.commit()
            watch.numbers(out)
            staged = stack.enter_context(Staging(out))   # the figures and the PDF follow in a fresh one
            watch.keep(staged.path, ["results.json"])
        else:
            results.write_while(lambda: not drawing.finished())
        figures = drawing.wait()
        if validation is not None:
            validation["svg"] = figures["validation"][0]
        t = stage("figures", t, f"{len(drawing.drawn)} drawn, {len(figures) - len(drawing.drawn)} kept")   # the wait for them
        attach_figures(ctx, figures, sc)
        from .report.svgpage import lighten
        ctx["sprite"] = lighten(ctx["sections"]).sprite()   # the page's figures share one set of glyphs
        # two documents: the report, which reads like the lecture, and the reference beside it
        typ_srcs = {doc: typ_env.get_template(f"{doc}.typ.j2").render(**ctx) for doc in DOCUMENTS}
        chips = None
        if getattr(args, "all_hardware", False):
            def chip_context(chip_sc=None, chips=None):   # a chip's report links to the reference two folders up
                c = dict(ctx) if chip_sc is None else context(data, chip_sc, {}, audit=audit_ctx, check=check_ctx,
                                                              validation=validation, shared={**shared, **chips})
                c.update({k: "../../" + ctx[k] for k in ("ref", "main", "ref_pdf", "main_pdf")})
                return c
            featured_chip, chip_pdf = chip_context(), getattr(args, "chip_pdf", False)
            chips = chip_reports(data, sc, overrides, refs, figures,
                                 (html_env.get_template("report.html.j2").render(**featured_chip),
                                  typ_env.get_template("report.typ.j2").render(**featured_chip) if chip_pdf else None),
                                 html_env, typ_env, chip_context, kept, typst=chip_pdf)
            t = stage("hardware", t, f"{len(chips['pages'])} chip reports; their figures: {chips['drawn']} drawn, "
                                     f"{chips['kept']} kept")
        for n, (svg, _) in figures.items():
            put(f"figures/{n}.svg", svg)
        # the formulas are fitted and the PDF compiled (with the staged figures) on the other
        # core while this one writes the page and what is left of results.json
        # (unless a PDF made from the same source, figures, date, fonts and Typst is kept)
        svgs = {n: svg for n, (svg, _) in figures.items()}
        kept_pdfs, compiling, keys = {}, {}, {}
        if timestamp is not None:
            for doc, src in typ_srcs.items():
                keys[doc] = pdfcache.key(src, svgs, timestamp)
                got = pdfcache.get(root, keys[doc])
                if got is not None:
                    kept_pdfs[doc] = got
                elif watch is not None and doc == "report":   # compiled by the loop's Typst, after the page
                    watch.compile(src, svgs, timestamp, keys[doc])
                else:
                    compiling[doc] = compile_pdf_background(staged.path, timestamp, src)
        later = watch is not None and timestamp is not None and "report" not in kept_pdfs
        for doc in DOCUMENTS:
            put(f"{doc}.html", html_env.get_template(f"{doc}.html.j2").render(ctx))
        if not early:
            written["results.json"] = results.finish()
        for doc, src in typ_srcs.items():
            if timestamp is None:
                put(f"{doc}.typ", unfitted(src))   # no PDF: Typst is never imported
            elif later and doc == "report":
                watch.keep_pdf(staged.path)   # the previous PDF stays until the new one is written
            else:
                fitted, pdf_bytes = kept_pdfs.get(doc) or compiling[doc].result()
                put(f"{doc}.typ", fitted)
                put(f"{doc}.pdf", pdf_bytes)
                if doc not in kept_pdfs:
                    pdfcache.put(root, keys[doc], fitted, pdf_bytes)
        kept_pdf = "report" in kept_pdfs
        t = stage("pdf", t, "" if timestamp is None else "; ".join(
            f"{doc} {'kept' if doc in kept_pdfs else 'after the page' if later and doc == 'report' else 'compiled'}"
            for doc in typ_srcs))
        if chips is not None:
            for chip in chips["pages"]:
                folder = f"hardware/{chip['id']}"
                if getattr(args, "chip_pdf", False):
                    for n, svg in chip["figures"].items():
                        put(f"{folder}/figures/{n}.svg", svg)
                    if timestamp is None:
                        put(f"{folder}/report.typ", unfitted(chip["typ"]))
                    else:
                        fitted, pdf_bytes = compile_pdf(staged.path / folder, timestamp, chip["typ"])
                        put(f"{folder}/report.typ", fitted)
                        put(f"{folder}/report.pdf", pdf_bytes)
                put(f"{folder}/report.html", chip["html"])
            put("hardware/index.html", chips["index"])
            if getattr(args, "chip_pdf", False):
                t = stage("chip pdfs", t)
        if getattr(args, "fingerprint", None) and not later:  # lets an unchanged rebuild skip the work
            from .cache.uptodate import STAMP, fingerprint, stamp
            # only if nothing hashed changed during the build (else the next one builds again)
            if fingerprint(root, getattr(args, "fingerprinted", args)) == args.fingerprint:
                staged.write(STAMP, stamp(args.fingerprint, written))
        staged.commit()
    kept.save()
    t = stage("write", t)
    total = time.perf_counter() - t_start
    reused = sum(1 for n in figures if n not in drawing.drawn)
    if watch is not None:
        watch.figures = figures
        watch.built(out, written, figures=len(figures), drawn=len(figures) - reused,
                    pdf=None if timestamp is None else "later" if later else "kept", stages=timings)
        return 0
    kept_note = f" ({reused} kept from an earlier build: what they read is unchanged)" if reused else ""
    print(f"wrote {shown_path(out / 'report.html')}, {shown_path(out / 'reference.html')}"
          + ("" if timestamp is None else f", {shown_path(out / 'report.pdf')}, {shown_path(out / 'reference.pdf')}"
             + (" (kept from an earlier build: its source and figures are unchanged)" if kept_pdf else ""))
          + f", {len(figures)} figures{kept_note}, {shown_path(out / 'results.json')}"
          + ("" if chips is None else f", {shown_path(out / 'hardware' / 'index.html')} and "
             f"{len(chips['pages'])} chip reports")
          + f" in {total:.2f} s")
    return 0
