"""A model read from a Hugging Face config.json, made a model entry with its parameter counts.

data/hfconfig.py reads the config into an entry (data only); its parameter counts are the
derivations' own (params_total_from_dims, params_active_from_dims), so they are evaluated here,
after the data is loaded and before anything else evaluates the model.
"""
from __future__ import annotations

from pathlib import Path

from units import parse

from ..data.hfconfig import UNDATED, read_config
from ..data.loader import Data, DataError, Source, Value, check_model
from ..data.safety import escaped
from ..errors import InputError, MissingInput, NotApplicable
from .evaluate import Scenario


def add_config_model(data: Data, config_path: str) -> str:
    """Read ``config_path`` into ``data.models`` with its derived parameter counts; its id."""
    label = escaped(str(config_path))   # the path as the user gave it, any control character escaped
    entry = read_config(Path(config_path), label, taken=set(data.models))
    data.models[entry.id] = entry
    try:
        sc = Scenario(data, next(iter(data.hardware)), entry.id)
        counts = {f: sc.value(q) for f, q in (("params_total", "params_total_from_dims"),
                                               ("params_active", "params_active_from_dims"))}
    except (MissingInput, NotApplicable, InputError) as e:
        del data.models[entry.id]
        raise DataError(label, None, None, f"cannot count its parameters: {e}") from None
    for f, q in counts.items():
        n = round(q.to("parameter").magnitude)
        src = Source("derived", f"{label}: derived from its dimensions ({f}_from_dims)", "", UNDATED)
        entry.values[f] = Value(parse(f"{n} parameter"), f"{n} parameter", src, None,
                                "counted from the config's dimensions, not published")
    check_model(label, entry)
    data.config_model = entry.id
    return entry.id
