"""What the edit loop keeps in memory from one rebuild to the next, each part under a digest of
exactly the data it read: the claims as read, each claim's verdict, each measurement's bound,
each chip x model pair's evaluation and its lines of results.json. A rebuild redoes only the parts
whose reads changed: after an edit to one chip, its eight pairs, the claims and measurements
that read it, and nothing else.

What a part read is traced as the figure cache traces a figure (chalkboard/cache/figcache.py:
every entry looked up, every table seen whole), except a pair's evaluation, which is done for
many pairs at once: a pair reads its own chip and model and the price, tier, source and file
tables (tests/cli/test_watch_incremental.py checks that no pair reads another chip or model, and
that a rebuild gives what a full build of the same inputs gives, byte for byte).

Kept only in this process: the program cannot change under it (an edit to the program starts a
new worker, chalkboard/watch/__init__.py), so a part is a function of its reads alone.
"""
from __future__ import annotations

import dataclasses
import hashlib
import pickle

from .figcache import SETTINGS, WHOLE, plain, read_digest, traced

MISS = object()
PAIR_TABLES = ("prices", "tiers", "sources", "files")   # what every pair reads whole


def digest(x) -> str:
    return hashlib.sha256(repr(plain(x)).encode()).hexdigest()


class Kept:
    def __init__(self):
        self.parts: dict = {}     # (kind, key) -> ({read: digest}, value)
        self.json: dict = {}      # pair -> what results_json_parts kept of its lines
        self.data = None
        self.digests: dict = {}   # read -> digest, for this build's data

    def use(self, data) -> None:
        """The data of the build under way (every lookup is checked against it)."""
        self.data, self.digests = data, {}
        self.fresh: dict = {}     # the parts put since: what a forked process sends back
        self.settings = digest(tuple(getattr(data, f) for f in SETTINGS))

    def digest(self, read) -> str:
        got = self.digests.get(read)
        if got is None:
            got = self.digests[read] = read_digest(self.data, read)
        return got

    def get(self, kind: str, key):
        got = self.parts.get((kind, self.settings, key))
        if got is not None and all(self.digest(r) == d for r, d in got[0].items()):
            return got[1]
        return MISS

    def put(self, kind: str, key, reads, value) -> None:
        self.parts[(kind, self.settings, key)] = part = ({r: self.digest(r) for r in reads}, value)
        self.fresh[(kind, self.settings, key)] = part

    def traced(self, kind: str, key, fn, *args):
        """``fn(data, *args)``, kept under ``key`` and what it read of the data."""
        got = self.get(kind, key)
        if got is MISS:
            log: set = set()
            got = fn(traced(self.data, log), *args)
            self.put(kind, key, log, got)
        return got



# -- the parts ----------------------------------------------------------------------------------
def claims(kept: Kept, path, label: str, doc):
    """The claims as read_claims reads them, kept while the file and what it reads of the data
    are unchanged."""
    from ..audit import read_claims

    return kept.traced("claims", (str(path), label, digest(doc)), lambda data: read_claims(data, path, label, doc))


def audit(kept: Kept, claims_):
    """The audit, as run_audit makes it, each claim's verdict kept under the claim and what it
    read; and the parts new in this call (the audit runs in a forked process: they are sent back
    with it, for ``take``)."""
    from sympy.core.parameters import evaluate as sympy_evaluate

    from ..audit import audit_of, evaluate_claim

    kept.fresh = {}
    chips = digest(claims_.chips)
    verdicts = []
    for c in claims_.claims:
        key = (digest(c), chips)
        got = kept.get("verdict", key)
        if got is MISS:
            log: set = set()
            got = pickle.dumps(evaluate_claim(traced(kept.data, log), c, claims_.chips, _values(kept, key, log)),
                               protocol=5)
            kept.put("verdict", key, log, got)
        # a copy, its SymPy objects rebuilt as they were built: evaluated again, an unevaluated
        # form (factor_terms' 3*(x/2 + 2*y)) would come back distributed, printed otherwise
        with sympy_evaluate(False):
            verdicts.append(pickle.loads(got))   # a copy: the steps below and Audit add to it
    return audit_of(verdicts), kept.fresh


def _values(kept: Kept, claim_key, log: set):
    """The keeper of a claim's evaluated entries (audit/setups.py, _value): each value (or the
    reason it has none) kept under the claim and what that value read; what it read is also what
    the claim read (``log``)."""
    from ..errors import InputError, MissingInput

    def value(key, compute):
        got = kept.get("value", (claim_key, key))
        if got is not MISS:
            reads = kept.parts["value", kept.settings, (claim_key, key)][0]   # what it read, digested
        else:
            reads = set()
            try:
                got = ("value", compute(traced(kept.data, reads)))
            except MissingInput as e:
                got = ("missing", str(e))
            except InputError as e:
                got = ("error", str(e))
            kept.put("value", (claim_key, key), reads, got)
        log.update(reads)
        kind, v = got
        if kind == "missing":
            raise MissingInput(v)
        if kind == "error":
            raise InputError(v)
        return v
    return value


def take(kept: Kept, new: dict) -> None:
    """Parts made in a forked process, kept in this one."""
    kept.parts.update(new)


def measurements(kept: Kept, records):
    """validation.evaluate_all, each measurement's result kept under what it read."""
    from ..validation import evaluate_record

    return [kept.traced("measurement", digest(rec), evaluate_record, rec) for rec in records]


def efficiency(kept: Kept, results, data):
    """validation.efficiency_model (the engine model and its held-out error), kept while the
    measurements' results and what the fit reads of the data are unchanged."""
    from ..validation import efficiency_model

    key = digest([(r.record.id, r.efficiency, r.batch, r.context, r.regime) for r in results])
    return kept.traced("efficiency", key, lambda d: efficiency_model(results, d))


def evaluate(kept: Kept, data, overrides: dict):
    """evaluate_all: the pairs whose chip, model or shared tables changed evaluated again (all
    at once, as evaluate_all does), the others as kept."""
    from ..evaluation.results import AllResults, evaluate_all

    fields = ("values", "missing", "inputs", "fit", "flags", "formats")
    shared = digest(sorted(overrides.items()))
    pairs = [(h, m) for h in data.hardware for m in data.models]
    reads = {p: [("hardware", p[0]), ("models", p[1]), *((t, WHOLE) for t in PAIR_TABLES)] for p in pairs}
    got = {p: kept.get("pair", (p, shared)) for p in pairs}
    todo = [p for p in pairs if got[p] is MISS]
    if todo:
        hws, ms = {h for h, _ in todo}, {m for _, m in todo}
        part = data if len(todo) == len(pairs) else dataclasses.replace(
            data, hardware={h: e for h, e in data.hardware.items() if h in hws},
            models={m: e for m, e in data.models.items() if m in ms})
        res = evaluate_all(part, overrides)
        if res.errors:
            return res
        for p in res.values:
            got[p] = tuple(getattr(res, f)[p] for f in fields)
            kept.put("pair", (p, shared), reads[p], got[p])
    out = AllResults()
    for p in pairs:
        for f, v in zip(fields, got[p]):
            getattr(out, f)[p] = v
        out.count_ok += len(out.values[p])
        out.count_na += len(out.missing[p])
    return out
