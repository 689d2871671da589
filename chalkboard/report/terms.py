"""A closed form too long for a page, shown by its named terms.

Expanded down to the inputs, a quantity such as the step under a layout runs over more than a page:
one run of symbols nobody reads. Its definition already names its terms (the compute time, the
reads, the collectives), so the reference shows the definition and then each derived term's own
closed form, one formula a term. A term still too long is shown by its definition and a link to
its own entry, where its terms are shown in turn: unfolded here, the same long terms came back under
every quantity that reads them (the reference's PDF ran to 450 pages, most of it repeats).
Substituting each term's closed form into the definition gives the closed form in full; `eval`
prints it whole.
"""
from __future__ import annotations

from derivations import REGISTRY

from ..typeset.linebreak import kept_formula

MAX_LINES = 8   # lines of a formula at the page's width (typeset/linebreak.py) past which it is split


def line_count(typst) -> int:
    """Lines a formula is set over (linebreak.typst_lines separates them by a Typst line break)."""
    return str(typst).count(" \\ ") + 1


def _ordered_terms(name: str) -> list:
    """The derived quantities the definition of ``name`` reads, in the order its text names them."""
    from ..typeset import printers
    q = REGISTRY[name]
    text = printers.text(q.expr)
    subs = [REGISTRY.q(s) for s in q.expr.free_symbols]
    subs = [s for s in subs if s is not None and not s.is_input]
    return sorted(subs, key=lambda s: (text.find(printers.text(s.sym)) % (len(text) + 1), s.name))


# by_terms' answers: they read the derivations alone (which a process never changes: an edit to
# them starts a new watch worker), and every chip's report of --all-hardware asks the same ones
_TERMS: dict = {}


def by_terms(name: str, kind: str) -> list[dict] | None:
    """``kind`` ("closed form" or "board form") of ``name`` as a list of formulas, each
    {"name", "meaning", "role", "mathml", "typst"}: its definition, then each term's ``kind``
    (a term too long itself: its definition, then its terms); None when ``kind`` fits MAX_LINES."""
    if (name, kind) not in _TERMS:
        _TERMS[name, kind] = _by_terms(name, kind)
    return _TERMS[name, kind]


def _by_terms(name: str, kind: str) -> list[dict] | None:
    _, mathml, typst = kept_formula(kind, name)
    if line_count(typst) <= MAX_LINES or not _ordered_terms(name):
        return None
    _, ml, ty = kept_formula("definition", name)
    out = [{"name": name, "meaning": REGISTRY[name].meaning, "role": "definition", "depth": 0,
            "mathml": ml, "typst": ty}]
    for sub in _ordered_terms(name):
        _, ml, ty = kept_formula(kind, sub.name)
        role = kind
        if line_count(ty) > MAX_LINES and _ordered_terms(sub.name):   # its own entry shows its terms
            _, ml, ty = kept_formula("definition", sub.name)
            role = "definition"
        out.append({"name": sub.name, "meaning": sub.meaning, "role": role, "depth": 1, "mathml": ml, "typst": ty})
    return out


__all__ = ["MAX_LINES", "by_terms", "line_count"]
