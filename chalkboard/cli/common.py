"""What every command shares: the project's folder, the one-line error a user can fix, reading
--set pairs, and loading the data files (with a model from a config.json)."""
from __future__ import annotations

import sys

from ..data.featured import FEATURED_MODEL as DEFAULT_MODEL
from ..errors import InputError, short
from ..runtime.home import ROOT   # (the project folder: the repository, or the data bundled in the package)

EXIT_BAD_INPUT = 2


class UserError(InputError):
    """Something the user can fix; printed as one line, exit status 2."""


def error_line(e: BaseException) -> tuple[str, int] | None:
    """The one line (and exit status) an error the user can act on is told as, or None for one
    that is not (a defect: its traceback is shown). build.py's entry and the edit loop print it."""
    from ..data.loader import DataError
    from ..errors import BuildError, MissingInput, NotApplicable

    if isinstance(e, (DataError, InputError, NotApplicable)):
        return f"error: {e}", EXIT_BAD_INPUT
    if isinstance(e, MissingInput):
        hint = "" if "--set" in str(e) else " (supply it with --set)"
        return f"error: cannot evaluate: {e}{hint}", EXIT_BAD_INPUT
    if isinstance(e, BuildError):
        return f"error: {e}", 1
    if isinstance(e, OSError) and not isinstance(e, BrokenPipeError):   # the environment: a full disk, a closed stream
        where = f": {e.filename}" if e.filename else ""
        return f"error: {e.strerror or e}{where}", EXIT_BAD_INPUT
    return None


def parse_sets(pairs):
    out = {}
    for p in pairs or []:
        if "=" not in p:
            raise UserError(f"--set {short(p)}: expected NAME=VALUE, e.g. --set batch=128")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def ids(option: str, text: str) -> list[str]:
    """A comma-separated list of ids given with ``option``; one line if it names none (``,`` or "")."""
    out = [x.strip() for x in text.split(",") if x.strip()]
    if not out:
        raise UserError(f"{option} {short(text)!r}: name at least one (comma-separated)")
    return out


def load(args):
    from chalkboard.data.loader import load
    data = load(ROOT, args.hardware_file, args.models_file, args.prices_file)
    if getattr(args, "model_config", None):
        from chalkboard.evaluation.configmodel import add_config_model
        add_config_model(data, args.model_config)
    if data.config_model:  # what reading the config assumed, said once
        m = data.models[data.config_model]
        print(f"note: {m.file}: read as model {m.id}: {'; '.join(m.assumed)}", file=sys.stderr)
    if getattr(args, "model", "") is None:  # --model not given: the config's model, else the featured one
        args.model = data.config_model or DEFAULT_MODEL
    return data
