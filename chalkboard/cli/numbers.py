"""`eval` (one number, a choice, or a sweep over a grid) and `compare` (chips and models side by side)."""
from __future__ import annotations

import json
import sys

from chalkboard.errors import short

from .common import ROOT, UserError, ids, load, parse_sets


def cmd_eval(args) -> int:
    from chalkboard.evaluation import layouts
    from chalkboard.evaluation.evaluate import Scenario
    from chalkboard.evaluation.dependence import unused_overrides
    from chalkboard.evaluation.results import describe_as_asked
    from derivations import REGISTRY

    from chalkboard.evaluation.results import choices

    for name in args.quantity:
        _known_quantity(name, REGISTRY)
    if any(name in choices() for name in args.quantity):
        return _eval_choice(args)
    if args.sweep:
        return _eval_sweep(args)
    if args.csv:
        raise UserError("--csv goes with --sweep (numbers print as text or --json)")
    data = load(args)
    sc = Scenario(data, args.hardware, args.model, parse_sets(args.set), defaults="serving")
    if (ROOT / "measurements.yaml").exists():   # the evidence for expected efficiencies, read if asked
        from chalkboard.validation import evidence
        sc.evidence = evidence(ROOT, data)
    answers = [describe_as_asked(sc, asked, args.layout) for asked in args.quantity]
    unused = unused_overrides(sc)
    if unused:
        for d in answers:
            d["unused_overrides"] = unused
        print(f"note: --set {', '.join(unused)} not used by {', '.join(d['quantity'] for d in answers)} "
              f"(computing in {sc.compute_format})", file=sys.stderr)
    if args.json:
        print(json.dumps(answers[0] if len(answers) == 1 else answers, indent=2, ensure_ascii=False))
        return 0
    for n, d in enumerate(answers):
        if n:
            print()
        _print_one(d, sc, layouts, args.explain)
    return 0


def _print_one(d: dict, sc, layouts, explain: bool = False) -> None:
    """One evaluated quantity as text: the value and its range, the set-up, the layout, the fit, the
    defaults it read, its terms and collectives; ``explain`` adds the definition, the closed and
    board forms and every input with its source."""
    from derivations import REGISTRY

    print(f"{d['quantity']} = {d['display']}   ({d['meaning']})")
    if "range" in d:
        print(f"  range      : {d['range']['display']} ({d['range']['why']})")
    print(f"  set-up     : {d['hardware']} x {d['model']}; {sc.formats_text()}")
    if d["layout"] and d["layout"].get("chips") == 1:
        print("  layout     : one chip (nothing split, nothing crosses a link)")
    elif d["layout"]:
        print(f"  layout     : {layouts.text(d['layout'])}")
    else:   # the chips the answer spreads over, said up front where they were not given
        chips = next((i for i in d["inputs"] if i["name"] == "chips"), None)
        if chips is not None and chips["source"] != "--set" and "chips" not in d.get("defaults", {}):
            print(f"  chips      : {chips['display']}")
    if "asked" in d:
        e = d["even_spread"]
        print(f"  asked      : {d['asked']}, answered under the deployed layout (--layout even, the lecture's "
              f"even spread: {e.get('display') or e['not_applicable']})")
    if d["feasible"] is not None:
        print(f"  fits       : {'yes' if d['feasible'] else 'NO'} ({d['feasibility']})")
    if d.get("context_raised"):
        print(f"  context    : {d['context_raised']['display']}, {d['context_raised']['why']}")
    if d.get("defaults"):
        told = ", ".join(f"{n} = {v}" for n, v in d["defaults"].items())
        print(f"  defaults   : {told} (not given: the serving defaults"
              f"{'; they do not fit, --set them' if d['feasible'] is False else ''})")
    if d["breakdown"]:
        print("  breakdown  : " + ", ".join(f"{b['name']} {b['display']}" for b in d["breakdown"]))
    for n, c in enumerate(d.get("collectives", ())):
        print(f"  {'collectives' if not n else '':<11}: {c['text']}")
    evidence = [i for i in d["inputs"] if i["source"].startswith("evidence:")]
    if evidence:   # an expected number: the efficiencies it assumed, and the measurements behind them
        assumed = ", ".join(e["name"] + " = " + e["display"] for e in evidence)
        print(f"  assumed    : {assumed}; {evidence[0]['source']}")
    if not explain:
        n = len(d["inputs"])
        print("  (--explain: its source)" if REGISTRY[d["quantity"]].is_input else
              f"  (--explain: the definition, closed form and the {n} input{'s' if n != 1 else ''} with their sources)")
        return
    if not REGISTRY[d["quantity"]].is_input:   # an input has no definition: never "N_total = N_total"
        print(f"  definition : {d['symbol']} = {d['definition']}")
        print(f"  closed form: {d['symbol']} = {d['expression']}")
        if d["board_form"] != d["expression"]:
            print(f"  board form : {d['symbol']} = {d['board_form']}")
    print("  inputs:")
    w = max(len(i["name"]) for i in d["inputs"]) if d["inputs"] else 0
    for i in d["inputs"]:
        print(f"    {i['name']:<{w}} = {i['display']:<22} {i['source']}")


def _eval_choice(args) -> int:
    """eval of a choice (e.g. best_kv_tier): the option chosen, and each option's value."""
    from chalkboard.evaluation.evaluate import Scenario
    from chalkboard.typeset.fmt import sig
    from chalkboard.evaluation.results import describe_choice

    if len(args.quantity) > 1 or args.sweep or args.csv:
        raise UserError(f"{args.quantity[0]} names an option, not a number: give it alone, without "
                        "--sweep or --csv")
    data = load(args)
    sc = Scenario(data, args.hardware, args.model, parse_sets(args.set), defaults="serving")
    d = describe_choice(sc, args.quantity[0])
    if args.json:
        print(json.dumps(d, indent=2, ensure_ascii=False))
        return 0
    print(f"{d['quantity']} = {d['display']}   ({d['meaning']})")
    if "range" in d:
        print(f"  range      : {d['range']['display']} ({d['range']['why']})")
    print(f"  on {d['hardware']} x {d['model']}; {d['against']['quantity']} = {d['against']['value']}")
    w = max(len(o["label"]) for o in d["options"])
    for o in d["options"]:
        mark = "->" if o["option"] == d["value"] else "  "
        if o["value"] is None:
            print(f"  {mark} {o['label']:<{w}}  not applicable: {o['not_applicable']}")
        else:
            print(f"  {mark} {o['label']:<{w}}  {o['quantity']} = {o['value']} "
                  f"({sig(o['ratio'])} x the {d['against']['quantity']})")
    return 0


def _known_quantity(name, registry) -> None:
    from chalkboard.evaluation.results import choices

    if name not in registry and name not in choices():
        close = [n for n in registry.quantities if name.lower() in n] if len(name) < 100 else []
        hint = f" (did you mean: {', '.join(close[:5])}?)" if close else " (see `python build.py list quantities`)"
        raise UserError(f"unknown quantity {short(name)!r}{hint}")


def _eval_sweep(args) -> int:
    from chalkboard.evaluation import layouts, sweep as sw, tables as tb
    from chalkboard.evaluation.evaluate import Scenario

    if len(args.sweep) > 3:
        raise UserError("--sweep: at most three inputs at once")
    axes = [sw.parse_axis(a) for a in args.sweep]
    asked = list(dict.fromkeys(args.quantity))
    names, note = layouts.answered(asked, args.layout)
    data = load(args)
    sc = Scenario(data, args.hardware, args.model, parse_sets(args.set), defaults="serving")
    if (ROOT / "measurements.yaml").exists():   # the fitted engine model, read if an expected number asks
        from chalkboard.validation import evidence
        sc.evidence = evidence(ROOT, data)
    result = sw.renamed(sw.sweep(sc, list(dict.fromkeys(names)), axes), names, asked)
    shown = sw.shown_quantities(result, asked)   # with an expected number's range
    held = sw.held_defaults(sc, [n for n, _ in axes])
    if held:   # the serving defaults the grid holds: a row equals eval with these --set
        note = "\n".join(x for x in (note, f"note: {', '.join(f'{n} = {v}' for n, v in held.items())} held over "
                                            f"the sweep (serving defaults; --set to choose)") if x)
    if args.json:
        units = tb.column_units(result, shown)
        print(tb.as_json({"hardware": sc.hw.id, "model": sc.model.id, "formats": sc.formats,
                          "layout": args.layout,
                          "answered_as": {a: n for a, n in zip(asked, names) if a != n},
                          "defaults": held,
                          "units": {n: u for n, (u, _) in units.items()},
                          "points": tb.sweep_records(result, shown)}))
    elif args.csv:
        sys.stdout.writelines(tb.sweep_csv(result, shown))
    else:
        print(f"{', '.join(asked)} on {sc.hw.id} x {sc.model.id}; {sc.formats_text()}")
        print(tb.aligned(tb.sweep_table(result, shown)))
    if note:
        print(note, file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    from chalkboard.evaluation import layouts, sweep as sw, tables as tb
    from derivations import REGISTRY

    for name in args.quantity:
        _known_quantity(name, REGISTRY)
    asked = list(dict.fromkeys(args.quantity))
    names, note = layouts.answered(asked, args.layout)
    given = args.model
    data = load(args)
    hardware = ids("--hardware", args.hardware) if args.hardware is not None else list(data.hardware)
    models = ids("--model", given) if given is not None else [args.model]
    if data.config_model and data.config_model not in models:
        models.append(data.config_model)
    fitted = None
    if (ROOT / "measurements.yaml").exists():   # the fitted engine model, read if an expected number asks
        from chalkboard.validation import evidence
        fitted = evidence(ROOT, data)
    sets = parse_sets(args.set)
    if args.chips is not None:
        if "chips" in sets:
            raise UserError("--chips and --set chips=... both given: give one")
        sets["chips"] = args.chips
    rows = sw.compare(data, hardware, models, names, sets, fitted, asked, defaults="serving")
    if args.json:
        print(tb.as_json(rows))
    elif args.csv:
        print(tb.compare_csv(rows, asked), end="")
    else:
        print(tb.aligned(tb.compare_table(rows, asked)))
        if any(not r["feasible"] for r in rows):
            print("† the set-up does not fit in the engine's share of the chips' HBM (see `eval ...` for the reason)")
        if args.chips is None and "chips" not in sets and len({r["chips"] for r in rows}) > 1:
            print("note: each row is on the fewest chips that hold its model (the chips column); --chips N "
                  "compares them on the same number", file=sys.stderr)
    if note:
        print(note, file=sys.stderr)
    return 0
