"""What a number verdict rests on, as a skeptic reads it: "independent" only where some input a source
gives (a chip's, a model's, a price's figure, not the lecture) can move it. Apart from it:

* echo      -- the value reads no sourced figure: only constants, the workload and the lecture's numbers;
* identity  -- it reads sourced figures, but none moves it (x/x: a ratio of a quantity to itself);
* constant  -- its formula names the workload (context, batch), but no context or batch the audit
               tries moves it: the sentence's set-up does not enter what is judged;
* duplicate -- the same values on the same set-ups as an earlier card: one test said twice.

A holds of any of these is not counted as a hold on independent evidence (text.Audit.headline)."""
from __future__ import annotations

from derivations import REGISTRY

from ..evaluation.evaluate import InputError, MissingInput

from .claims import Claim
from .kinds import PUBLISHED
from .rules import FAILS, judge, miss_factor, REASONABLE_SWEEPS, size_text
from .setups import claim_depends_on, claim_scenario, leaves_of, eval_expr

INDEPENDENT, ECHO, IDENTITY, CONSTANT, DUPLICATE = "independent", "echo", "identity", "constant", "duplicate"
EVIDENCE = (INDEPENDENT, ECHO, IDENTITY, CONSTANT, DUPLICATE)
NUMBER_KINDS = ("derived", "spec", "input")   # the kinds whose evidence is read from the data files
NUDGE = 1.1          # a sourced figure raised by a tenth: does the value move?
MOVED = 1e-6         # a relative change below this is no move (rounding)


def _values(sc, claim: Claim) -> list:
    return [eval_expr(sc, p.expr) for p in claim.parts]


def sourced_inputs(claim: Claim) -> list[str]:
    """The inputs a source gives: the data files' figures the claim does not set, and the figures it sets
    from the source it names (Chinchilla's exponents), never the lecture's numbers."""
    leaves = leaves_of(claim)
    data = [n for n in leaves - set(claim.set) if n in REGISTRY.quantities and REGISTRY[n].origin in PUBLISHED]
    cited = [n for n in set(claim.set) & leaves] if claim.source else []
    return sorted(data + cited)


def moved_by(ctx, claim: Claim, hardware: str, model: str) -> list[str]:
    """The first sourced input that moves the claim's value on one set-up when raised by a tenth ([] if none)."""
    sourced = sourced_inputs(claim)
    try:
        base = _values(claim_scenario(ctx, claim, hardware, model), claim)
    except (MissingInput, InputError, ZeroDivisionError):
        return sourced    # cannot tell: take it as moved
    out = []
    for name in sourced:
        def nudge(sc, _hid, name=name):
            sc.fix(name, sc.input(name) * NUDGE)
        try:
            now = _values(claim_scenario(ctx, claim, hardware, model, tweak=nudge), claim)
        except (MissingInput, InputError, ZeroDivisionError):
            continue
        if any(b.magnitude == 0 and a.magnitude != 0 or b.magnitude != 0 and abs(float((a / b).to("").magnitude) - 1) > MOVED
               for a, b in zip(now, base)):
            return [name]    # one is enough: each nudge is a full evaluation
    return out


def classify(ctx, claim: Claim, swept: list[str], hardware: str, model: str) -> tuple[str, str]:
    """(class, why) of a number claim's evidence on its first counted set-up."""
    sourced = sourced_inputs(claim)
    if not sourced:
        return ECHO, "it reads no sourced figure: only constants, the workload and the lecture's numbers"
    moving = moved_by(ctx, claim, hardware, model)
    if not moving:
        return IDENTITY, (f"it reads {', '.join(sorted(sourced))}, but none moves it (each raised by a tenth "
                          "leaves the value as it was): x/x")
    workload = [s for s in swept if s.startswith(("context ", "batch "))]
    shown = {s.rsplit("(", 1)[-1] for s in workload}
    # a ratio of two set-ups (relative_to) may cancel its workload by design: not a constant of this kind
    if (claim.kind == "derived" and claim.relative_to is None and len(workload) > 1 and len(shown) == 1
            and claim_depends_on(claim, ("batch", "context"))):
        return CONSTANT, ("its formula names the context and the batch, but no context or batch tried moves it "
                          f"({shown.pop().rstrip(')')}): what is judged is a figure of the chip and model "
                          f"({', '.join(moving)})")
    return INDEPENDENT, f"a sourced figure moves it ({moving[0]})"


def mark_duplicates(verdicts: list) -> None:
    """A number card whose values on the same set-ups are an earlier card's: a duplicate of it."""
    first = {}
    for v in verdicts:
        if v.claim.kind not in NUMBER_KINDS or not v.values or v.evidence != INDEPENDENT:
            continue
        key = (tuple(sorted((k, round(float(x["value"]), 9)) for k, x in v.values.items()
                                                  if not isinstance(x["value"], bool))))
        if key in first:
            v.evidence, v.evidence_why = DUPLICATE, f"the same values on the same set-ups as {first[key]}: one test said twice"
        else:
            first[key] = v.claim.id


# -- an error's size -------------------------------------------------------------------------------
def sizes_it(ctx, claim: Claim, label: str) -> bool:
    """Whether a variant is a reasonable choice to size an error over: a reasonable sweep, or another model
    of the catalogue where the sentence names no model of its own (a spec-sheet misreading is not)."""
    if label.startswith(REASONABLE_SWEEPS):
        return True
    if not label.startswith("model ") or claim.kind == "arithmetic":   # the lecture's own numbers name no model
        return False
    text = f"{claim.claim} {claim.quote}".lower().replace("deep sick", "deepseek").replace("deep-seek", "deepseek")
    named = {(getattr(ctx.data.models[m], "name", None) or m).split("-")[0].split(" ")[0].lower() for m in claim.models}
    return not any(n and n in text for n in named)


def error_size(part_results, sizes, every: bool = False) -> str:
    """An error's size, part by part: the range of its miss over the set-up as set and every variant
    tried (a format, a context, a chip, each model of the catalogue) that keeps the part an error.
    ``every``: a relation already false (a failed identity) is sized over every variant, near misses too."""
    out = []
    for i, (p, _, v, summ) in enumerate(part_results):
        if v != FAILS and not every:
            continue
        args = (p.low, p.high, p.compare)
        sized = [(f, "the set-up as set") for f in [miss_factor(summ, *args)] if f]
        for label, xs in sizes:
            x = xs[i] if i < len(xs) else None
            if x is not None and (every or judge(x, p.low, p.high, p.tolerance, p.band, p.compare) == FAILS):
                f = miss_factor(x, *args)
                if f:
                    sized.append((f, label))
        if sized:
            out.append((f"{p.label}: " if len(part_results) > 1 else "") + size_text(sized))
    return "; ".join(out)
