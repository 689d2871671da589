"""Does a set-up fit? Each chip's weights and KV cache against the serving engine's share of its
HBM (engine_memory_share, 0.9 by default: the rest holds activations, workspace and the runtime):
evenly spread, pipelined, or laid out by tp, dp_attention, ep and pp; and which fit judges which
quantity (Scenario mixes this in). One rule for every command: eval, compare, sweeps, plan, the
explorer and the library all call a set-up that needs more than the engine's share unfit, and show
the physical fill (the share of the whole HBM) beside it."""
from __future__ import annotations

from . import compiled
from .dependence import flag_kind
from ..errors import MissingInput, NotApplicable


def within(fill, share):
    """The one rule of a fit, for a number or arrays: the physical fill (the share of the whole HBM
    the weights and the KV cache need) at most the engine's share (a rounding's worth of slack)."""
    return fill <= share * (1 + 1e-12)


class Fit:
    """The fit checks of a Scenario (methods it mixes in)."""

    def _memory(self, batch: float):
        """(weights per chip, KV cache of ``batch`` sequences per chip, HBM per chip) as floats in
        base units, from the declared weights_per_chip and kv_per_chip (the KV term scaled to the
        batch asked for): what the fit is decided on."""
        b_now = self.mag("batch", "sequence")   # the batch, the KV cache, the weights, the HBM: read in this order
        kv = self._mag("kv_per_chip") * (batch / b_now)
        return self._mag("weights_per_chip"), kv, self._mag("hbm_capacity")

    def fill(self, batch: float | None = None) -> float | None:
        """Share of each chip's HBM the weights and the KV cache of ``batch`` sequences need."""
        try:
            w, kv, cap = self._memory(self.mag("batch", "sequence") if batch is None else batch)
        except MissingInput:
            return None
        return (w + kv) / cap

    def fit(self, batch: float | None = None) -> str | None:
        """None if the weights and the KV cache of ``batch`` sequences (default: the workload's)
        fit in the chips' HBM; otherwise the reason, in one sentence. Unknown inputs: None."""
        if batch in self._fits:  # the workload's batch (None) asked for again and again by flag()
            return self._fits[batch]
        if batch is None:
            self._fits[None] = self.fit(self.mag("batch", "sequence"))
            return self._fits[None]
        try:
            w, kv, cap = self._memory(batch)
            chips = self.mag("chips", "chip")
        except MissingInput:
            self._fits[batch] = None
            return None
        reason = None
        if not self.fits_within(w / cap):
            reason = (f"does not fit: the weights alone need {self._shown('weights_per_chip', w)} on "
                      f"{chips:g} chips, more than {self._budget()} of HBM each has ({w / cap:.0%} of it)")
        elif not self.fits_within((w + kv) / cap):
            try:
                most = f"; at most {self._shown('max_batch_engine')} fit"
            except MissingInput:
                most = "; not one sequence fits beside the weights"
            reason = (f"does not fit: weights and the KV cache of {batch:,.0f} sequences of "
                      f"{self._shown('context')} need {self._shown('weights_per_chip', w + kv)}, more than "
                      f"{self._budget()} of HBM ({(w + kv) / cap:.0%} of it){most}")
        self._fits[batch] = reason
        return reason

    def memory_share(self) -> float:
        """The share of each chip's HBM a set-up may fill and still fit (engine_memory_share)."""
        return self.mag("engine_memory_share", "")

    def _budget(self) -> str:
        """"the engine's 90% of the 80 GB": the budget a reason names."""
        share = self.memory_share()
        whole = self._shown("hbm_capacity")
        return f"all {whole}" if share == 1 else f"the engine's {share:.0%} of the {whole}"

    def within_note(self) -> str:
        """", within the engine's 90% (engine_memory_share)": the rule a "fits" was judged by."""
        share = self.memory_share()
        return "" if share == 1 else f", within the engine's {share:.0%} (engine_memory_share)"

    def fits_within(self, fill: float | None) -> bool | None:
        """Whether a physical fill (share of the whole HBM) is within the engine's share; None if unknown."""
        return None if fill is None else bool(within(fill, self.memory_share()))

    def fill_pipelined(self) -> float | None:
        """Share of each chip's HBM a pipelined set-up needs (hbm_fill_pipelined); None if unknown."""
        try:
            return self.mag("hbm_fill_pipelined", "")
        except (MissingInput, NotApplicable):
            return None

    def fit_pipelined(self) -> str | None:
        """None if, with the model cut into pipeline_stages stages of S chips and one balance-batch
        micro-batch per stage in flight, each chip's share of the weights and KV cache fits in its
        HBM; otherwise the reason, in one sentence. Unknown inputs: None."""
        if "pipelined" not in self._fits:  # asked for again and again by flag()
            self._fits["pipelined"] = self._fit_pipelined()
        return self._fits["pipelined"]

    def _fit_pipelined(self) -> str | None:
        fill = self.fill_pipelined()
        if fill is None or self.fits_within(fill):
            return None
        stages = self.mag("pipeline_stages", "")
        return (f"does not fit: with {stages:g} pipeline stage{'s' if stages != 1 else ''} of "
                f"{self._shown('chips')} and one micro-batch of {self._shown('balance_batch')} per "
                f"stage in flight, each chip needs {self._shown('weights_per_chip_pipelined')} of weights "
                f"and {self._shown('kv_per_chip_pipelined')} of KV cache, more than {self._budget()} of HBM "
                f"({fill:.0%} of it); more stages shrink only the weights")

    def fit_layout(self, batch: float | None = None) -> str | None:
        """None if, under the layout (tp, dp_attention, ep, pp), each chip's weights and KV cache of
        ``batch`` sequences (default: the workload's) fit in its HBM; otherwise the reason, in one
        sentence. Unknown inputs: None."""
        key = ("layout", batch)
        if key not in self._fits:
            self._fits[key] = self._fit_layout(batch)
        return self._fits[key]

    def _layout_memory(self, batch: float | None):
        """(weights, weights + KV of ``batch`` sequences, HBM) per chip under the layout, base units."""
        w, kv = self._mag("weights_per_chip_layout"), self._mag("kv_per_chip_layout")
        workload = self.mag("batch", "sequence")
        b = workload if batch is None else batch
        return w, w + kv * b / workload, self._mag("hbm_capacity")

    def fill_layout(self, batch: float | None = None) -> float | None:
        """Share of each chip's HBM the layout needs with ``batch`` sequences; None if unknown."""
        try:
            _, need, cap = self._layout_memory(batch)
        except (MissingInput, NotApplicable):
            return None
        return need / cap

    def _fit_layout(self, batch: float | None) -> str | None:
        try:
            w, need, cap = self._layout_memory(batch)
            layout = ", ".join(f"{n} = {self.mag(n, ''):g}" for n in ("tp", "dp_attention", "ep", "pp"))
        except (MissingInput, NotApplicable):
            return None
        b = self.mag("batch", "sequence") if batch is None else batch
        if not self.fits_within(w / cap):
            return (f"does not fit: under the layout ({layout}) each chip holds "
                    f"{self._shown('weights_per_chip_layout', w)} of weights, more than {self._budget()} of "
                    f"HBM ({w / cap:.0%} of it)")
        if not self.fits_within(need / cap):
            return (f"does not fit: under the layout ({layout}) each chip needs "
                    f"{self._shown('memory_per_chip_layout', need)} for its weights and the KV cache of "
                    f"{b:,.0f} sequence{'s' if b != 1 else ''} of {self._shown('context')}, more than "
                    f"{self._budget()} of HBM ({need / cap:.0%} of it)")
        return None

    def _shown(self, name: str, base_mag: float | None = None) -> str:
        """``name``'s value as a reason shows it (fmt), from its base-unit float (``base_mag``: another
        value of the same unit, e.g. a sum), without making a Pint quantity."""
        from ..typeset.fmt import fmt_base

        return fmt_base(self._mag(name) if base_mag is None else base_mag, compiled.declared(name)[0])

    def flag(self, name: str) -> str | None:
        """Why the value of ``name`` describes a set-up that does not fit in HBM, or None.

        A quantity that depends on the batch describes the workload's batch; one that depends
        on the chips but not the batch (the latency floor) describes a batch of one sequence;
        one of a pipelined set-up (chapters 3 and 4) is judged by the pipelined fit.
        Measures of the fit itself, and quantities of the chip or model alone, are never flagged.
        """
        return self.fit_for(flag_kind(name))

    def fit_for(self, kind: str | None) -> str | None:
        """The fit a quantity of ``flag_kind`` ``kind`` is flagged by (None: never flagged)."""
        if kind == "pipeline":
            return self.fit_pipelined()
        if kind in ("layout", "layout1"):
            return self.fit_layout(None if kind == "layout" else 1.0)
        return self.fit() if kind == "batch" else self.fit(1.0) if kind == "chips" else None
