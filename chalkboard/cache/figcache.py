"""Figures kept between builds, each under exactly what it read.

A figure is a function of the program, its arguments (chip, model, ``--set``, the claims' rules of
thumb) and the entries of the data it reads. It is drawn with the data traced (``traced``): every
chip, model, price, tier, source or file name it looks up is recorded, and a table it goes
through whole (every chip, by launch year) is recorded as the whole table. Of a chip, model or
price looked up, each of its values read is recorded on its own (its HBM bandwidth, say), with
the entry's other fields (name, tags) as one; going through its values whole records the entry. The SVG is kept in
.cache/figures/ with a digest of each entry read. A later build draws it again only if the
program, the libraries or its arguments changed, or one of those entries differs
(``FigureCache.lookup``): after an edit to one chip, the figures that list every chip are drawn
again, and the featured chip's figures are not.

The files are pickles in the project's own .cache/ folder, trusted like the project's code (as
chalkboard/cache/symcache.py's), each checked against its own digest before it is read
(chalkboard/cache/sealed.py). A cache that cannot be read or written is ignored: the figures are the
same either way, only drawn.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import tempfile
import time
from pathlib import Path

from ..runtime.home import cache
from . import sealed

FOLDER = Path(".cache") / "figures"
KEEP = 1024            # kept figures at most (the newest; --all-hardware keeps some 190 a version of the data); a figure is some 0.05-0.2 MB
TABLES = ("hardware", "models", "prices", "tiers", "sources", "files")   # Data's tables, traced
SETTINGS = ("default_price", "config_model")   # Data's other fields: part of every figure's key
WHOLE = "*"            # the key under which a read of a whole table is recorded
PRESENT, FIELDS, VALUE = "?", ".", "values"   # an entry's reads: whether it is there; its fields but
                                              # its values (and whether it is there); one of its values
CODE = ("chalkboard", "derivations", "units")   # what draws a figure (the templates do not)
MISS = object()        # lookup: not kept, or kept under entries that have changed since


class _WholeRead:
    """A traced mapping's reads of all its items at once: recorded as the whole (``_whole``)."""

    def copy(self):
        self._whole()
        return dict(dict.items(self))

    def __or__(self, other):
        self._whole()
        return dict(dict.items(self)) | other


class _Traced(_WholeRead, dict):
    """A table of the data that records what is read from it into ``log``: (table, id) for one
    entry looked up, present or not; (table, WHOLE) for anything that sees the whole table
    (iteration, its ids, its length, a copy). An entry with values (a chip, a model, a price) is
    looked up as a copy whose values record what is read of them (``_TracedValues``): (table,
    id, FIELDS) for the entry's other fields, (table, id, VALUE, name) for each value; (table,
    id, PRESENT) for a test of whether it is there."""

    def __init__(self, table: dict, name: str, log: set):
        super().__init__(table)
        self._name, self._log = name, log
        self._views: dict = {}

    def _one(self, key):
        self._log.add((self._name, key))

    def _whole(self):
        self._log.add((self._name, WHOLE))

    def _view(self, key, entry):
        if not isinstance(getattr(entry, "values", None), dict) or not dataclasses.is_dataclass(entry):
            self._one(key)
            return entry
        self._log.add((self._name, key, FIELDS))
        view = self._views.get(key)
        if view is None or view[0] is not entry:
            view = self._views[key] = (entry, dataclasses.replace(
                entry, values=_TracedValues(entry.values, (self._name, key), self._log)))
        return view[1]

    def __getitem__(self, key):
        if not super().__contains__(key):
            self._one(key)
        return self._view(key, super().__getitem__(key))

    def get(self, key, default=None):
        if not super().__contains__(key):
            self._one(key)
            return default
        return self._view(key, super().__getitem__(key))

    def __contains__(self, key):
        self._log.add((self._name, key, PRESENT))
        return super().__contains__(key)


    __hash__ = None


class _TracedValues(_WholeRead, dict):
    """An entry's values, recording into ``log`` each one read (entry + (VALUE, name)), and the
    whole entry (``entry``) for anything that sees them all."""

    def __init__(self, values: dict, entry: tuple, log: set):
        super().__init__(values)
        self._entry, self._log = entry, log

    def _one(self, key):
        self._log.add((*self._entry, VALUE, key))

    def _whole(self):
        self._log.add(self._entry)

    def __getitem__(self, key):
        self._one(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._one(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._one(key)
        return super().__contains__(key)


    def __reduce__(self):   # pickled (kept with a result) as the plain values it holds
        return dict, (dict(super().items()),)

    __hash__ = None


def _seeing_the_whole(method):
    def whole(self, *args):
        self._whole()
        return method(self, *args)
    whole.__name__ = method.__name__
    return whole


# what sees a table whole: iterating it, its ids, values, items and length, comparing or printing it
for _name in ("__iter__", "__len__", "keys", "values", "items", "__eq__", "__ne__", "__repr__", "__reversed__"):
    setattr(_Traced, _name, _seeing_the_whole(getattr(dict, _name)))
    setattr(_TracedValues, _name, _seeing_the_whole(getattr(dict, _name)))


def traced(data, log: set):
    """``data`` with each of its tables recording what is read from it into ``log``."""
    return dataclasses.replace(data, **{t: _Traced(getattr(data, t), t, log) for t in TABLES})


_ONCE: dict = {}   # once_per_data's one result: key -> (its reads with their digests, the result)


def once_per_data(data, key, compute):
    """``compute(data)``, computed once in this process for as long as what it read is unchanged:
    work that several figures share (plan_frontier's search of every priced chip, the same for
    each chip's report) is done once, not once a figure. What it read is recorded into ``data``'s
    log where ``data`` is traced, as if it had been computed here: the figure's key stays whole."""
    tables = {t: getattr(data, t) for t in TABLES}
    plain = dataclasses.replace(data, **{t: dict.copy(v) if isinstance(v, _Traced) else v
                                         for t, v in tables.items()})
    got = _ONCE.get(key)
    if got is None or any(read_digest(plain, read) != digest for read, digest in got[0].items()):
        log: set = set()
        result = compute(traced(plain, log))
        got = ({read: read_digest(plain, read) for read in log}, result)
        _ONCE.clear()   # one kept: the last
        _ONCE[key] = got
    for table in tables.values():
        if isinstance(table, _Traced):
            table._log.update(got[0])
            break
    return got[1]


def read_digest(data, read: tuple) -> str:
    """The digest of what ``read`` (table, id or WHOLE) gives in ``data`` (an absent id too): of
    the values themselves (``plain``), not of their pickle, which also records which objects share
    memory: a copy of the data (what the figure process on standby is sent, unpickled) has the
    same values in other objects, and must digest as the data it was copied from does."""
    table, key, *part = read
    tab = getattr(data, table)
    if key == WHOLE:
        value = list(tab.items())
    elif key not in tab:
        value = ("absent",)
    elif not part:
        value = ("entry", tab[key])
    elif part == [PRESENT]:
        value = ("present",)
    elif part == [FIELDS]:
        entry = tab[key]
        value = ("fields", type(entry).__qualname__,
                 *((f.name, getattr(entry, f.name)) for f in dataclasses.fields(entry) if f.name != VALUE))
    else:
        values = tab[key].values
        value = ("value", values[part[1]]) if part[1] in values else ("no value",)
    return hashlib.sha256(repr(plain(value)).encode()).hexdigest()


def plain(x):
    """``x`` as nested tuples of strings, numbers and None, each object with its type: equal for
    equal values whichever objects hold them (the data's entries: dataclasses of dicts, lists,
    strings and Pint quantities); anything else as its pickle."""
    if x is None or type(x) in (str, int, float, bool):
        return x
    if type(x) in (list, tuple):
        return (type(x).__name__, *map(plain, x))
    if type(x) is dict:
        return ("dict", *((plain(k), plain(v)) for k, v in x.items()))
    if type(x) in (set, frozenset):   # no order of its own (a string's hash changes from run to run)
        return (type(x).__name__, *sorted((plain(v) for v in x), key=repr))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):   # every attribute, as its pickle had
        fields = getattr(x, "__dict__", None) or {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
        return (type(x).__qualname__, *((k, plain(v)) for k, v in fields.items()))
    if hasattr(x, "magnitude") and hasattr(x, "unit_items"):   # a Pint quantity
        return ("quantity", plain(x.magnitude), tuple(sorted(x.unit_items())))
    return (type(x).__qualname__, pickle.dumps(x, protocol=4))


def code_digest(root: Path) -> str:
    """A digest of what draws the figures: the program's files and what the output depends on
    outside the project (the Python and library versions, any matplotlibrc and matplotlib's font
    list: uptodate.environment)."""
    from .uptodate import environment, hash_files

    h = hashlib.sha256()
    hash_files(h, root, CODE)
    h.update(json.dumps(environment(), sort_keys=True).encode())
    return h.hexdigest()


class FigureCache:
    """The figures kept in ``root``/.cache/figures. ``key`` names a figure with its arguments;
    ``lookup`` gives what was kept under it if every entry it read is as it was, else MISS;
    ``put`` keeps a newly drawn one and ``save`` writes what was put (from the build's entry).
    A file is named KEY-VERSION.pickle, VERSION a digest of what the figure read."""

    def __init__(self, root: Path, code: str | None = None, recheck: bool = False):
        """``code``: the program's digest (code_digest), taken before the program's modules were
        imported; ``recheck``: take it again when saving, and keep nothing if it changed (a file
        edited or a library installed during the build: what was drawn is not what is hashed)."""
        self.root, self.folder, self.recheck = root, cache(root) / FOLDER.name, recheck
        self.code = code if code is not None else code_digest(root)
        self._digests: dict = {}
        self._new: dict = {}
        self._versions: dict | None = None   # key -> its kept files, most recently used first

    def key(self, name: str, *arguments) -> str:
        return hashlib.sha256(pickle.dumps((self.code, name, arguments), protocol=4)).hexdigest()[:40]

    def figure_key(self, name: str, data, *arguments) -> str:
        """The key of a figure drawn from ``data`` with ``arguments``: with the data's settings
        (every field of Data that is not a traced table)."""
        return self.key(name, *arguments, *(getattr(data, f) for f in SETTINGS))

    def lookup(self, key: str, data):
        """The figure kept under ``key`` whose every read gives what it gave then, or MISS. A key
        may have several versions (one per version of what the figure read: another hardware
        file, an edit undone); the most recently used is tried first."""
        if self._versions is None:
            self._versions = {}
            try:
                files = sorted(self.folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
            except OSError:
                files = []
            for path in files:
                self._versions.setdefault(path.stem.split("-")[0], []).append(path)
        for path in self._versions.get(key, []):
            try:
                kept = sealed.read(path)   # checked against its digest: an altered file is drawn again
                reads, figure = kept["reads"], kept["figure"]
                same = all(self.digest(data, read) == digest for read, digest in reads.items())
            except Exception:   # unreadable, or not what save writes: drawn again
                continue
            if same:
                try:
                    os.utime(path)   # used: kept the longest (save keeps the most recently used)
                except OSError:
                    pass
                return figure
        return MISS

    def digest(self, data, read) -> str:
        if read not in self._digests:
            self._digests[read] = read_digest(data, read)
        return self._digests[read]

    def put(self, key: str, reads: dict, figure) -> None:
        version = hashlib.sha256(pickle.dumps(sorted(reads.items()), protocol=4)).hexdigest()[:16]
        self._new[f"{key}-{version}"] = {"reads": reads, "figure": figure}

    def save(self) -> None:
        """Write the figures put since the last save, and drop the oldest beyond KEEP."""
        if not self._new:
            return
        if self.recheck and code_digest(self.root) != self.code:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for name, kept in self._new.items():
                fd, tmp = tempfile.mkstemp(prefix=".figure-", dir=self.folder)
                try:
                    with os.fdopen(fd, "wb") as f:
                        f.write(sealed.dumps(kept))
                    os.replace(tmp, self.folder / f"{name}.pickle")
                except BaseException:
                    Path(tmp).unlink(missing_ok=True)
                    raise
            self._new = {}
            files = sorted(self.folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in files[KEEP:]:
                old.unlink(missing_ok=True)
            for left in self.folder.glob(".figure-*"):   # a write a killed build left unfinished
                if left.stat().st_mtime < time.time() - 600:
                    left.unlink(missing_ok=True)
        except OSError:
            pass   # not kept: the next build draws them again
