"""`plan`: the cheapest deployment that meets a speed target (chalkboard/planner/)."""
from __future__ import annotations

import json
import math

from chalkboard.errors import short

from .common import ROOT, UserError, ids, load, parse_sets


def cmd_plan(args) -> int:
    from chalkboard import planner as pl
    from chalkboard.validation import evidence
    from units import UnitParseError, conform, parse

    data = load(args)
    if args.model not in data.models:
        raise UserError(f"{args.models_file}: unknown model id {short(args.model)!r} (known: {', '.join(data.models)})")
    hardware = (ids("--hardware", args.hardware) if args.hardware is not None
                else [h for h, e in data.hardware.items() if e.get("rental_price") is not None])
    for h in hardware:
        if h not in data.hardware:
            raise UserError(f"{args.hardware_file}: unknown hardware id {short(h)!r} "
                            f"(known: {', '.join(data.hardware)})")
    try:
        ttft = None if args.max_ttft is None else conform(parse(args.max_ttft), "s", bare=True).magnitude
    except UnitParseError as e:
        raise UserError(f"--max-ttft {short(args.max_ttft)}: {e}") from None
    for name, v in (("--context", args.context), ("--min-tokens-per-user", args.min_tokens_per_user),
                    ("--prompt", args.prompt), ("--output", args.output), ("--max-ttft", ttft)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise UserError(f"{name} {v:g}: must be a positive, finite number")
    formats = ids("--formats", args.formats) if args.formats is not None else None
    from derivations import NUMBER_FORMATS
    for f in formats or []:
        if f not in NUMBER_FORMATS:
            raise UserError(f"--formats {short(f)}: expected weight formats among {', '.join(NUMBER_FORMATS)}")
    if not hardware:
        raise UserError(f"{args.hardware_file}: no chip with a rental price to plan over: name chips with --hardware")
    targets = pl.Targets(args.context, args.min_tokens_per_user, ttft, args.prompt, args.by, args.output)
    found = (ROOT / args.measurements_file).exists()
    search = pl.plan(data, args.model, hardware, targets, formats,
                     evidence(ROOT, data, args.measurements_file) if found else None, parse_sets(args.set))
    extra = "".join(f" --model-config {args.model_config}" for _ in [0] if args.model_config) + "".join(
        f" --set {x}" for x in args.set or [])
    if args.json:
        print(json.dumps(pl.as_json(search, extra), indent=2, ensure_ascii=False))
    elif args.csv:
        print(pl.as_csv(search, extra), end="")
    else:
        print(pl.text(search, extra))
    return 0
