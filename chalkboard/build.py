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

import sys
import time
from contextlib import ExitStack
from pathlib import Path

from .cache import pdfcache
from .cache.forked import Forked
from .errors import BuildError
from .report.chip_reports import chip_reports
from .report.pdf import compile_pdf, compile_pdf_background, pdf_timestamp, source_date_epoch, unfitted
from .report.templates import environments
from .report.results_json import results_json_parts
from .runtime.staging import Staging, output_folder, shown_path

# the documents a build writes, each as NAME.html, NAME.typ and NAME.pdf: the report, which reads
# like the lecture, and the reference beside it (every closed form, claim card, table and source)
DOCUMENTS = ("report", "reference")
# the validation section's figures: name -> its key in the section's context
VALIDATION_FIGURES = {"validation": "svg", "validation_held_out": "held_out_svg"}


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
    if validation is not None:
        for name, key in VALIDATION_FIGURES.items():
            if name in figures:
                validation[key] = figures[name][0]
    ctx["sprite"] = lighten(ctx["sections"]).sprite()
    for n, (svg, _) in figures.items():
        put(f"figures/{n}.svg", svg)
    for doc in DOCUMENTS:
        put(f"{doc}.html", html_env.get_template(f"{doc}.html.j2").render(ctx))


class _Stages:
    """Each stage's time, and what it computed and what it kept: its own note, and the SymPy
    results it had to compute (none where the kept or shipped ones served); printed unless quiet."""

    def __init__(self, quiet: bool):
        self.quiet, self.timings, self.solved = quiet, [], 0
        self.start = self.t = time.perf_counter()

    def done(self, name: str, note: str = "") -> None:
        dt = time.perf_counter() - self.t
        self.timings.append((name, dt))
        registry = sys.modules.get("derivations")
        fresh = len(registry.REGISTRY.fresh) if registry is not None and hasattr(registry, "REGISTRY") else 0
        parts = [note] if note else []
        if fresh > self.solved:
            parts.append(f"{fresh - self.solved:,} SymPy results computed")
        self.solved = fresh
        if not self.quiet:
            print(f"  {name:<10} {dt:6.2f} s" + (f"   ({'; '.join(parts)})" if parts else ""), file=sys.stderr)
        self.t = time.perf_counter()


def build(root: Path, args, process=None, watch=None) -> int:
    """The report, built from the inputs ``args`` names into its output folder. ``process``: the
    figure process forked as the command started (chalkboard/report/figure_process.py, standby),
    or None (the figures not kept are drawn by a process forked once the build knows them).
    ``watch``: the edit loop (chalkboard/watch/loop.py), or None. Given, nothing is printed, a PDF
    not kept is handed to its warm Typst process (``watch.compile``) instead of compiled here, the
    page is committed with the previous PDF (``watch.keep_pdf``), and ``watch.built`` is told
    what was done; the loop writes the new PDF, and the stamp, once Typst is done."""
    return _Build(root, args, process, watch).run()


class _Build:
    """One build's stages, in order: gather (the inputs), compute (derive, validate, check,
    evaluate; the figures and the audit started beside them), render, write. What a stage makes,
    a later one reads from here."""

    def __init__(self, root: Path, args, process, watch):
        self.root, self.args, self.process, self.watch = root, args, process, watch
        self.log = _Stages(quiet=watch is not None)
        self.written: dict = {}

    def run(self) -> int:
        self.out = output_folder(self.root, self.args.out)   # a bad --out fails before anything is computed
        source_date_epoch()
        if self.watch is None:
            print("chalkboard build", file=sys.stderr)
        self.gather()
        self.compute()
        with ExitStack() as stack:
            self.staged = stack.enter_context(Staging(self.out))
            self.render(stack)
            self.write()
            self.staged.commit()
        self.kept.save()
        self.log.done("write")
        return self.summary()

    def put(self, rel: str, content) -> None:
        self.written[rel] = self.staged.write(rel, content)

    # -- gather --------------------------------------------------------------------------------
    def gather(self) -> None:
        from .data.loader import load, read_yaml

        root, args = self.root, self.args
        data = load(root, args.hardware_file, args.models_file, getattr(args, "prices_file", "prices.yaml"))
        if getattr(args, "model_config", None):
            from .evaluation.configmodel import add_config_model
            add_config_model(data, args.model_config)
        if data.config_model:
            m = data.models[data.config_model]
            print(f"  note: {m.file}: read as model {m.id}: {'; '.join(m.assumed)}", file=sys.stderr)
        if getattr(args, "model", None) is None:  # --model not given: the config's model, else the featured one
            from .data.featured import FEATURED_MODEL
            args.model = data.config_model or FEATURED_MODEL
        self.claims_path = root / args.claims_file
        self.claims_doc, self.has_claims = None, False   # no claims file: the report has no audit section
        if self.claims_path.exists() or self.claims_path.is_symlink() or args.claims_file != "claims.yaml":
            self.claims_doc = read_yaml(self.claims_path, args.claims_file)  # encoding, size, nesting, aliases: one line each
            self.has_claims = True
        self.measurements_file = getattr(args, "measurements_file", "measurements.yaml")
        measured = root / self.measurements_file
        self.has_measurements = (measured.exists() or measured.is_symlink()
                                 or self.measurements_file != "measurements.yaml")  # none: no validation section
        self.timestamp = None if args.no_pdf else pdf_timestamp(data)
        self.data = data
        self.log.done("load")

    # -- compute -------------------------------------------------------------------------------
    def compute(self) -> None:
        from derivations import REGISTRY  # importing the lecture modules declares and solves everything

        from .evaluation.evaluate import Scenario
        self.log.done("derive", f"{len(REGISTRY.quantities):,} quantities; SymPy's results "
                                + ("kept" if REGISTRY.saved else "solved"))
        self.overrides = dict(getattr(self.args, "set_pairs", {}) or {})
        self.parts = self.watch.kept if self.watch is not None else None   # the edit loop's parts of earlier builds
        if self.parts is not None:
            from .cache import incremental
            self.parts.use(self.data)
        self.sc = Scenario(self.data, self.args.hardware, self.args.model, self.overrides)
        self.validate()
        self.start_beside()
        from .evaluation.check import check_all
        from .evaluation.results import evaluate_all
        self.rep = check_all(REGISTRY)
        if not self.rep.ok:
            raise BuildError("dimension check failed: " + "; ".join(self.rep.failures))
        self.log.done("check")
        self.res = evaluate_all(self.data, self.overrides) if self.parts is None \
            else incremental.evaluate(self.parts, self.data, self.overrides)
        if self.res.errors:
            raise BuildError("evaluation failed: " + self.res.errors[0])
        self.sc.value("step_time")
        self.log.done("evaluate", f"{len(self.res.values):,} chip x model pairs, {self.res.count_ok:,} numbers")

    def validate(self) -> None:
        """The published measurements against the bound, and the engine model fitted to them; the
        claims read and checked before anything is drawn (the figures mark their rules of thumb)."""
        from .audit import read_claims
        from .report.figures import MARKED_RULES_OF_THUMB

        parts, self.validation, self.checked = self.parts, None, []
        if parts is not None:
            from .cache import incremental
        if self.has_measurements:
            from . import validation as val
            records = val.load_measurements(self.root, self.data, self.measurements_file)
            self.checked = val.evaluate_all(self.data, records) if parts is None else incremental.measurements(parts, records)
            fitted = val.efficiency_model(self.checked, self.data) if parts is None \
                else incremental.efficiency(parts, self.checked, self.data)
            self.validation = val.for_report(self.checked, fitted, self.measurements_file)
            self.fitted = fitted
            self.sc.evidence = lambda: fitted   # the featured numbers' expected efficiencies (expected_mfu, expected_mbu)
        self.claims = None
        if self.has_claims:
            self.claims = read_claims(self.data, self.claims_path, self.args.claims_file, self.claims_doc) \
                if parts is None else incremental.claims(parts, self.claims_path, self.args.claims_file, self.claims_doc)
        self.refs = {q: v for q in MARKED_RULES_OF_THUMB
                     if self.claims is not None and (v := self.claims.rule_of_thumb(q)) is not None}
        self.log.done("validate", f"{len(self.checked):,} records checked, the engine model "
                      + ("kept (engine_fit.json: fitted to these runs)" if self.fitted.shipped else "fitted")
                      if self.validation else "")

    def start_beside(self) -> None:
        """The figures not kept, drawn on the other core from here on, and the claims evaluated in a
        process of their own, beside the check and the evaluation."""
        from .audit import run_audit
        from .cache.figcache import FigureCache
        from .report.figure_process import Drawing
        from .report.figures_validation import figure_svg, held_out_points, held_out_svg, points

        if self.parts is not None:
            from .cache import incremental
        extra = {"validation": (figure_svg, points(self.checked)),
                 "validation_held_out": (held_out_svg, (held_out_points(self.checked, self.fitted), self.fitted.band))
                 } if self.validation is not None else {}
        self.kept = FigureCache(self.root, getattr(self.args, "program", None), recheck=True)   # under what they read
        self.drawing = Drawing(self.data, self.args.hardware, self.args.model, self.overrides, extra, self.refs,
                               self.kept, self.process)
        self.auditing = None
        if self.has_claims:
            self.auditing = Forked("auditing the claims", run_audit, self.data, self.claims_path, self.args.claims_file,
                                   None, self.claims) if self.parts is None \
                else Forked("auditing the claims", incremental.audit, self.parts, self.claims)

    # -- render --------------------------------------------------------------------------------
    def render(self, stack: ExitStack) -> None:
        """results.json (written as it is made: 300 MB at 6,400 pairs, never held whole) while this
        process waits for the audit and the figures made beside it; the pages' context; in the edit
        loop the new numbers first; the figures; the two documents' Typst sources."""
        from derivations import REGISTRY

        from .report.context import attach_figures, context, shared_tables
        from .report.svgpage import lighten

        data, sc, parts, watch = self.data, self.sc, self.parts, self.watch
        self.results = self.staged.writing("results.json", results_json_parts(data, self.res, REGISTRY,
                                                                              None if parts is None else parts.json))
        if self.auditing is not None:
            self.results.write_while(lambda: not self.auditing.ready())
        audit = self.auditing.result() if self.auditing is not None else None
        if parts is not None and audit is not None:
            from .cache import incremental
            audit, new = audit
            incremental.take(parts, new)
        self.log.done("audit", "" if audit is None else f"{len(audit.verdicts):,} claims judged")   # made beside the stages before
        self.html_env, self.typ_env = environments(self.root)
        self.audit_ctx = audit.for_report() if audit else None
        self.check_ctx = {"definitions": self.rep.definitions, "equations": self.rep.equations,
                          "evaluations": self.res.count_ok}
        self.shared = shared_tables(data, sc.model.id, parts)
        self.ctx = ctx = context(data, sc, {}, audit=self.audit_ctx, check=self.check_ctx, validation=self.validation,
                                 shared=self.shared)
        self.log.done("render")
        self.early = watch is not None and not self.drawing.finished() and bool(watch.figures)
        if self.early:   # the edit loop: the new numbers first, then the figures, then the PDF
            numbers_first(ctx, sc, self.drawing, watch, self.validation, self.html_env, self.put)
            self.written["results.json"] = self.results.finish()
            watch.keep(self.staged.path, [f"{doc}.{ext}" for doc in DOCUMENTS for ext in ("pdf", "typ")])
            self.staged.commit()
            watch.numbers(self.out)
            self.staged = stack.enter_context(Staging(self.out))   # the figures and the PDF follow in a fresh one
            watch.keep(self.staged.path, ["results.json"])
        else:
            self.results.write_while(lambda: not self.drawing.finished())
        self.figures = figures = self.drawing.wait()
        if self.validation is not None:
            for name, key in VALIDATION_FIGURES.items():
                self.validation[key] = figures[name][0]
        self.log.done("figures", f"{len(self.drawing.drawn)} drawn, {len(figures) - len(self.drawing.drawn)} kept")
        attach_figures(ctx, figures, sc)
        ctx["sprite"] = lighten(ctx["sections"]).sprite()   # the page's figures share one set of glyphs
        # two documents: the report, which reads like the lecture, and the reference beside it
        self.typ_srcs = {doc: self.typ_env.get_template(f"{doc}.typ.j2").render(**ctx) for doc in DOCUMENTS}
        self.chips = self.chip_reports() if getattr(self.args, "all_hardware", False) else None

    def chip_context(self, chip_sc=None, chips=None) -> dict:
        """A chip's report's context: the featured one's, or one for ``chip_sc``; its links reach
        the reference two folders up."""
        from .report.context import context

        c = dict(self.ctx) if chip_sc is None else context(self.data, chip_sc, {}, audit=self.audit_ctx, check=self.check_ctx,
                                                           validation=self.validation, shared={**self.shared, **chips})
        c.update({k: "../../" + self.ctx[k] for k in ("ref", "main", "ref_pdf", "main_pdf")})
        return c

    def chip_reports(self) -> dict:
        featured, chip_pdf = self.chip_context(), getattr(self.args, "chip_pdf", False)
        chips = chip_reports(self.data, self.sc, self.overrides, self.refs, self.figures,
                             (self.html_env.get_template("report.html.j2").render(**featured),
                              self.typ_env.get_template("report.typ.j2").render(**featured) if chip_pdf else None),
                             self.html_env, self.typ_env, self.chip_context, self.kept, typst=chip_pdf)
        self.log.done("hardware", f"{len(chips['pages'])} chip reports; their figures: {chips['drawn']} drawn, "
                                  f"{chips['kept']} kept")
        return chips

    # -- write ---------------------------------------------------------------------------------
    def write(self) -> None:
        """The figures, the pages and the PDFs (kept, or compiled on the other core while this one
        writes the pages and what is left of results.json), the chips' reports, and the stamp."""
        for n, (svg, _) in self.figures.items():
            self.put(f"figures/{n}.svg", svg)
        self.pdfs()
        if self.chips is not None:
            self.chip_files()
        if getattr(self.args, "fingerprint", None) and not self.later:  # lets an unchanged rebuild skip the work
            from .cache.uptodate import STAMP, fingerprint, stamp
            # only if nothing hashed changed during the build (else the next one builds again)
            if fingerprint(self.root, getattr(self.args, "fingerprinted", self.args)) == self.args.fingerprint:
                self.staged.write(STAMP, stamp(self.args.fingerprint, self.written))

    def pdfs(self) -> None:
        """Each document's PDF: kept (the same source, figures, date, fonts and Typst), compiled by
        the edit loop's Typst after the page, or compiled in a forked process now."""
        timestamp, watch, staged = self.timestamp, self.watch, self.staged
        svgs = {n: svg for n, (svg, _) in self.figures.items()}
        kept, compiling, keys = {}, {}, {}
        if timestamp is not None:
            for doc, src in self.typ_srcs.items():
                keys[doc] = pdfcache.key(src, svgs, timestamp)
                got = pdfcache.get(self.root, keys[doc])
                if got is not None:
                    kept[doc] = got
                elif watch is not None and doc == "report":   # compiled by the loop's Typst, after the page
                    watch.compile(src, svgs, timestamp, keys[doc])
                else:
                    compiling[doc] = compile_pdf_background(staged.path, timestamp, src)
        self.later = later = watch is not None and timestamp is not None and "report" not in kept
        for doc in DOCUMENTS:
            self.put(f"{doc}.html", self.html_env.get_template(f"{doc}.html.j2").render(self.ctx))
        if not self.early:
            self.written["results.json"] = self.results.finish()
        for doc, src in self.typ_srcs.items():
            if timestamp is None:
                self.put(f"{doc}.typ", unfitted(src))   # no PDF: Typst is never imported
            elif later and doc == "report":
                watch.keep_pdf(staged.path)   # the previous PDF stays until the new one is written
            else:
                fitted, pdf_bytes = kept.get(doc) or compiling[doc].result()
                self.put(f"{doc}.typ", fitted)
                self.put(f"{doc}.pdf", pdf_bytes)
                if doc not in kept:
                    pdfcache.put(self.root, keys[doc], fitted, pdf_bytes)
        self.kept_pdf = "report" in kept
        self.log.done("pdf", "" if timestamp is None else "; ".join(
            f"{doc} {'kept' if doc in kept else 'after the page' if later and doc == 'report' else 'compiled'}"
            for doc in self.typ_srcs))

    def chip_files(self) -> None:
        chip_pdf = getattr(self.args, "chip_pdf", False)
        for chip in self.chips["pages"]:
            folder = f"hardware/{chip['id']}"
            if chip_pdf:
                for n, svg in chip["figures"].items():
                    self.put(f"{folder}/figures/{n}.svg", svg)
                if self.timestamp is None:
                    self.put(f"{folder}/report.typ", unfitted(chip["typ"]))
                else:
                    fitted, pdf_bytes = compile_pdf(self.staged.path / folder, self.timestamp, chip["typ"])
                    self.put(f"{folder}/report.typ", fitted)
                    self.put(f"{folder}/report.pdf", pdf_bytes)
            self.put(f"{folder}/report.html", chip["html"])
        self.put("hardware/index.html", self.chips["index"])
        if chip_pdf:
            self.log.done("chip pdfs")

    def summary(self) -> int:
        """What was written: told to the edit loop, else one line."""
        out, figures, chips = self.out, self.figures, self.chips
        total = time.perf_counter() - self.log.start
        reused = sum(1 for n in figures if n not in self.drawing.drawn)
        if self.watch is not None:
            self.watch.figures = figures
            self.watch.built(out, self.written, figures=len(figures), drawn=len(figures) - reused,
                             pdf=None if self.timestamp is None else "later" if self.later else "kept",
                             stages=self.log.timings)
            return 0
        kept_note = f" ({reused} kept from an earlier build: what they read is unchanged)" if reused else ""
        pdfs = "" if self.timestamp is None else (
            f", {shown_path(out / 'report.pdf')}, {shown_path(out / 'reference.pdf')}"
            + (" (kept from an earlier build: its source and figures are unchanged)" if self.kept_pdf else ""))
        hardware = "" if chips is None else (f", {shown_path(out / 'hardware' / 'index.html')} and "
                                             f"{len(chips['pages'])} chip reports")
        print(f"wrote {shown_path(out / 'report.html')}, {shown_path(out / 'reference.html')}{pdfs}"
              f", {len(figures)} figures{kept_note}, {shown_path(out / 'results.json')}{hardware}"
              f" in {total:.2f} s")
        return 0
