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

import calendar
import ctypes
import errno
import hashlib
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import jinja2

from . import pdfcache
from .data import CONTROL_CHARS, SAFE_URL
from .errors import BuildError, InputError, OutputError  # noqa: F401  (BuildError re-exported)
from .forked import Forked


# -- text that reaches the reader -------------------------------------------------------------
def visible(text: str) -> str:
    """Control and bidirectional-override characters made visible: ESC as ␛, U+202E as �."""
    def show(m):
        c = ord(m.group())
        return chr(0x2400 + c) if c < 0x20 else "␡" if c == 0x7F else "�"
    return CONTROL_CHARS.sub(show, text)


def _finalize(v):
    """Applied to every value a template prints (before HTML escaping): no raw control characters."""
    if isinstance(v, str) and CONTROL_CHARS.search(v):
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
    from .printers import typst_str  # loads the derivations: imported when rendering, not before
    return typst_str("" if s is None else str(s))


def _typst_text(s) -> str:
    """Data text in Typst markup: a string literal, shown verbatim; ';' ends the expression."""
    return f"#{_typst_str(s)};"


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
    typ.filters["tstr"] = _typst_str
    typ.filters["tx"] = _typst_text
    typ.filters["display"] = _typst_display
    return html, typ


# Typst does not break display formulas, so one wider than the text is scaled down to the text's
# width. Which ones are wide is measured by Typst itself, but only for formulas that might be:
# the printers give each formula an upper estimate of its width in em (printers._em); on the
# report's 737 display formulas the set width is at most 1.08x that estimate (0.95x above 30 em),
# and the text is 48.2 em wide (17 cm at 10 pt), so a formula estimated under 44 em always fits.
# tests/test_report_defects.py measures every formula of the report.
FIT_FROM_EM = 44.0
FIT_FROM_CHARS = 80   # Typst source without a width estimate: none under 131 characters fills a line
_MAYBE_WIDE = re.compile(r"^#fit\[\$ (.*) \$\]$", re.M)
SETTINGS_END = "// -- end of settings --"


def _typst_display(src: str) -> str:
    """A display formula; marked #fit[...] when it may be wider than the text (see fit_formulas)."""
    em = getattr(src, "em", None)
    wide = em >= FIT_FROM_EM if em is not None else len(src) >= FIT_FROM_CHARS
    return f"#fit[$ {src} $]" if wide else f"$ {src} $"


def fit_formulas(typ_src: str) -> str:
    """The report's Typst source with each display formula marked #fit[...] set as it is if it fits
    the text's width, else scaled down to it: one Typst query measures them all, with the
    report's own settings (page, font, size), so the PDF's layout needs no measuring pass."""
    wide = _MAYBE_WIDE.findall(typ_src)
    if not wide:
        return typ_src
    import typst

    settings = typ_src.split(SETTINGS_END, 1)[0]
    probe = [settings, "#layout(size => [#metadata(size.width.pt()) <chalkboard-width>])"]
    probe += [f"#context [#metadata(measure($ {f} $).width.pt()) <chalkboard-width>]" for f in wide]
    try:
        got = typst.query("\n".join(probe).encode("utf-8"), "<chalkboard-width>", field="value")
        text_width, *widths = json.loads(got)
    except Exception as e:  # typst reports source errors as exceptions with a message
        raise BuildError(f"Typst could not measure the formulas: {str(e).strip().splitlines()[0]}") from None
    if len(widths) != len(wide):
        raise BuildError(f"Typst measured {len(widths)} of {len(wide)} formulas")
    sizes = iter(widths)

    def place(m):
        w = next(sizes)
        if w <= text_width:
            return f"$ {m.group(1)} $"
        percent = math.floor(text_width / w * 1e4) / 100   # rounded down: never wider than the text
        return f"#scale({percent}%, reflow: true)[$ {m.group(1)} $]"
    return _MAYBE_WIDE.sub(place, typ_src)


def compile_pdf(folder: Path, timestamp: int, typ_src: str) -> tuple[str, bytes]:
    """The report's Typst source with its formulas fitted (fit_formulas) and its PDF, compiled with
    ``folder`` as root (the figures are read from there) and dated ``timestamp``: reproducible.
    Typst starts threads: a process that has called it must not fork (the child would wait on
    threads it does not have), so the build calls it in the forked process or after the last fork."""
    import typst

    fitted = fit_formulas(typ_src)
    try:
        return fitted, typst.compile(fitted.encode("utf-8"), root=str(folder), timestamp=timestamp)
    except Exception as e:  # typst reports source errors as exceptions with a message
        raise BuildError(f"Typst could not compile the PDF: {str(e).strip().splitlines()[0]}") from None


def compile_pdf_background(folder: Path, timestamp: int, typ_src: str) -> Forked:
    """compile_pdf in a forked process (Typst holds the interpreter while it compiles); its
    ``result()`` is (fitted source, PDF bytes)."""
    return Forked("compiling the PDF", compile_pdf, folder, timestamp, typ_src)


FALLBACK_DATE = "2026-04-29"   # the lecture's date, if no source gives an as-of date


def source_date_epoch() -> int | None:
    """SOURCE_DATE_EPOCH (reproducible-builds.org) as whole seconds, None if unset; InputError if malformed."""
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env is None or not env.strip():
        return None
    if not re.fullmatch(r"\d{1,12}", env.strip()) or int(env) > 253402300799:
        raise InputError(f"environment variable SOURCE_DATE_EPOCH={env[:40]!r}: expected a whole number "
                         "of seconds since 1970-01-01 (before the year 10000)")
    return int(env)


def pdf_timestamp(data) -> int:
    """Seconds since 1970 for the PDF's dates: SOURCE_DATE_EPOCH when set, else the newest as-of
    date among the sources (midnight UTC), so the PDF depends on the inputs only."""
    epoch = source_date_epoch()
    if epoch is not None:
        return epoch
    dates = []
    for src in data.sources.values():
        m = re.match(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?", str(src.as_of))
        if m and 1970 <= int(m.group(1)) <= 9999 and 1 <= int(m.group(2) or 1) <= 12:
            dates.append((int(m.group(1)), int(m.group(2) or 1), min(int(m.group(3) or 1), 28) or 1))
    y, mo, d = max(dates) if dates else tuple(int(x) for x in FALLBACK_DATE.split("-"))
    return calendar.timegm((y, mo, d, 0, 0, 0))


def results_json(data, res, registry) -> str:
    return "".join(results_json_parts(data, res, registry))


def results_json_parts(data, res, registry):
    """results.json as a sequence of strings (one per pair, after a head): the text
    ``json.dumps(..., sort_keys=True)`` gives each entry, one entry of each top-level mapping a
    line, written directly. An input's record shared by many pairs is written once and repeated."""
    from .compiled import declared
    from .fmt import base_splitter
    from .results import list_hardware, list_models

    def dumps(v):
        return json.dumps(v, sort_keys=True, ensure_ascii=False)

    quantities = {}
    for q in registry.derived_quantities():
        quantities[q.name] = {"unit": q.unit, "meaning": q.meaning, "sympy": str(registry.closed_form(q.name)),
                              "inputs": [leaf.name for leaf in registry.leaves(q.name)]}
    doc = _rounded({"hardware": list_hardware(data), "models": list_models(data), "quantities": quantities})
    for key in sorted(doc):   # "results" comes after these
        yield "{\n" if key == min(doc) else ",\n"
        yield _entries(dumps(key), doc[key], dumps)
    splitters = {q.name: base_splitter(declared(q.name)[0]) for q in registry.derived_quantities()}
    keys: dict[str, str] = {}
    units: dict[str, str] = {}
    records: dict[int, tuple] = {}

    def key_of(n):
        k = keys.get(n)
        if k is None:
            k = keys[n] = dumps(n)
        return k

    def record(rec):   # the same record (a chip's, a model's, a constant's) in many pairs: written once
        hit = records.get(id(rec))
        if hit is None or hit[0] is not rec:
            hit = records[id(rec)] = (rec, dumps({**rec, "value": _round12(rec["value"])}))
        return hit[1]

    yield ",\n \"results\": {"
    first = True
    for (hid, mid) in sorted(res.values, key=lambda p: f"{p[0]}|{p[1]}"):
        vals, flags, fit = res.values[(hid, mid)], res.flags[(hid, mid)], res.fit[(hid, mid)]
        entries = []
        for n in sorted(vals):
            mag, unit = splitters[n](vals[n])
            u = units.get(unit)
            if u is None:
                u = units[unit] = json.dumps(unit, ensure_ascii=False)
            v = repr(_round12(mag)) if type(mag) is float and math.isfinite(mag) else json.dumps(mag)
            if n in flags:
                entries.append(f'{key_of(n)}: {{"feasible": false, "infeasible": '
                               f'{json.dumps(flags[n], ensure_ascii=False)}, "unit": {u}, "value": {v}}}')
            else:
                entries.append(f'{key_of(n)}: {{"unit": {u}, "value": {v}}}')
        inputs = res.inputs[(hid, mid)]
        yield (f'{"" if first else ","}\n  {dumps(f"{hid}|{mid}")}: {{"feasibility": {dumps(fit["reason"])}, '
               f'"feasible": {dumps(fit["feasible"])}, "formats": {dumps(res.formats[(hid, mid)])}, '
               f'"hardware": {dumps(hid)}, '
               f'"inputs": {{{", ".join(f"{key_of(n)}: {record(inputs[n])}" for n in sorted(inputs))}}}, '
               f'"model": {dumps(mid)}, "not_applicable": {dumps(res.missing[(hid, mid)])}, '
               f'"values": {{{", ".join(entries)}}}}}')
        first = False
    yield "\n }\n}\n" if not first else "}\n}\n"


def _entries(key: str, inner, dumps) -> str:
    """One top-level entry: a mapping written one entry a line (readable with grep and diff, and
    written by json's fast C encoder, which indented output would not use)."""
    if isinstance(inner, dict) and inner:
        body = ",\n".join(f"  {dumps(k)}: {dumps(inner[k])}" for k in sorted(inner))
        return f" {key}: {{\n{body}\n }}"
    return f" {key}: {dumps(inner)}"


def _round12(x):
    return float(f"{x:.12g}") if isinstance(x, float) else x


def _rounded(x):
    """Floats to 12 significant digits: the last bits depend on the order of float operations
    (the compiled path works in base units), not on the data."""
    if isinstance(x, float):
        return _round12(x)
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


# -- the output folder: built beside, exchanged in one step ------------------------------------
OUTPUT_NAMES = frozenset({"report.html", "report.pdf", "report.typ", "results.json", "figures",
                          "hardware", ".chalkboard-stamp"})
# temp files that earlier versions of this program left inside the output folder
LEGACY_TEMP = re.compile(r"^\.(figures|report\.(html|pdf|typ)|results\.json)\.")


def _shown(p: Path) -> str:
    try:
        return os.path.relpath(p, Path.cwd()) if str(p).startswith(str(Path.cwd()) + os.sep) else str(p)
    except ValueError:
        return str(p)


def output_folder(root: Path, out_arg: str) -> Path:
    """The folder --out names, checked before anything is computed; OutputError in one line if it
    cannot be (re)placed: a file, a dangling link, under a file, or a folder holding other files."""
    arg = str(out_arg)
    if not arg.strip() or "\x00" in arg:
        raise OutputError(f"--out {arg!r}: not a usable folder name")
    out = Path(os.path.abspath(Path(arg) if Path(arg).is_absolute() else root / arg))
    try:
        if out.is_symlink():
            target = Path(os.path.realpath(out))
            if not target.exists():
                raise OutputError(f"--out {arg}: a symbolic link to {target}, which does not exist")
            out = target
        if out.exists() and not out.is_dir():
            raise OutputError(f"--out {arg}: exists and is not a folder")
        if out.parent == out:
            raise OutputError(f"--out {arg}: cannot replace the root folder")
        p = out.parent
        while not p.exists():
            if p.is_symlink():
                raise OutputError(f"--out {arg}: {p} is a symbolic link to something that does not exist")
            p = p.parent
        if not p.is_dir():
            raise OutputError(f"--out {arg}: {p} is a file, not a folder")
        if out.is_dir():
            foreign = sorted(n for n in os.listdir(out) if n not in OUTPUT_NAMES and not LEGACY_TEMP.match(n))
            if foreign:
                more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
                raise OutputError(f"--out {arg}: the folder holds files this program did not write "
                                  f"({', '.join(foreign[:3])}{more}); it replaces the whole folder, "
                                  "so choose a new or empty one")
    except OSError as e:
        raise OutputError(f"--out {arg}: {e.strerror or e}") from None
    return out


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    """Remove a file, link or folder we wrote (read-only folders included); errors ignored."""
    def retry(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            func(p)
        except OSError:
            pass
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, onerror=retry)
    except OSError:
        pass


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths a and b in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where
    the system or file system does not offer it."""
    fn = getattr(_libc(), "renameat2", None)
    if fn is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(str(a)), at_fdcwd, os.fsencode(str(b)), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


_LIBC = []


def _libc():
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True   # exists, owned by someone else
    return True


class Staging:
    """A fresh sibling of the output folder to write the whole output into; commit() exchanges it
    with the output folder. Leaving the block without commit() removes it."""

    def __init__(self, out: Path):
        self.out, self.path, self.committed = out, None, False
        self.prefix = f".{out.name}.tmp-"

    def _stale(self):
        """Recover from an earlier build killed mid-write: an old output moved aside (fallback
        path only) is moved back; every other leftover of a process that no longer runs goes."""
        parent = self.out.parent
        pat = re.compile(rf"^{re.escape(self.prefix)}(\d+)-(old-)?")
        for name in sorted(os.listdir(parent)):
            m = pat.match(name)
            if not m or _alive(int(m.group(1))):
                continue
            if m.group(2) and not self.out.exists() and not self.out.is_symlink():
                os.rename(parent / name, self.out)
                continue
            _remove(parent / name)

    def __enter__(self):
        parent = self.out.parent
        parent.mkdir(parents=True, exist_ok=True)
        self._stale()
        self.path = Path(tempfile.mkdtemp(prefix=f"{self.prefix}{os.getpid()}-", dir=parent))
        os.chmod(self.path, 0o755)
        return self

    def write(self, rel: str, content) -> str:
        """Write ``content`` (text, bytes, or text in parts, written as they come) to ``rel``;
        returns its SHA-256."""
        path = self.path / rel
        for folder in reversed(path.parents):
            if folder.is_relative_to(self.path) and not folder.is_dir():
                folder.mkdir()
                os.chmod(folder, 0o755)
        digest = hashlib.sha256()
        with open(path, "xb") as f:
            for part in [content] if isinstance(content, (str, bytes)) else content:
                chunk = part.encode("utf-8") if isinstance(part, str) else part
                digest.update(chunk)
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(path, 0o644)
        return digest.hexdigest()

    def commit(self) -> None:
        for d in [p for p in self.path.rglob("*") if p.is_dir()] + [self.path]:
            _fsync_dir(d)
        if not self.out.exists() and not self.out.is_symlink():
            os.rename(self.path, self.out)       # first build: nothing to replace
        elif not _exchange(self.path, self.out):
            # no atomic exchange here: move the old aside, then the new in (a later build moves
            # the old back if this process dies between the two renames)
            aside = self.out.parent / f"{self.prefix}{os.getpid()}-old-{self.path.name[-8:]}"
            os.rename(self.out, aside)
            os.rename(self.path, self.out)
            self.path = aside
        self.committed = True
        _fsync_dir(self.out.parent)
        _remove(self.path)                        # the old output, now beside

    def __exit__(self, exc_type, exc, tb):
        if self.path is not None and not self.committed:
            _remove(self.path)
        return False


def build(root: Path, args) -> int:
    from .data import check_counts, load, read_yaml

    t_start = time.perf_counter()
    timings = []

    def stage(name, t0):
        dt = time.perf_counter() - t0
        timings.append((name, dt))
        print(f"  {name:<10} {dt:6.2f} s", file=sys.stderr)
        return time.perf_counter()

    out = output_folder(root, args.out)   # a bad --out fails before anything is computed
    source_date_epoch()
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
        from . import FEATURED_MODEL
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
    from .check import check_all
    from .evaluate import Scenario
    from .figures import MARKED_RULES_OF_THUMB, Drawing
    from .report import attach_figures, context
    from .results import evaluate_all
    t = stage("derive", t)
    overrides = dict(getattr(args, "set_pairs", {}) or {})
    sc = Scenario(data, args.hardware, args.model, overrides)
    check_counts(sc.overrides)
    validation = None
    if has_measurements:
        from . import validation as val
        checked = val.evaluate_all(data, val.load_measurements(root, data, measurements_file))
        validation = val.for_report(checked, measurements_file)
        stats = val.summary(checked)
        sc.evidence = lambda: stats   # the featured numbers' expected efficiencies (expected_mfu, expected_mbu)
    # the claims, read and checked before anything is drawn: the figures mark their rules of thumb
    claims = read_claims(data, claims_path, args.claims_file, claims_doc) if has_claims else None
    refs = {q: v for q in MARKED_RULES_OF_THUMB
            if claims is not None and (v := claims.rule_of_thumb(q)) is not None}
    t = stage("validate", t)
    # every figure is drawn on the other core from here on
    extra = {"validation": (val.figure_svg, checked)} if validation is not None else {}
    from .figcache import FigureCache
    # figures kept from earlier builds under exactly what they read
    kept = FigureCache(root, getattr(args, "program", None), recheck=True)
    drawing = Drawing(data, args.hardware, args.model, overrides, extra, refs, kept)
    # the claims are evaluated in a process of their own beside the check and the evaluation
    auditing = Forked("auditing the claims", run_audit, data, claims_path, args.claims_file, None, claims) \
        if has_claims else None
    rep = check_all(REGISTRY)
    if not rep.ok:
        raise BuildError("dimension check failed: " + "; ".join(rep.failures))
    t = stage("check", t)
    res = evaluate_all(data, overrides)
    if res.errors:
        raise BuildError("evaluation failed: " + res.errors[0])
    sc.value("step_time")
    t = stage("evaluate", t)
    audit = auditing.result() if auditing is not None else None
    t = stage("audit", t)   # the wait for the audit made beside the stages before
    html_env, typ_env = environments(root)
    from .report import shared_tables
    audit_ctx = audit.for_report() if audit else None
    check_ctx = {"definitions": rep.definitions, "equations": rep.equations, "evaluations": res.count_ok}
    shared = shared_tables(data, sc.model.id)
    ctx = context(data, sc, {}, audit=audit_ctx, check=check_ctx, validation=validation, shared=shared)
    t = stage("render", t)
    figures = drawing.wait()
    if validation is not None:
        validation["svg"] = figures["validation"][0]
    t = stage("figures", t)  # the wait for the figures drawn beside the stages before
    attach_figures(ctx, figures, sc)
    typ_src = typ_env.get_template("report.typ.j2").render(**ctx)   # its formulas fitted when written
    chips = html = None
    if getattr(args, "all_hardware", False):
        html = html_env.get_template("report.html.j2").render(**ctx)
        chips = chip_reports(data, sc, overrides, refs, figures, (html, typ_src), html_env, typ_env,
                             lambda chip_sc: context(data, chip_sc, {}, audit=audit_ctx, check=check_ctx,
                                                     validation=validation, shared=shared))
        t = stage("hardware", t)

    try:
        with Staging(out) as staged:
            written = {}

            def put(rel, content):
                written[rel] = staged.write(rel, content)
            for n, (svg, _) in figures.items():
                put(f"figures/{n}.svg", svg)
            # the formulas are fitted and the PDF compiled (with the staged figures) on the other
            # core while this one writes results.json (written as it is made: 300 MB at 6,400
            # pairs, never held whole) and the page
            # (unless a PDF made from the same source, figures, date, fonts and Typst is kept)
            pdf_key = kept_pdf = pdf = None
            if timestamp is not None:
                pdf_key = pdfcache.key(typ_src, {n: svg for n, (svg, _) in figures.items()}, timestamp)
                kept_pdf = pdfcache.get(root, pdf_key)
                if kept_pdf is None:
                    pdf = compile_pdf_background(staged.path, timestamp, typ_src)
            put("results.json", results_json_parts(data, res, REGISTRY))
            put("report.html", html or html_env.get_template("report.html.j2").render(**ctx))
            if timestamp is None:
                put("report.typ", fit_formulas(typ_src))   # after the last fork: Typst starts threads
            else:
                fitted, pdf_bytes = kept_pdf or pdf.result()
                put("report.typ", fitted)
                put("report.pdf", pdf_bytes)
                if kept_pdf is None:
                    pdfcache.put(root, pdf_key, fitted, pdf_bytes)
            t = stage("pdf", t)
            if chips is not None:
                for chip in chips["pages"]:
                    folder = f"hardware/{chip['id']}"
                    if getattr(args, "chip_pdf", False):
                        for n, svg in chip["figures"].items():
                            put(f"{folder}/figures/{n}.svg", svg)
                        if timestamp is None:
                            put(f"{folder}/report.typ", fit_formulas(chip["typ"]))
                        else:
                            fitted, pdf_bytes = compile_pdf(staged.path / folder, timestamp, chip["typ"])
                            put(f"{folder}/report.typ", fitted)
                            put(f"{folder}/report.pdf", pdf_bytes)
                    put(f"{folder}/report.html", chip["html"])
                put("hardware/index.html", chips["index"])
                if getattr(args, "chip_pdf", False):
                    t = stage("chip pdfs", t)
            if getattr(args, "fingerprint", None):  # lets an unchanged rebuild skip the work
                from .uptodate import STAMP, fingerprint, stamp
                # only if nothing hashed changed during the build (else the next one builds again)
                if fingerprint(root, getattr(args, "fingerprinted", args)) == args.fingerprint:
                    staged.write(STAMP, stamp(args.fingerprint, written))
            staged.commit()
        kept.save()
    except OSError as e:
        where = e.filename if e.filename and not str(e.filename).startswith(str(out.parent / ".")) else out
        raise OutputError(f"cannot write {_shown(Path(where))}: {e.strerror or e} "
                          "(the previous output is unchanged)") from None
    t = stage("write", t)
    total = time.perf_counter() - t_start
    reused = sum(1 for n in figures if n not in drawing.drawn)
    kept_note = f" ({reused} kept from an earlier build: what they read is unchanged)" if reused else ""
    print(f"wrote {_shown(out / 'report.html')}"
          + ("" if timestamp is None else f", {_shown(out / 'report.pdf')}"
             + (" (kept from an earlier build: its source and figures are unchanged)" if kept_pdf else ""))
          + f", {len(figures)} figures{kept_note}, {_shown(out / 'results.json')}"
          + ("" if chips is None else f", {_shown(out / 'hardware' / 'index.html')} and "
             f"{len(chips['pages'])} chip reports")
          + f" in {total:.2f} s")
    return 0


# -- one report per chip (--all-hardware) --------------------------------------------------------
INDEX_QUANTITIES = ("balance_batch", "latency_floor", "cost_floor")
CHIP_INDEPENDENT_FIGURES = ("hardware_by_year", "validation", "lifecycle_compute_vs_tokens")   # drawn once, shared by every chip


def chip_order(data) -> list[str]:
    """Every chip, oldest first (launch year, then id), as the report's summary table orders them."""
    return sorted(data.hardware, key=lambda h: (data.hardware[h].values["launch_year"].quantity.magnitude, h))


def index_cell(sc, name: str) -> dict:
    """One headline number of a chip as the index shows it: the text `build.py eval` prints
    (display), the value and unit it prints with --json, and † with the reason where the set-up
    does not fit; a dash with the reason where an input is not published."""
    from .errors import MissingInput, NotApplicable
    from .fmt import fmt, split

    try:
        v = sc.value(name)
    except NotApplicable as e:
        return {"display": "n/a", "value": None, "unit": None, "why": str(e), "flag": None}
    except MissingInput as e:
        return {"display": "–", "value": None, "unit": None, "why": f"not published: {e}", "flag": None}
    mag, unit = split(v)
    return {"display": fmt(v), "value": mag, "unit": unit, "why": None, "flag": sc.flag(name)}


def _draw_chip_figures(data, chips, model, overrides, refs) -> dict:
    """chip -> {figure name: (SVG, chip drawn)} for ``chips``, leaving out the figures that are
    the same for every chip."""
    import warnings

    from .figures import FIGURES, draw_all
    out = {}
    for hw in chips:
        out[hw] = {}
        for name in FIGURES:
            if name in CHIP_INDEPENDENT_FIGURES:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                try:
                    out[hw].update(draw_all(data, hw, model, overrides, refs, {name}))
                except (RuntimeWarning, UserWarning) as w:  # values the figure cannot show: left out, said
                    print(f"  note: {hw}: figure {name} left out ({type(w).__name__}: {w})", file=sys.stderr)
    return out


def _draw_chips_background(data, chips, model, overrides, refs):
    """Draw the figures of ``chips`` in two forked processes (half the chips each) while the
    caller renders; returns a function that waits for them."""
    from .forked import results
    jobs = [Forked("drawing the chips' figures", _draw_chip_figures, data, group, model, overrides, refs)
            for group in (chips[0::2], chips[1::2])]

    def wait() -> dict:
        out = {}
        for part in results(jobs):
            out.update(part)
        return out
    return wait


def chip_reports(data, featured_sc, overrides, refs, featured_figures, featured_pages, html_env, typ_env,
                 make_context) -> dict:
    """A report for every chip with the featured model and workload, and the index page.

    Everything that does not depend on the chip (data, derivations, the evaluation of every
    pair, the audit, the validation, the summary tables, the figures by launch year and of the
    measurements) comes from the featured build; per chip only its scenario, its sections and its
    figures are made. Returns {"pages": [{id, html, typ, figures}], "index": html}."""
    from .evaluate import Scenario
    from .report import attach_figures

    model = featured_sc.model.id
    order = chip_order(data)
    others = [h for h in order if h != featured_sc.hw.id]
    figures_ready = _draw_chips_background(data, others, model, overrides, refs)
    common = {n: f for n, f in featured_figures.items() if n in CHIP_INDEPENDENT_FIGURES}
    contexts, rows = {}, []
    for hid in order:
        if hid == featured_sc.hw.id:
            sc = featured_sc   # its report is the featured one, already rendered
        else:
            sc = Scenario(data, hid, model, dict(overrides))
            contexts[hid] = (sc, make_context(sc))
        h = data.hardware[hid]
        price = h.values.get("rental_price")
        rows.append({
            "id": hid, "name": h.name, "vendor": h.tags.get("vendor", ""),
            "launch_year": int(h.values["launch_year"].quantity.magnitude),
            "formats": sc.formats_text(), "fit": sc.fit(),
            "price": None if price is None else {"text": price.text, "as_of": price.as_of,
                                                  "source": price.source.title, "note": price.note},
            "cells": {q: index_cell(sc, q) for q in INDEX_QUANTITIES},
        })
    drawn = figures_ready()
    pages = []
    for hid in order:
        if hid == featured_sc.hw.id:
            pages.append({"id": hid, "html": featured_pages[0], "typ": featured_pages[1],
                          "figures": {n: svg for n, (svg, _) in featured_figures.items()}})
            continue
        sc, ctx = contexts[hid]
        figs = {**drawn[hid], **{n: (svg, hid) for n, (svg, _) in common.items()}}  # the same for every chip
        figs = {n: figs[n] for n in featured_figures if n in figs}  # the featured report's order
        attach_figures(ctx, figs, sc)
        pages.append({"id": hid, "html": html_env.get_template("report.html.j2").render(**ctx),
                      "typ": typ_env.get_template("report.typ.j2").render(**ctx),
                      "figures": {n: svg for n, (svg, _) in figs.items()}})
    from derivations import REGISTRY
    index = html_env.get_template("hardware_index.html.j2").render(
        title=f"chalkboard: {featured_sc.model.name} on every chip",
        model=featured_sc.model.name, model_id=model, featured=featured_sc.hw.id,
        workload=[(n, fmt_value(featured_sc, n)) for n in ("batch", "context")],
        overrides=sorted(overrides.items()),
        columns=[{"name": q, "meaning": REGISTRY[q].meaning} for q in INDEX_QUANTITIES], rows=rows,
        priced=sum(r["price"] is not None for r in rows))
    return {"pages": pages, "index": index}


def fmt_value(sc, name: str) -> str:
    from .fmt import fmt
    return fmt(sc.value(name))
