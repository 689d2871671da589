"""Which chips a claim is judged on: declared scopes, chips that share their silicon, announced parts, serving formats."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..data.loader import Data, DataError

from .rules import FORMATS

# -- chips: scopes, same silicon, announced parts, serving formats -----------------------------
@dataclass
class Chips:
    same_silicon: dict[str, list[str]] = field(default_factory=dict)   # counted chip -> same-silicon others
    announced: list[str] = field(default_factory=list)
    scopes: dict[str, dict] = field(default_factory=dict)             # name -> {"vendor": [...], "text": ...}
    serving_formats: dict[str, list[str]] = field(default_factory=dict)  # model id or "default" -> formats
    reference: str | None = None    # the lecture's own chip: a row over many chips shows its formula first

    def group_of(self, hid: str) -> str | None:
        """The same-silicon group ``hid`` belongs to, named by its representative, or None."""
        for rep, members in self.same_silicon.items():
            if hid == rep or hid in members:
                return rep
        return None

    def resolve(self, data: Data, scope) -> tuple[str, list[str]]:
        """(scope name, hardware ids in file order) for a scope name, a list or one id."""
        if isinstance(scope, list):
            return "named chips", list(scope)
        if scope in self.scopes:
            want = self.scopes[scope].get("vendor")
            ids = [h for h, e in data.hardware.items() if want is None or e.tags.get("vendor") in want]
            return scope, ids
        return "one chip", [scope]

    def serving_format(self, hw, model_id: str) -> str | None:
        usable = self.serving_formats.get(model_id) or self.serving_formats.get("default") or []
        rated = [(hw.values[f"flops_{f}"].quantity.magnitude, f) for f in usable if f"flops_{f}" in hw.values]
        return max(rated)[1] if rated else None


def load_chips(label: str, data: Data, doc: dict) -> Chips:
    raw = doc.get("chips") or {}
    if not isinstance(raw, dict):
        raise DataError(label, "chips", None, "expected a mapping")
    ch = Chips()
    for rep, members in (raw.get("same_silicon") or {}).items():
        members = members if isinstance(members, list) else [members]
        for h in [rep, *members]:
            if h not in data.hardware:
                raise DataError(label, "chips", "same_silicon", f"unknown hardware id {h!r}")
        ch.same_silicon[rep] = list(members)
    ref = raw.get("reference")
    if ref is not None:
        if ref not in data.hardware:
            raise DataError(label, "chips", "reference", f"unknown hardware id {ref!r}")
        ch.reference = str(ref)
    for h in raw.get("announced") or []:
        if h not in data.hardware:
            raise DataError(label, "chips", "announced", f"unknown hardware id {h!r}")
        ch.announced.append(h)
    for name, spec in (raw.get("scopes") or {}).items():
        if not isinstance(spec, dict):
            raise DataError(label, "chips", f"scopes.{name}", "expected {vendor: [...], text: ...}")
        ch.scopes[str(name)] = spec
    ch.scopes.setdefault("all", {"text": "every chip in hardware.yaml"})
    for mid, fmts in (raw.get("serving_formats") or {}).items():
        if mid != "default" and mid not in data.models:
            raise DataError(label, "chips", "serving_formats", f"unknown model id {mid!r}")
        for f in fmts:
            if f not in FORMATS:
                raise DataError(label, "chips", "serving_formats", f"{f!r} is not one of {', '.join(FORMATS)}")
        ch.serving_formats[mid] = list(fmts)
    return ch

def default_chips(data) -> Chips:
    return Chips(scopes={"all": {}}, serving_formats={"default": ["fp8", "bf16"]})


def serving_scope(chips: Chips, data, hid: str, mid: str, claim, extra: dict | None = None) -> dict:
    """The chip's serving format as an override, unless the claim or a variant sets a format."""
    keys = set(claim.set) | set(extra or {})
    if keys & {"format", "weight_format", "compute_format"}:
        return {}
    f = chips.serving_format(data.hardware[hid], mid)
    return {"format": f} if f else {}
