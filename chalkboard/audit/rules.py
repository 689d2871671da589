"""The judging rules: kinds and verdicts, the tolerance and the band, a rule of thumb over many chips."""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field


from units import parse

from ..typeset.fmt import plural, sig, unit_words


KINDS = ("derived", "arithmetic", "identity", "spec", "input", "sourced", "qualitative")
KIND_TEXT = {
    "derived": "tested against hardware and model data",
    "arithmetic": "the lecture's own numbers recomputed",
    "identity": "verified symbolically by SymPy",
    "spec": "a product or ratio of published figures, read from the data files",
    "input": "an input or a definition read back (no derivation between the data and the claim)",
    "sourced": "judged against a cited external figure",
    "qualitative": "not judged, with the reason",
}
HOLDS, ROUGHLY, FAILS, ND = "holds", "holds roughly", "does not hold", "not judged"
INCONCLUSIVE = "inconclusive"   # computed, but the evidence does not measure what the sentence says
# A claim that holds is counted by what its evidence is: "holds" only when data independent of the
# lecture decide it; "recomputed" when the lecture's own numbers or algebra are redone (they can only
# show a slip); "definition" when the check restates how the derivations encode the lecture.
RECOMPUTED, DEFINITION = "recomputed", "definition"
# A verdict that a reasonable sweep (a context, a batch, a number format, another chip in scope) turns
# to the other side -- a miss into a hold, or a hold into a miss -- is neither an error of the lecture
# nor a confirmation: it depends on that choice, and the card names the choices on each side.
DEPENDS = "depends"
REASONABLE_SWEEPS = ("context ", "batch ", "format ", "KV cache in fp8", "fp8 activations", "on ", "NVIDIA chips only",
                     "without announced parts", "choice ")
VERDICTS = (HOLDS, RECOMPUTED, DEFINITION, ROUGHLY, DEPENDS, FAILS, INCONCLUSIVE, ND)
CSS = {HOLDS: "v-holds", RECOMPUTED: "v-recomputed", DEFINITION: "v-definition", ROUGHLY: "v-roughly",
       DEPENDS: "v-depends", FAILS: "v-fails", INCONCLUSIVE: "v-inconclusive", ND: "v-nd"}
AGREES = (HOLDS, RECOMPUTED, DEFINITION)   # the verdicts in which the claim agrees with its check


def verdict_side(verdict: str) -> str | None:
    """The side of a verdict a sweep may turn it to: "holds" (holds, roughly, recomputed, definition),
    "fails", or None for a verdict that is no judgement (depends, inconclusive, not judged)."""
    if verdict in AGREES or verdict == ROUGHLY:
        return "holds"
    return "fails" if verdict == FAILS else None
DEFAULT_TOLERANCE = 1.3      # "about X": within ×/÷ 1.3
DEFAULT_BAND = 2.0           # "roughly": within ×/÷ 2 (for tolerances of 1.3 or more)
TWO_THIRDS = 2 / 3
GIB_PER_GB = (parse("1 GiB") / parse("1 GB")).to("").magnitude
SPARSE_HEADLINE_FACTOR = 2   # 2:4 structured sparsity: the headline FLOP/s is twice the dense rate
FORMATS = ("fp4", "fp8", "int8", "bf16")
CONTEXTS = (1024, 8192, 32768, 131072)
BATCHES = (1, 64, 512, 2000, 16384)
EDGE = 1e-9                 # a value exactly on a band edge counts as inside it
PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")


# -- judging ------------------------------------------------------------------------------------
LISTED = 60   # names a verdict's text lists at most: a longer list is read by no one (and Typst
              # cannot set a paragraph of over 512 ids, each kept from breaking by a show rule)


def listed(names: list[str]) -> str:
    """``names`` joined with commas, the first LISTED of them and how many more."""
    if len(names) <= LISTED:
        return ", ".join(names)
    return ", ".join(names[:LISTED]) + f" and {len(names) - LISTED} more"


def judge(value: float, low: float, high: float, tolerance: float = DEFAULT_TOLERANCE,
          band: float = DEFAULT_BAND, compare: str | None = None) -> str:
    """One number against a claim. ``tolerance`` and ``band`` are factors (×/÷), both > 1.

    A value claim (low = high) or a range [low, high] holds within [low/tolerance,
    high·tolerance] and holds roughly within [low/band, high·band]; a non-positive value
    never holds. A bound ('>' or '<' low) holds on the claimed side, holds roughly when it misses
    by no more than the tolerance (a 9% miss of "> 2" is not an error while a 1.9x miss of a value
    is "roughly"), and otherwise does not.
    """
    if compare == ">":
        if value > low:
            return HOLDS
        return ROUGHLY if low > 0 and value > 0 and value * tolerance * (1 + EDGE) >= low else FAILS
    if compare == "<":
        if value < low:
            return HOLDS
        return ROUGHLY if low > 0 and value <= low * tolerance * (1 + EDGE) else FAILS
    if not value > 0:
        return FAILS
    if low / tolerance * (1 - EDGE) <= value <= high * tolerance * (1 + EDGE):
        return HOLDS
    if low / band * (1 - EDGE) <= value <= high * band * (1 + EDGE):
        return ROUGHLY
    return FAILS


def judge_rule(values: list[float], low: float, high: float, tolerance: float = DEFAULT_TOLERANCE,
               band: float = DEFAULT_BAND, compare: str | None = None) -> tuple[str, float, int]:
    """A rule of thumb over several distinct chips: (verdict, median, number within tolerance).

    Holds when the median holds, at least two thirds of the values do and none is outside the
    band; holds roughly when the median holds but fewer values do or one is outside the band, or
    when the median is only within the band; does not hold when the median is outside the band.
    """
    med = statistics.median(values)
    each = [judge(v, low, high, tolerance, band, compare) for v in values]
    inside = each.count(HOLDS)
    on_median = judge(med, low, high, tolerance, band, compare)
    if on_median != HOLDS:
        return on_median, med, inside
    if FAILS in each:   # a counted chip outside the band: the rule bends there, so at most "roughly"
        return ROUGHLY, med, inside
    return (HOLDS if inside >= TWO_THIRDS * len(values) - EDGE else ROUGHLY), med, inside


def miss_text(value: float, low: float, high: float, compare: str | None) -> str:
    """How far a value that does not hold is from the claim."""
    if compare in (">", "<"):
        if low == 0:
            return f"on the wrong side of {sig(low)}"
        return f"misses the bound by {abs(value / low - 1) * 100:.0f}%"
    if not value > 0:
        return "not a positive number"
    factor = value / high if value > high else low / value
    return f"off by ×{sig(factor)}"


def miss_factor(value: float, low: float, high: float, compare: str | None) -> float | None:
    """How many times a value that does not hold is off the claim (a bound: off its edge); None when
    the value is not positive or the bound is 0, where no factor says it."""
    if not value > 0 or not low > 0:
        return None
    if compare == ">":
        return low / value
    if compare == "<":
        return value / low
    return value / high if value > high else low / value


def size_text(sized: list[tuple[float, str]]) -> str:
    """An error's size as a range over the choices that keep it an error: 'off by ×4–×230 (×4 with X;
    ×230 as set)'; one choice: 'off by ×230 (as set; no other choice keeps it an error)'."""
    sized = sorted(sized)
    lo, hi = sized[0], sized[-1]
    if len(sized) == 1:
        return f"off by ×{sig(hi[0])} over 1 choice ({hi[1]})"
    if sig(lo[0]) == sig(hi[0]):   # no choice tried moves it: name them all
        return f"off by ×{sig(hi[0])} in each of {len(sized)} choices ({listed([x[1] for x in sized])})"
    return f"off by ×{sig(lo[0])}–×{sig(hi[0])} over {len(sized)} choices (×{sig(lo[0])} with {lo[1]}; ×{sig(hi[0])} with {hi[1]})"


def loose_text(value: float, low: float, compare: str | None) -> str:
    """How far a bound that holds is from being tight ("loose by ×2.15"); "" when within 1%."""
    if compare not in (">", "<") or not (low > 0 and value > 0):
        return ""
    factor = value / low if compare == ">" else low / value
    return f"loose by ×{sig(factor)}" if factor >= 1.01 else ""


def band_text(part) -> str:
    lo, hi = part.low, part.high
    if part.compare:
        edge = lo / part.tolerance if part.compare == ">" else lo * part.tolerance
        return f"{part.compare} {sig(lo)} (the claimed side; roughly up to {sig(edge)}, ×/÷{sig(part.tolerance)})"
    t, b = part.tolerance, part.band
    return (f"×/÷{sig(t)}: {sig(lo / t)}–{sig(hi * t)}; roughly ×/÷{sig(b)}: "
            f"{sig(lo / b)}–{sig(hi * b)}")


def rule_of_thumb(claims: list, quantity: str):
    """The claimed value of the rule of thumb about ``quantity`` (a claim about it over many chips,
    e.g. "a drain time of about 20 ms"), for reference lines; None if the claims make none. It
    needs the claims only, not their evaluation."""
    for c in claims:
        if (c.kind in ("derived", "spec", "input") and c.quantity == quantity and len(c.hardware) > 1
                and not c.relative_to and not c.parts[0].compare):
            return c.parts[0].claimed[0]
    return None


# -- a verdict, as every kind of claim reports it ----------------------------------------------------
@dataclass
class Verdict:
    claim: object           # a claims.Claim (rules sits below the claims and imports nothing of them)
    verdict: str
    computed: dict | None = None
    computed_text: str = "–"
    detail: str = ""
    band: str = ""
    scope: str = ""
    values: dict = field(default_factory=dict)      # key -> {"value", "verdict", "counted", "mark", ...}
    inputs: list = field(default_factory=list)      # [{"name","value","source"}]
    formula: tuple | None = None                    # (text, mathml, typst), numbers substituted
    flips_if: list = field(default_factory=list)
    sensitivity: list = field(default_factory=list)
    fit: list = field(default_factory=list)         # set-ups that do not fit in HBM
    miss: str = ""
    loose: str = ""                                 # a bound that holds: how far from tight
    inherited_by: list = field(default_factory=list)
    inherited_from: str | None = None               # the card whose rejected number this claim reads
    decision: str = ""                              # the verdict as one sentence
    note: str | None = None
    why: str | None = None
    reading: str | None = None
    swept: list = field(default_factory=list)       # every sweep tried: "label: verdict (value)"
    unswept: str = ""                               # why no reasonable sweep applies, where none was tried
    derivation: list = field(default_factory=list)  # the deciding derivation, one step a derived quantity
    as_set: str = ""                                # the verdict on the claim's own set-up, before any sweep
    size: str = ""                                  # an error's size: a range over the choices that keep it one
    evidence: str = ""                              # what a number verdict rests on (evidence.py)
    evidence_why: str = ""


def unit_suffix(part) -> str:
    u = f"{part.unit:~P}"
    return f" {unit_words(plural(u))}" if u and u != "dimensionless" else ""
