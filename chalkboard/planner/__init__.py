"""`plan`: the cheapest deployment that meets a speed target, searched over chips, layouts, batches
and weight formats.

The lecture's first chapter is one picture: as the batch grows, the cost per token falls and each
user's speed falls, and the hardware sets where that curve sits. `plan` asks the inverse: for a
model, a context and a speed each user must get (and a time to first token), which chip, layout,
batch and number format is cheapest, and what is the frontier of cost against speed?

Every candidate is a set of inputs (tp, dp_attention, ep, pp, chips, batch) evaluated through
the declared quantities (derivations/layout.py and measured.py) on the compiled path: one
vectorised pass per chip and format (search.py); the fit and the targets are masks, and the
answer (answer.py) is the cheapest candidate, the frontier, and why each chip loses. Each row
carries the `eval` command that reproduces it.
"""
from .answer import as_csv, as_json, text
from .search import LEFT_OUT, Targets, plan

__all__ = ["LEFT_OUT", "Targets", "as_csv", "as_json", "plan", "text"]
