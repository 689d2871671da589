"""An unchanged rebuild: skip the work when nothing the output depends on has changed.

A build leaves ``.chalkboard-stamp`` in its output folder: a fingerprint of everything the
output depends on (the program's own files, the data, claims and measurement files, the
lecture (its seeds and the chapter text the claims quote), the command's options, SOURCE_DATE_EPOCH, the versions of Python and of the
libraries that compute, draw and typeset, and any matplotlibrc with matplotlib's font list), and a hash of every file it wrote. The next `build` with the same
fingerprint whose output files are all still there, byte for byte, has nothing to do. Any
difference, a missing stamp or `--force` means a full build. Only hashlib and json are used
here, so the check costs no library imports.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
from pathlib import Path

from ..runtime.home import program

STAMP = ".chalkboard-stamp"
CODE = ("build.py", "derivations", "chalkboard", "units", "templates", "lecture")   # lecture/: the seeds and the chapters the claims quote
LIBRARIES = ("sympy", "pint", "numpy", "matplotlib", "jinja2", "PyYAML", "typst",
             "pyparsing", "kiwisolver", "fonttools", "pillow", "contourpy", "cycler")   # the last: matplotlib's own


PACKAGES = ("chalkboard", "derivations", "units")   # installed: beside the bundled data, not in it (runtime/home.py)


def _files(root: Path, rel: str):
    p = (program(root) if rel in PACKAGES else root) / rel
    if p.is_file():
        yield p
    elif p.is_dir():
        for f in sorted(p.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                yield f


def hash_files(h, root: Path, names) -> None:
    """Feed ``h`` each file under ``names`` (files or folders, relative to ``root``): its path and
    the SHA-256 of its bytes."""
    for rel in names:
        for f in _files(root, str(rel)):
            h.update(str(f.relative_to(root) if f.is_relative_to(root) else f).encode())
            h.update(hashlib.sha256(f.read_bytes()).digest())


def environment() -> dict:
    """What the output depends on outside the project: the libraries' versions, Python's, and
    every matplotlibrc matplotlib may read with its list of fonts (matplotlib_settings)."""
    env = {"python": f"{sys.version} {sys.platform}", **dict(library_versions())}
    for p in matplotlib_settings():
        env[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return env


_VERSION = re.compile(r"^Version:[ \t]*(\S.*?)\s*$", re.M)


@functools.cache
def library_versions() -> tuple:
    """(library, its installed version or None) for each of LIBRARIES, read once a process (they do
    not change while it runs; the build asks twice, for the stamp and for the figures' digest),
    from the 'Version:' line of each one's metadata: what importlib.metadata.version returns,
    without parsing the whole file as an e-mail message (several times as long, on every build)."""
    from importlib import metadata

    found = []
    for lib in LIBRARIES:
        try:
            dist = metadata.distribution(lib)
        except metadata.PackageNotFoundError:
            found.append((lib, None))
            continue
        header = (dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "").split("\n\n", 1)[0]
        m = _VERSION.search(header)
        found.append((lib, m.group(1) if m else dist.version))
    return tuple(found)


def matplotlib_settings() -> list[Path]:
    """Every matplotlibrc matplotlib may read (matplotlib.matplotlib_fname's candidates, on every
    platform: more than it reads, never fewer) and its list of fonts, without importing it."""
    home, env = Path.home(), os.environ.get
    configs = [env("MPLCONFIGDIR"), env("XDG_CONFIG_HOME") and str(Path(env("XDG_CONFIG_HOME")) / "matplotlib"),
               str(home / ".config" / "matplotlib"), str(home / ".matplotlib")]
    caches = [env("MPLCONFIGDIR"), env("XDG_CACHE_HOME") and str(Path(env("XDG_CACHE_HOME")) / "matplotlib"),
              str(home / ".cache" / "matplotlib"), str(home / ".matplotlib")]
    found = []
    for rc in [env("MATPLOTLIBRC"), "matplotlibrc", *[c and str(Path(c) / "matplotlibrc") for c in configs]]:
        p = Path(rc) if rc else None
        if p is not None and p.is_dir():
            p = p / "matplotlibrc"
        if p is not None and p.is_file():
            found.append(p)
    for c in caches:
        if c and Path(c).is_dir():
            found += sorted(Path(c).glob("fontlist-*.json"))
    return found


def inputs(args) -> list[str]:
    """Every file or folder a build reads, relative to the project (or absolute): the program and
    the lecture (CODE), and the data files the command names."""
    return [*CODE, args.hardware_file, args.models_file, getattr(args, "prices_file", "prices.yaml"),
            args.claims_file,
            getattr(args, "measurements_file", "measurements.yaml"),
            *([str(Path(args.model_config).resolve())] if getattr(args, "model_config", None) else [])]


def hashed_files(root: Path, args) -> list[Path]:
    """The files the fingerprint hashes, one by one."""
    return [f for rel in inputs(args) for f in _files(root, str(rel))]


def fingerprint(root: Path, args) -> str:
    h = hashlib.sha256()
    names = inputs(args)
    hash_files(h, root, names)
    options = {"hardware": args.hardware, "model": args.model, "set": sorted(args.set or []),
               "no_pdf": bool(args.no_pdf), "all_hardware": bool(getattr(args, "all_hardware", False)),
               "chip_pdf": bool(getattr(args, "chip_pdf", False)), "SOURCE_DATE_EPOCH": os.environ.get("SOURCE_DATE_EPOCH"),
               "files": [str(x) for x in names], **environment()}
    h.update(json.dumps(options, sort_keys=True).encode())
    return h.hexdigest()


def stamp(fp: str, written: dict[str, str]) -> str:
    """The stamp's text: the fingerprint and the SHA-256 of each file written (path relative to
    the folder -> hex digest)."""
    return json.dumps({"fingerprint": fp, "files": dict(sorted(written.items()))}, indent=1, sort_keys=True) + "\n"


def up_to_date(out: Path, fp: str) -> bool:
    try:
        doc = json.loads((out / STAMP).read_text(encoding="utf-8"))
        if doc.get("fingerprint") != fp:
            return False
        files = doc["files"]
        on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and p.name != STAMP}
        if set(files) != on_disk:
            return False
        return all(hashlib.sha256((out / rel).read_bytes()).hexdigest() == digest for rel, digest in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False
