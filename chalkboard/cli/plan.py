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
    # each option as people write it: a bare number in its unit, or with one ("30 token/s", "4096 tokens",
    # "500 ms"); a comma is never a thousands separator
    read = {}
    for name, text, unit in (("--context", args.context, "token/sequence"),
                             ("--min-tokens-per-user", args.min_tokens_per_user, "token/s/sequence"),
                             ("--prompt", args.prompt, "token/sequence"), ("--output", args.output, "token/sequence"),
                             ("--max-ttft", args.max_ttft, "s")):
        if text is None:
            read[name] = None
            continue
        if "," in text:
            raise UserError(f"{name} {short(text)}: a comma is not read as a thousands separator; "
                            f"write {text.replace(',', '').strip()}")
        try:
            v = conform(parse(text), unit, bare=True).magnitude
        except UnitParseError as e:
            try:
                bare = float(text)   # "inf", "nan": a number, but not one a target can be
            except ValueError:
                raise UserError(f"{name} {short(text)}: {e}") from None
            v = bare
        if not (v > 0 and math.isfinite(v)):
            raise UserError(f"{name} {short(text)}: must be a positive, finite number")
        read[name] = float(v)
    ttft = read["--max-ttft"]
    formats = [f.lower() for f in ids("--formats", args.formats)] if args.formats is not None else None
    from derivations import NUMBER_FORMATS
    for f in formats or []:
        if f not in NUMBER_FORMATS:
            raise UserError(f"--formats {short(f)}: expected weight formats among {', '.join(NUMBER_FORMATS)}")
    if not hardware:
        raise UserError(f"{args.hardware_file}: no chip with a rental price to plan over: name chips with --hardware")
    if args.total_gpus is not None and args.total_gpus < 1:
        raise UserError(f"--total-gpus {args.total_gpus}: must be a whole number of chips, at least 1")
    targets = pl.Targets(read["--context"], read["--min-tokens-per-user"], ttft, read["--prompt"], args.by,
                         read["--output"], total_gpus=args.total_gpus)
    found = (ROOT / args.measurements_file).exists()
    search = pl.plan(data, args.model, hardware, targets, formats,
                     evidence(ROOT, data, args.measurements_file) if found else None, parse_sets(args.set))
    extra = "".join(f" --model-config {args.model_config}" for _ in [0] if args.model_config) + "".join(
        f" --set {x}" for x in args.set or [])
    if args.emit:
        from chalkboard.planner.emit import command, hub_repo
        d = pl.as_json(search, extra)
        if d["best"] is None:
            raise UserError(f"--emit {args.emit}: no deployment searched meets the targets, so there is no pick to "
                            f"launch (run without --emit to see why each chip loses)")
        print(command(args.emit, d["best"], d["context"], hub_repo(data, args.model)))
    elif args.json:
        print(json.dumps(pl.as_json(search, extra), indent=2, ensure_ascii=False))
    elif args.csv:
        print(pl.as_csv(search, extra), end="")
    else:
        print(pl.text(search, extra))
    return 0
