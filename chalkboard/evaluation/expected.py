"""Expected numbers (Scenario mixes this in): the engine model fitted to the published runs
(chalkboard/validation/engine_fit.py) as the default of its inputs, and the range an expected number
carries."""
from __future__ import annotations

from derivations import REGISTRY
from units import Quantity

from ..errors import InputError, NotGiven, short

# the inputs whose default is the engine model fitted to the published runs
EVIDENCE_INPUTS = ("expected_mfu", "expected_mbu", "expected_sync_time", "expected_prefill_efficiency")


def for_engine(model, engine: str | None):
    """``model`` (engine_fit.Efficiency), or its fit to ``engine``'s runs alone (--set engine=NAME)."""
    if not engine:
        return model
    try:
        return model.for_engine(engine)
    except ValueError as e:
        raise InputError(f"--set engine={short(engine)}: {e}") from None


class Expected:
    """The fitted engine model's inputs and the range of what reads them (methods Scenario mixes in)."""

    @property
    def evidence(self):
        """A function giving the engine model whose inputs the expected numbers take: the fit to every
        engine's runs, or with --set engine=NAME that engine's own (None: no measurements loaded)."""
        return self._evidence

    @evidence.setter
    def evidence(self, model) -> None:
        engine = getattr(self, "engine", None)
        if model is None or not engine or getattr(model, "engine", None) == engine:
            self._evidence = model
            return
        fitted = for_engine(model(), engine)   # fitted now: an engine without a fit is refused whatever is read

        def chosen():
            return fitted
        chosen.engine = engine
        self._evidence = chosen

    def _from_evidence(self, name: str):
        """The engine model fitted to the published measurements (chalkboard/validation/engine_fit.py), with
        the fit and its held-out range as its source (an input whose default is "=evidence")."""
        q = REGISTRY[name]
        if self.evidence is None:
            raise NotGiven(f"{name} ({q.meaning}) has no default here: give it with --set {name}=VALUE "
                           f"(`eval` fits it to the published measurements)", name)
        model = self.evidence()
        lo, hi = model.band
        own = next((e for e in model.engines if e.name == model.engine), None)
        src = (f"evidence: the engine model fitted to {model.n} published runs ({model.sources} sources); held "
               f"out by source, chip, model and engine, the runs lie within ×{lo:.2f}–×{hi:.2f} of its speed (the "
               f"widest 10th–90th percentile)" if own is None else
               f"evidence: the engine model fitted to the {own.n} published runs of {own.name} alone ({own.sources} "
               f"sources; --set engine={own.name}); its range ×{lo:.2f}–×{hi:.2f}, the whole model's or where its "
               f"runs held out by source fall, if wider")
        src += f" ({self.data.files.get('measurements', 'measurements.yaml')}; `validate`)"
        value = Quantity(model.inputs()[name], "s" if name == "expected_sync_time" else "")
        return self._record(name, value.to(q.unit or ""), src)

    def spread(self, name: str):
        """(low, high) of an expected quantity: its value with the fitted model at the ends of its
        held-out range, or None where ``name`` reads no fitted input."""
        leaves = {l.name for l in REGISTRY.leaves(name)}
        fitted = [n for n in EVIDENCE_INPUTS if n in leaves and self._way(n) == "evidence"]
        if not fitted or self.evidence is None:
            return None
        ends = []
        for end in self.evidence().ends():
            sets = {n: repr(end[n]) + (" s" if n == "expected_sync_time" else "") for n in fitted}
            other = type(self)(self.data, self.hw.id, self.model.id, {**self.raw_overrides, **sets},
                               defaults=self.defaults)   # the same set-up: the serving defaults too
            ends.append(other.value(name).to(self.value(name).units))
        # a ratio of two expected times can move the same way at both ends (both slower, both
        # faster): the range is what the ends and the fit itself span, so it always holds its value
        ends.append(self.value(name))
        ends = sorted(ends, key=lambda x: x.magnitude)
        return ends[0], ends[-1]
