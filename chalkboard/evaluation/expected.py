"""Expected numbers (Scenario mixes this in): the efficiency fitted to the published runs
(chalkboard/calibration.py) as an input's default, where the set-up sits on the roofline, and
the range an expected number carries."""
from __future__ import annotations

from derivations import REGISTRY
from units import Quantity

from .. import calibration
from ..errors import NotGiven

EVIDENCE_INPUTS = ("expected_mfu", "expected_mbu")   # the inputs whose default is the fitted efficiency


class Expected:
    """The fitted efficiency and the range of what reads it (methods Scenario mixes in)."""

    def _from_evidence(self, name: str):
        """The efficiency fitted to the published measurements (chalkboard/calibration.py) at this
        set-up's place on the roofline, with the fit and its held-out range as its source (an input
        whose default is "=evidence")."""
        q = REGISTRY[name]
        if self.evidence is None:
            raise NotGiven(f"{name} ({q.meaning}) has no default here: give it with --set {name}=VALUE "
                           f"(`eval` fits it to the published measurements)", name)
        model = self.evidence()
        compute, memory = self.roofline_terms()
        e = model.predict(compute, memory, self.is_dense)
        lo, hi = model.band
        src = (f"evidence: the efficiency fitted to {model.n} published runs ({model.sources} sources) at this "
               f"set-up's compute/memory = {compute / memory:.3g} of the strict bound ({self.regime()}); held out "
               f"by source, the runs lie within ×{lo:.2f}–×{hi:.2f} of it (10th–90th percentile) "
               f"({self.data.files.get('measurements', 'measurements.yaml')}; `validate`)")
        return self._record(name, Quantity(e, q.unit or ""), src)

    def roofline_terms(self) -> tuple[float, float]:
        """The strict bound's compute and memory terms in seconds: where the set-up sits on the roofline."""
        return (sum(self._mag(n) for n in calibration.COMPUTE_TERMS), sum(self._mag(n) for n in calibration.MEMORY_TERMS))

    def spread(self, name: str):
        """(low, high) of an expected quantity: its value with the fitted efficiency at the ends of its
        held-out range (capped at the bound), or None where ``name`` reads no fitted efficiency."""
        leaves = {l.name for l in REGISTRY.leaves(name)}
        fitted = [n for n in EVIDENCE_INPUTS if n in leaves and self._way(n) == "evidence"]
        if not fitted or self.evidence is None:
            return None
        ends = []
        for f in self.evidence().band:
            e = {n: float(calibration.at_end(self.mag(n), f)) for n in fitted}
            other = type(self)(self.data, self.hw.id, self.model.id,
                             {**self.raw_overrides, **{n: repr(v) for n, v in e.items()}})
            ends.append(other.value(name).to(self.value(name).units))
        return tuple(sorted(ends, key=lambda x: x.magnitude))
