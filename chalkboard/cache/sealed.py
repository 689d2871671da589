"""A kept file checked before it is used: its bytes carry their own SHA-256.

Each file of .cache/ (a figure, a PDF, SymPy's results) is written as a mark, the digest of what
follows and the pickle itself. Reading checks the digest before unpickling anything: a file
altered on disk (even by a change that keeps its length), cut short by a full disk, or written by
an older version of the program is not used, and the work it held is done again.
"""
from __future__ import annotations

import hashlib
import pickle

MARK = b"chalkboard-sealed-1\n"


class Broken(ValueError):
    """A kept file whose digest does not match its contents (or that carries none)."""


def dumps(obj) -> bytes:
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return MARK + hashlib.sha256(body).digest() + body


def loads(raw: bytes, unpickle=pickle.loads):
    """The object ``raw`` holds, if its digest matches; Broken otherwise."""
    head = len(MARK) + 32
    if not raw.startswith(MARK) or len(raw) < head:
        raise Broken("not a sealed file")
    body = raw[head:]
    if hashlib.sha256(body).digest() != raw[len(MARK):head]:
        raise Broken("its digest does not match its contents")
    return unpickle(body)


def read(path):
    """The object kept in ``path`` (Broken if it does not match its digest; OSError if unreadable)."""
    with open(path, "rb") as f:
        return loads(f.read())
