"""`check`, `list`, `audit` and `validate`: the whole project's numbers, data and verdicts."""
from __future__ import annotations

import json
import sys
import time

from .common import ROOT, load


def cmd_check(args) -> int:
    from chalkboard.evaluation.check import check_all
    from chalkboard.evaluation.results import evaluate_all
    from derivations import REGISTRY

    t0 = time.perf_counter()
    data = load(args)
    rep = check_all(REGISTRY)
    res = evaluate_all(data)
    dt = time.perf_counter() - t0
    print(f"chalkboard check: {len(REGISTRY.quantities)} quantities in {len(REGISTRY.sections)} sections")
    print(f"  dimension check : {rep.definitions} definitions and {rep.equations} equations "
          f"({rep.terms} sums/max/min compared), {rep.identities} identities verified symbolically "
          f"({rep.in_functions} of them in undefined functions: the reversible layers' inverses)")
    print(f"  data            : {len(data.hardware)} hardware entries, {len(data.models)} models, "
          f"{len(data.prices)} price snapshots, {len(data.tiers)} memory tiers, "
          f"{len(data.sources)} sources, every value parsed to its declared dimension")
    print(f"  evaluations     : {res.count_ok} numbers over {len(data.hardware)} x {len(data.models)} "
          f"hardware x model pairs; {res.count_na} not applicable (an input not published, "
          f"or outside the formula's domain)")
    if res.errors:
        for e in res.errors[:20]:
            print(f"  FAIL evaluation: {e}")
    for f in rep.failures:
        print(f"  FAIL dimension : {f}")
    ok = rep.ok and not res.errors
    print(f"  result          : {'OK' if ok else 'FAILED'} in {dt:.2f} s")
    return 0 if ok else 1


def cmd_list(args) -> int:
    from chalkboard.evaluation.results import list_hardware, list_models, list_quantities

    what = args.what
    if what == "quantities":
        rows = list_quantities()
        if args.json:
            print(json.dumps(rows, indent=2, ensure_ascii=False))
            return 0
        from derivations.core import CHAPTERS

        w = max(len(r["name"]) for r in rows)
        groups = {None: [r for r in rows if "chapter" not in r]}
        for ch in CHAPTERS:
            groups[ch] = [r for r in rows if r.get("chapter") == ch]
        for number, (ch, members) in enumerate(groups.items()):
            if not members:
                continue
            title = ("Inputs and constants used across the chapters" if ch is None else
                     "Chapter {} ({} h {:02d} min into the lecture): {}".format(
                         number, *map(int, CHAPTERS[ch][1].split(":")), CHAPTERS[ch][0]))
            print(("" if ch is None else "\n") + title)
            for r in members:
                print(f"  {r['name']:<{w}}  {r.get('shown_in') or r['unit'] or '1':<18} {r['origin']:<9} {r['meaning']}")
        return 0
    data = load(args)
    rows = list_hardware(data) if what == "hardware" else list_models(data)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if args.short:
        for eid, fields in rows.items():
            shown = [f"{k} {v['text']}" for k, v in fields.items() if k in SHORT_FIELDS and isinstance(v, dict)
                     and "text" in v]
            print(f"{eid:<16} {fields['name']['value']:<36} " + ", ".join(shown))
        return 0
    for eid, fields in rows.items():
        name = fields.pop("name")
        print(f"{eid}  {name['value']}")
        for k, v in fields.items():
            if isinstance(v, dict) and "source" in v:
                print(f"    {k:<19} {v['text']:<18} {v['source']} (as of {v['as_of']})")
            else:
                print(f"    {k:<19} {v['value'] if isinstance(v, dict) else v}")
    return 0


# what `list hardware --short` and `list models --short` show of each entry
SHORT_FIELDS = ("flops_bf16", "flops_fp8", "hbm_capacity", "hbm_bandwidth", "rental_price", "params_total",
                "params_active", "layers", "d_model")


def cmd_audit(args) -> int:
    from chalkboard.audit import FAILS, HOLDS, INCONCLUSIVE, ND, ROUGHLY, run_audit
    from chalkboard.data.loader import read_yaml

    data = load(args)
    read_yaml(ROOT / args.claims_file, args.claims_file)  # encoding, size, nesting, aliases: one line each
    audit = run_audit(data, ROOT / args.claims_file, args.claims_file)
    verdict = {"holds": HOLDS, "roughly": ROUGHLY, "fails": FAILS, "inconclusive": INCONCLUSIVE,
               "not-judged": ND}.get(args.verdict)
    if verdict or args.kind or args.chapter or args.grep:
        audit = audit.only(verdict, args.kind, args.chapter, args.grep)
        if not audit.verdicts:
            print("chalkboard audit: no claim matches", file=sys.stderr)
            return 0
    if args.json:
        print(json.dumps(audit.as_json(), indent=2, ensure_ascii=False))
        return 0
    print(audit.as_text())
    return 0


def cmd_validate(args) -> int:
    from chalkboard.validation import as_json, as_text, efficiency_model, evaluate_all, load_measurements

    data = load(args)
    results = evaluate_all(data, load_measurements(ROOT, data, args.measurements_file))
    fitted = efficiency_model(results, data)
    if args.json:
        print(json.dumps(as_json(results, fitted), indent=2, ensure_ascii=False))
    else:
        print(as_text(results, fitted))
    return 1 if any(r.violates for r in results) else 0
