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
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import jinja2

from .data import CONTROL_CHARS, SAFE_URL
from .errors import InputError, OutputError


class BuildError(Exception):
    pass


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
    return html, typ


def compile_pdf(folder: Path, timestamp: int) -> bytes:
    """The PDF of ``folder``/report.typ (its figures beside it), dated ``timestamp``: reproducible."""
    import typst

    try:
        return typst.compile(str(folder / "report.typ"), root=str(folder), timestamp=timestamp)
    except Exception as e:  # typst reports source errors as exceptions with a message
        raise BuildError(f"Typst could not compile the PDF: {str(e).strip().splitlines()[0]}") from None


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
    from .compiled import declared
    from .fmt import split_base
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
            "values": {n: {**dict(zip(("value", "unit"), split_base(v, declared(n)[0]))),
                           **({"feasible": False, "infeasible": flags[n]} if n in flags else {})}
                       for n, v in vals.items()},
            "not_applicable": res.missing[(hid, mid)],
            "inputs": res.inputs[(hid, mid)],
        }
    doc = {"quantities": quantities, "hardware": list_hardware(data), "models": list_models(data),
           "results": pairs}
    return _dump(_rounded(doc))


def _dump(doc: dict) -> str:
    """JSON with one line per entry of each top-level mapping (one quantity, chip, model or chip x
    model pair a line): readable with grep and diff, and written by json's fast C encoder, which
    indented output would not use."""
    enc = lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False)  # noqa: E731
    parts = []
    for key in sorted(doc):
        inner = doc[key]
        if isinstance(inner, dict) and inner:
            body = ",\n".join(f"  {enc(k)}: {enc(inner[k])}" for k in sorted(inner))
            parts.append(f" {enc(key)}: {{\n{body}\n }}")
        else:
            parts.append(f" {enc(key)}: {enc(inner)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _rounded(x):
    """Floats to 12 significant digits: the last bits depend on the order of float operations
    (the compiled path works in base units), not on the data."""
    if isinstance(x, float):
        return float(f"{x:.12g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


# -- the output folder: built beside, exchanged in one step ------------------------------------
OUTPUT_NAMES = frozenset({"report.html", "report.pdf", "report.typ", "results.json", "figures",
                          ".chalkboard-stamp"})
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

    def write(self, rel: str, content: str | bytes) -> None:
        path = self.path / rel
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True)
            os.chmod(path.parent, 0o755)
        with open(path, "xb") as f:
            f.write(content.encode("utf-8") if isinstance(content, str) else content)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(path, 0o644)

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
    from .data import DataError, check_counts, load, read_yaml

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
    data = load(root, args.hardware_file, args.models_file, getattr(args, "model_config", None))
    if data.config_model:
        m = data.models[data.config_model]
        print(f"  note: {m.file}: read as model {m.id}: {'; '.join(m.assumed)}", file=sys.stderr)
    if getattr(args, "model", None) is None:  # --model not given: the config's model, else the featured one
        from . import FEATURED_MODEL
        args.model = data.config_model or FEATURED_MODEL
    claims_path = root / args.claims_file
    if claims_path.exists() or claims_path.is_symlink() or args.claims_file != "claims.yaml":
        read_yaml(claims_path, args.claims_file)  # encoding, size, nesting, aliases: one line each
        has_claims = True
    else:
        has_claims = False  # no claims file: the report has no audit section
    measurements_file = getattr(args, "measurements_file", "measurements.yaml")
    has_measurements = ((root / measurements_file).exists() or (root / measurements_file).is_symlink()
                        or measurements_file != "measurements.yaml")  # none: no validation section
    timestamp = None if args.no_pdf else pdf_timestamp(data)
    t = stage("load", t)
    from derivations import REGISTRY  # importing the lecture modules declares and solves everything

    from .audit import run_audit
    from .check import check_all
    from .evaluate import Scenario
    from .figures import draw_all_background
    from .report import attach_figures, context
    from .results import evaluate_all
    t = stage("derive", t)
    rep = check_all(REGISTRY)
    if not rep.ok:
        raise BuildError("dimension check failed: " + "; ".join(rep.failures))
    t = stage("check", t)
    overrides = dict(getattr(args, "set_pairs", {}) or {})
    sc = Scenario(data, args.hardware, args.model, overrides)
    check_counts(sc.overrides)
    res = evaluate_all(data, overrides)
    if res.errors:
        raise BuildError("evaluation failed: " + res.errors[0])
    sc.value("step_time")
    t = stage("evaluate", t)
    audit = run_audit(data, claims_path, args.claims_file) if has_claims else None
    t = stage("audit", t)
    validation = None
    if has_measurements:
        from . import validation as val
        checked = val.evaluate_all(data, val.load_measurements(root, data, measurements_file))
        validation = val.for_report(checked, measurements_file)
    t = stage("validate", t)
    refs = {}
    for q in ("drain_time", "hardware_ratio"):
        if audit is not None and audit.rule_of_thumb(q) is not None:
            refs[q] = audit.rule_of_thumb(q)
    extra = {"validation": (lambda: val.figure_svg(checked))} if validation is not None else {}
    figures_ready = draw_all_background(data, args.hardware, args.model, overrides, refs, extra)  # other core
    html_env, typ_env = environments(root)
    ctx = context(data, sc, {}, audit=audit.for_report() if audit else None,
                  check={"definitions": rep.definitions, "equations": rep.equations,
                         "evaluations": res.count_ok}, validation=validation)
    rjson = results_json(data, res, REGISTRY)
    t = stage("render", t)
    try:
        figures = figures_ready()
    except RuntimeError as e:
        raise BuildError(str(e)) from None
    if validation is not None:
        validation["svg"] = figures["validation"][0]
    t = stage("figures", t)  # the wait for the figures drawn beside the render stage
    attach_figures(ctx, figures, sc)
    html = html_env.get_template("report.html.j2").render(**ctx)
    typ_src = typ_env.get_template("report.typ.j2").render(**ctx)

    try:
        with Staging(out) as staged:
            written = {}

            def put(rel, content):
                staged.write(rel, content)
                written[rel] = content.encode("utf-8") if isinstance(content, str) else content
            for n, (svg, _) in figures.items():
                put(f"figures/{n}.svg", svg)
            put("report.typ", typ_src)
            if timestamp is not None:  # compiled from the staged report.typ and figures
                put("report.pdf", compile_pdf(staged.path, timestamp))
            t = stage("pdf", t)
            put("results.json", rjson)
            put("report.html", html)
            if getattr(args, "fingerprint", None):  # lets an unchanged rebuild skip the work
                from .uptodate import STAMP, stamp
                staged.write(STAMP, stamp(args.fingerprint, written))
            staged.commit()
    except OSError as e:
        where = e.filename if e.filename and not str(e.filename).startswith(str(out.parent / ".")) else out
        raise OutputError(f"cannot write {_shown(Path(where))}: {e.strerror or e} "
                          "(the previous output is unchanged)") from None
    t = stage("write", t)
    total = time.perf_counter() - t_start
    print(f"wrote {_shown(out / 'report.html')}"
          + ("" if timestamp is None else f", {_shown(out / 'report.pdf')}")
          + f", {len(figures)} figures, {_shown(out / 'results.json')} in {total:.2f} s")
    return 0
