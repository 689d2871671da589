#!/usr/bin/env python3
"""chalkboard: the blackboard math of LLM serving, made executable.

Commands (run `python build.py COMMAND --help` for each):

  python build.py                 build the report: build/report.html, report.pdf, figures, results.json
                                  (--all-hardware: also one report per chip and build/hardware/index.html)
  python build.py check           dimension-check every equation, evaluate every hardware x model
  python build.py eval QUANTITY   one number, its inputs and the closed form it came from
                                  (--sweep NAME=SPEC: a table over a grid of inputs)
  python build.py compare Q...    quantities side by side across chips and models
  python build.py list [WHAT]     quantities, hardware or models, with units and sources
  python build.py audit           the lecture's claims, each with a computed verdict
  python build.py validate        published measurements against the strict step-time bound

Bad input (a YAML error, a missing field, a wrong dimension, an unknown id, an output folder
that cannot be written) prints one line naming the file, entry and field or the path, and exits
with status 2.
"""
from __future__ import annotations

import gc

# Run as a command, the imports (SymPy, Pint) and the cache of SymPy's work make some 150,000 objects
# that live as long as the process: the cyclic garbage collector is off while they are made, then
# told to leave them out of its scans (gc.freeze in main), which it would otherwise walk again and
# again (a tenth of a build's time). Imported as a module (the tests), nothing changes.
AS_COMMAND = __name__ == "__main__"
if AS_COMMAND:
    gc.disable()
import argparse  # noqa: E402
import codecs
import json
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

EXIT_BAD_INPUT = 2
from chalkboard import FEATURED_HARDWARE as DEFAULT_HARDWARE, FEATURED_MODEL as DEFAULT_MODEL  # noqa: E402


class UserError(Exception):
    """Something the user can fix; printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, except that a bad argument is one line (not the usage), exit status 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


def _escape_unencodable(err):
    """Characters the output encoding lacks, written as JSON-style \\uXXXX escapes (ASCII-safe)."""
    out = []
    for ch in err.object[err.start:err.end]:
        c = ord(ch)
        if c > 0xFFFF:
            c -= 0x10000
            out.append(f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}")
        else:
            out.append(f"\\u{c:04x}")
    return "".join(out), err.end


codecs.register_error("chalkboard-escape", _escape_unencodable)


def _safe_streams() -> None:
    """Output never fails on encoding: UTF-8 where the locale has it, else escapes (PYTHONIOENCODING=ascii)."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="chalkboard-escape")
            except (ValueError, OSError):
                pass


_MAIN_PID = os.getpid()


def _terminate(signum, frame):
    mp = sys.modules.get("multiprocessing")
    if os.getpid() != _MAIN_PID:  # a forked worker: end at once with the workers it started
        for child in (mp.active_children() if mp is not None else []):
            child.terminate()
        os._exit(128 + signum)
    if mp is not None:  # stop the workers first, so that nothing waits on a worker that waits on us
        for child in mp.active_children():
            child.terminate()
    raise SystemExit(128 + signum)  # unwinds like Ctrl-C: half-written output is removed


def _parse_sets(pairs):
    out = {}
    for p in pairs or []:
        if "=" not in p:
            raise UserError(f"--set {p}: expected NAME=VALUE, e.g. --set batch=128")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _load(args):
    from chalkboard.data import load
    data = load(ROOT, args.hardware_file, args.models_file, args.prices_file)
    if getattr(args, "model_config", None):
        from chalkboard.configmodel import add_config_model
        add_config_model(data, args.model_config)
    if data.config_model:  # what reading the config assumed, said once
        m = data.models[data.config_model]
        print(f"note: {m.file}: read as model {m.id}: {'; '.join(m.assumed)}", file=sys.stderr)
    if getattr(args, "model", "") is None:  # --model not given: the config's model, else the featured one
        args.model = data.config_model or DEFAULT_MODEL
    return data


# -- commands -----------------------------------------------------------------------------
def cmd_check(args) -> int:
    from chalkboard.check import check_all
    from chalkboard.results import evaluate_all
    from derivations import REGISTRY

    t0 = time.perf_counter()
    data = _load(args)
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


def cmd_eval(args) -> int:
    from chalkboard import layouts
    from chalkboard.data import check_counts
    from chalkboard.errors import MissingInput
    from chalkboard.fmt import fmt
    from chalkboard.evaluate import Scenario, setup_dependence, unused_overrides
    from chalkboard.results import describe
    from derivations import REGISTRY

    from chalkboard.results import choices

    for name in args.quantity:
        _known_quantity(name, REGISTRY)
    if any(name in choices() for name in args.quantity):
        return _eval_choice(args)
    if args.sweep:
        return _eval_sweep(args)
    if len(args.quantity) > 1:
        raise UserError("give one quantity (several can be evaluated together with --sweep, or with `compare`)")
    if args.csv:
        raise UserError("--csv goes with --sweep (one number prints as text or --json)")
    asked = args.quantity[0]
    args.quantity = layouts.resolve(asked, args.layout)
    data = _load(args)
    sc = Scenario(data, args.hardware, args.model, _parse_sets(args.set))
    check_counts(sc.overrides)
    if (ROOT / "measurements.yaml").exists():   # the evidence for expected efficiencies, read if asked
        from chalkboard.validation import evidence
        sc.evidence = evidence(ROOT, data)
    d = describe(sc, args.quantity)
    if asked != args.quantity:   # answered under the layout: say so, with the lecture's even spread beside it
        d["asked"] = asked
        try:
            d["even_spread"] = {"quantity": asked, "display": fmt(sc.value(asked))}
        except MissingInput as e:
            d["even_spread"] = {"quantity": asked, "not_applicable": str(e)}
    d["layout"] = layouts.degrees(sc) if setup_dependence(args.quantity) in ("layout", "layout1") else {}
    d["breakdown"] = layouts.breakdown(sc, args.quantity)
    unused = unused_overrides(sc)
    if unused:
        d["unused_overrides"] = unused
        print(f"note: --set {', '.join(unused)} not used by {args.quantity} "
              f"(computing in {sc.compute_format})", file=sys.stderr)
    if args.json:
        print(json.dumps(d, indent=2, ensure_ascii=False))
        return 0
    print(f"{d['quantity']} = {d['display']}   ({d['meaning']})")
    print(f"  on {d['hardware']} x {d['model']}; {sc.formats_text()}")
    if d["layout"]:
        print(f"  layout     : {layouts.text(d['layout'])}")
    if "asked" in d:
        e = d["even_spread"]
        print(f"  asked      : {asked}, answered under the deployed layout; the lecture's even spread "
              f"over {sc.mag('chips'):g} chips (--layout even): {e.get('display') or e['not_applicable']}")
    fit = {True: "yes", False: "NO", None: "n/a"}[d["feasible"]]
    print(f"  feasible   : {fit} ({d['feasibility']})")
    if d["breakdown"]:
        print("  breakdown  : " + ", ".join(f"{b['name']} {b['display']}" for b in d["breakdown"]))
    print(f"  definition : {d['symbol']} = {d['definition']}")
    print(f"  closed form: {d['symbol']} = {d['expression']}")
    if d["board_form"] != d["expression"]:
        print(f"  board form : {d['symbol']} = {d['board_form']}")
    print("  inputs:")
    w = max(len(i["name"]) for i in d["inputs"]) if d["inputs"] else 0
    for i in d["inputs"]:
        print(f"    {i['name']:<{w}} = {i['display']:<22} {i['source']}")
    return 0


def _eval_choice(args) -> int:
    """eval of a choice (e.g. best_kv_tier): the option chosen, and each option's value."""
    from chalkboard.data import check_counts
    from chalkboard.evaluate import Scenario
    from chalkboard.fmt import sig
    from chalkboard.results import describe_choice

    if len(args.quantity) > 1 or args.sweep or args.csv:
        raise UserError(f"{args.quantity[0]} names an option, not a number: give it alone, without "
                        "--sweep or --csv")
    data = _load(args)
    sc = Scenario(data, args.hardware, args.model, _parse_sets(args.set))
    check_counts(sc.overrides)
    d = describe_choice(sc, args.quantity[0])
    if args.json:
        print(json.dumps(d, indent=2, ensure_ascii=False))
        return 0
    print(f"{d['quantity']} = {d['display']}   ({d['meaning']})")
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
    from chalkboard.results import choices

    if name not in registry and name not in choices():
        close = [n for n in registry.quantities if name.lower() in n]
        hint = f" (did you mean: {', '.join(close[:5])}?)" if close else " (see `python build.py list quantities`)"
        raise UserError(f"unknown quantity {name!r}{hint}")


def _under_layout(names, layout):
    """The names that answer ``names`` under --layout, and a note naming each one answered by its
    form under the deployed layout (printed once the answer is out)."""
    from chalkboard import layouts

    out = [layouts.resolve(n, layout) for n in names]
    moved = [f"{a} as {b}" for a, b in zip(names, out) if a != b]
    note = (f"note: answered under the deployed layout: {', '.join(moved)} (--layout even: the lecture's "
            "even spread)") if moved else ""
    return out, note


def _eval_sweep(args) -> int:
    from chalkboard import sweep as sw
    from chalkboard.data import check_counts
    from chalkboard.evaluate import Scenario

    if len(args.sweep) > 3:
        raise UserError("--sweep: at most three inputs at once")
    axes = [sw.parse_axis(a) for a in args.sweep]
    args.quantity, note = _under_layout(args.quantity, args.layout)
    data = _load(args)
    sc = Scenario(data, args.hardware, args.model, _parse_sets(args.set))
    check_counts(sc.overrides)
    result = sw.sweep(sc, list(args.quantity), axes)
    if args.json:
        print(sw.as_json({"hardware": sc.hw.id, "model": sc.model.id, "formats": sc.formats,
                          "units": {n: sw.unit_of(n) for n in [*result["axes"], *args.quantity]},
                          "points": sw.sweep_records(result, list(args.quantity))}))
    elif args.csv:
        sys.stdout.writelines(sw.sweep_csv(result, list(args.quantity)))
    else:
        print(f"{', '.join(args.quantity)} on {sc.hw.id} x {sc.model.id}; {sc.formats_text()}")
        print(sw.aligned(sw.sweep_table(result, list(args.quantity))))
    if note:
        print(note, file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    from chalkboard import sweep as sw
    from derivations import REGISTRY

    for name in args.quantity:
        _known_quantity(name, REGISTRY)
    args.quantity, note = _under_layout(args.quantity, args.layout)
    given = args.model
    data = _load(args)
    hardware = [h.strip() for h in args.hardware.split(",") if h.strip()] if args.hardware else list(data.hardware)
    models = [m.strip() for m in given.split(",") if m.strip()] if given else [args.model]
    if data.config_model and data.config_model not in models:
        models.append(data.config_model)
    rows = sw.compare(data, hardware, models, list(args.quantity), _parse_sets(args.set))
    if args.json:
        print(sw.as_json(rows))
    elif args.csv:
        head = ["hardware", "model", *[f"{q} [{sw.unit_of(q)}]" for q in args.quantity], "feasible", "formats"]
        body = [[r["hardware"], r["model"], *[("" if r["values"][q]["value"] is None else r["values"][q]["value"])
                                              for q in args.quantity], r["feasible"], r["formats"]] for r in rows]
        print(sw.as_csv([head, *body]), end="")
    else:
        print(sw.aligned(sw.compare_table(rows, list(args.quantity))))
        if any(not r["feasible"] for r in rows):
            print("† the set-up does not fit in the chips' HBM (see `eval ... ` for the reason)")
    if note:
        print(note, file=sys.stderr)
    return 0


def cmd_plan(args) -> int:
    from chalkboard import plan as pl
    from chalkboard.validation import evidence
    from units import UnitParseError, conform, parse

    data = _load(args)
    if args.model not in data.models:
        raise UserError(f"{args.models_file}: unknown model id {args.model!r} (known: {', '.join(data.models)})")
    hardware = ([h.strip() for h in args.hardware.split(",") if h.strip()] if args.hardware
                else [h for h, e in data.hardware.items() if e.get("rental_price") is not None])
    for h in hardware:
        if h not in data.hardware:
            raise UserError(f"{args.hardware_file}: unknown hardware id {h!r} (known: {', '.join(data.hardware)})")
    try:
        ttft = None if args.max_ttft is None else conform(parse(args.max_ttft), "s", bare=True).magnitude
    except UnitParseError as e:
        raise UserError(f"--max-ttft {args.max_ttft}: {e}") from None
    for name, v in (("--context", args.context), ("--min-tokens-per-user", args.min_tokens_per_user),
                    ("--prompt", args.prompt), ("--max-ttft", ttft)):
        if v is not None and not v > 0:
            raise UserError(f"{name}: must be positive")
    formats = [f.strip() for f in args.formats.split(",")] if args.formats else None
    from derivations import NUMBER_FORMATS
    for f in formats or []:
        if f not in NUMBER_FORMATS:
            raise UserError(f"--formats {f}: expected weight formats among {', '.join(NUMBER_FORMATS)}")
    if not hardware:
        raise UserError(f"{args.hardware_file}: no chip with a rental price to plan over: name chips with --hardware")
    targets = pl.Targets(args.context, args.min_tokens_per_user, ttft, args.prompt, args.by)
    found = (ROOT / args.measurements_file).exists()
    search = pl.plan(data, args.model, hardware, targets, formats,
                     evidence(ROOT, data, args.measurements_file) if found else None, _parse_sets(args.set))
    extra = "".join(f" --model-config {args.model_config}" for _ in [0] if args.model_config) + "".join(
        f" --set {x}" for x in args.set or [])
    if args.json:
        print(json.dumps(pl.as_json(search, extra), indent=2, ensure_ascii=False))
    elif args.csv:
        print(pl.as_csv(search, extra), end="")
    else:
        print(pl.text(search, extra))
    return 0


def cmd_list(args) -> int:
    from chalkboard.results import list_hardware, list_models, list_quantities

    what = args.what
    if what == "quantities":
        rows = list_quantities()
        if args.json:
            print(json.dumps(rows, indent=2, ensure_ascii=False))
            return 0
        from derivations._core import CHAPTERS

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
                print(f"  {r['name']:<{w}}  {r['unit'] or '1':<18} {r['origin']:<9} {r['meaning']}")
        return 0
    data = _load(args)
    rows = list_hardware(data) if what == "hardware" else list_models(data)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
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


def cmd_audit(args) -> int:
    from chalkboard.audit import run_audit
    from chalkboard.data import read_yaml

    data = _load(args)
    read_yaml(ROOT / args.claims_file, args.claims_file)  # encoding, size, nesting, aliases: one line each
    audit = run_audit(data, ROOT / args.claims_file, args.claims_file)
    if args.json:
        print(json.dumps(audit.as_json(), indent=2, ensure_ascii=False))
        return 0
    print(audit.as_text())
    return 0


def cmd_validate(args) -> int:
    from chalkboard.validation import as_json, as_text, evaluate_all, load_measurements

    data = _load(args)
    results = evaluate_all(data, load_measurements(ROOT, data, args.measurements_file))
    if args.json:
        print(json.dumps(as_json(results), indent=2, ensure_ascii=False))
    else:
        print(as_text(results))
    return 1 if any(r.violates for r in results) else 0


def _hash_before_import(args) -> None:
    """The program, data and options hashed before the program's modules are imported (main does
    this first): what the build runs is what the hashes say. Each is taken again where what it
    names is kept, and nothing is kept if a file changed meanwhile (chalkboard/build.py: the
    stamp; chalkboard/figcache.py: the figures)."""
    from chalkboard import uptodate
    from chalkboard.figcache import code_digest

    args.program = code_digest(ROOT)
    try:
        args.fingerprint = uptodate.fingerprint(ROOT, args)
        args.fingerprinted = argparse.Namespace(**vars(args))   # the options as hashed
    except (OSError, ValueError):  # an unreadable input: the build itself says what is wrong
        args.fingerprint = None


def cmd_build(args) -> int:
    import os

    from chalkboard import uptodate

    if not hasattr(args, "fingerprint"):
        _hash_before_import(args)
    try:
        out = Path(os.path.realpath(args.out if Path(args.out).is_absolute() else ROOT / args.out))
    except (OSError, ValueError):
        args.fingerprint = None
    if args.fingerprint and not args.force and uptodate.up_to_date(out, args.fingerprint):
        print(f"chalkboard build: {args.out} is up to date (no program, data or option changed, and "
              "every output file is as written); --force rebuilds", file=sys.stderr)
        return 0
    from chalkboard.build import BuildError, build  # noqa: I001  (imports data only; derivations load in a timed stage)

    args.set_pairs = _parse_sets(args.set)
    if args.chip_pdf and not args.all_hardware:
        raise UserError("--chip-pdf goes with --all-hardware")
    if args.chip_pdf and args.no_pdf:
        raise UserError("--chip-pdf and --no-pdf contradict each other")
    try:
        return build(ROOT, args)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1



# -- argument parsing ---------------------------------------------------------------------
def make_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--hardware-file", default="hardware.yaml", help="hardware data (default: %(default)s)")
    common.add_argument("--models-file", default="models.yaml", help="model data (default: %(default)s)")
    common.add_argument("--prices-file", default="prices.yaml",
                        help="API price snapshots and memory tiers (default: %(default)s)")

    p = _Parser(
        prog="build.py", parents=[common],
        description="chalkboard: the math of Reiner Pope's lecture on LLM training and serving, as "
                    "unit-checked SymPy derivations evaluated for every chip and model.",
        epilog="With no command, builds the report (same as `build.py build`). "
               "Examples: `build.py eval balance_batch --hardware h100-sxm --model deepseek-v3`, "
               "`build.py eval step_time --hardware b200 --model llama-3-70b --set batch=64`, "
               "`build.py list hardware`.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def model_config(parser):
        parser.add_argument("--model-config", metavar="CONFIG.JSON",
                            help="add a model read from a Hugging Face config.json (Llama, Mistral, Qwen, "
                                 "Mixtral, Qwen-MoE, DeepSeek); it is the model used unless --model is given")

    def layout_option(parser):
        parser.add_argument(
            "--layout", choices=("deployed", "even"), default="deployed",
            help="deployed (default): step_time, latency_floor, cost_per_token, kv_per_chip and the other "
                 "names with a form under a layout are answered for one copy laid out as deployed (tp, "
                 "dp_attention, ep, pp: set them with --set; the default is the practitioner's layout on "
                 "the chip's scale-up domain), communication in the step; even: the lecture's picture, "
                 "one copy spread evenly over the chips, no communication")

    b = sub.add_parser("build", parents=[common], help="write build/report.html, report.pdf, figures and results.json")
    b.add_argument("--hardware", default=DEFAULT_HARDWARE, help="featured hardware id (default: %(default)s)")
    b.add_argument("--model", help=f"featured model id (default: the --model-config model, else {DEFAULT_MODEL})")
    b.add_argument("--out", default="build", help="output folder (default: %(default)s)")
    b.add_argument("--claims-file", default="claims.yaml", help="claims to audit (default: %(default)s)")
    b.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a workload or data input for the featured scenario (e.g. --set context=4096)")
    b.add_argument("--no-pdf", action="store_true", help="skip the PDF")
    b.add_argument("--all-hardware", action="store_true",
                   help="also write one report per chip with the featured model and workload, "
                        "OUT/hardware/CHIP/report.html, and an index of them, OUT/hardware/index.html, "
                        "with each chip's balance batch, latency floor and cost floor (--set applies to every chip)")
    b.add_argument("--chip-pdf", action="store_true",
                   help="with --all-hardware: also a PDF per chip, OUT/hardware/CHIP/report.pdf (slower)")
    b.add_argument("--force", action="store_true",
                   help="build even when nothing changed since the last build into --out (a figure "
                        "whose inputs did not change is still taken from .cache/figures/; remove "
                        ".cache/ to draw every figure)")
    model_config(b)
    b.set_defaults(func=cmd_build)

    c = sub.add_parser("check", parents=[common], help="dimension-check all equations; evaluate every hardware x model")
    c.set_defaults(func=cmd_check)

    e = sub.add_parser(
        "eval", parents=[common], help="evaluate one quantity",
        description="Evaluate one quantity for one hardware and model. --set overrides any input "
                    "(a hardware or model field, a workload parameter, format=bf16|fp8|fp4|int8|int4, "
                    "or price=SNAPSHOT) with a value and unit, so chips and models not in the files can "
                    "be evaluated; --hardware custom or --model custom takes every field from --set. A "
                    "bare number takes the input's declared unit (--set batch=128). A choice names an "
                    "option instead of a number: best_kv_tier is the memory tier a cached KV should "
                    "wait in for --set hold_time=...")
    e.add_argument("quantity", nargs="+", help="quantity name (see `build.py list quantities`); "
                                              "several with --sweep")
    e.add_argument("--hardware", default=DEFAULT_HARDWARE, help="hardware id (default: %(default)s)")
    e.add_argument("--model", help=f"model id (default: the --model-config model, else {DEFAULT_MODEL})")
    e.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help='override an input, e.g. --set hbm_bandwidth="8.1e11 B/s" --set batch=128')
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument("--sweep", action="append", metavar="NAME=SPEC",
                   help="sweep an input over a grid (up to three, crossed): a,b,c | start:stop:log (every "
                        "doubling) | start:stop:N[:log] | start:stop (whole numbers); e.g. --sweep batch=1:65536:log")
    e.add_argument("--csv", action="store_true", help="with --sweep: print CSV")
    layout_option(e)
    model_config(e)
    e.set_defaults(func=cmd_eval)

    cp = sub.add_parser(
        "compare", parents=[common], help="one table of quantities across chips and models",
        description="Evaluate quantities for several chips and models side by side, with their number "
                    "formats, and flag set-ups whose weights and KV cache do not fit in HBM.")
    cp.add_argument("quantity", nargs="+", help="quantity names (see `build.py list quantities`)")
    cp.add_argument("--hardware", help="comma-separated hardware ids (default: every chip)")
    cp.add_argument("--model", help=f"comma-separated model ids (default: {DEFAULT_MODEL})")
    cp.add_argument("--set", action="append", metavar="NAME=VALUE", help="override an input for every row")
    cp.add_argument("--json", action="store_true", help="print JSON")
    cp.add_argument("--csv", action="store_true", help="print CSV")
    layout_option(cp)
    model_config(cp)
    cp.set_defaults(func=cmd_compare)

    pn = sub.add_parser(
        "plan", parents=[common], help="the cheapest deployment that meets a speed target",
        description="Search every chip x layout (tp, dp_attention, ep within the scale-up domain) x batch x "
                    "weight format for the cheapest way to serve a model at a speed each user must get, "
                    "and print the frontier of cost per million tokens against tokens per second per user, "
                    "and why each chip loses. Every row carries the `eval` command that reproduces it.")
    pn.add_argument("--model", help=f"model id (default: the --model-config model, else {DEFAULT_MODEL})")
    pn.add_argument("--context", type=float, default=4096.0,
                    help="tokens of context each sequence holds while decoding (default: %(default)g)")
    pn.add_argument("--min-tokens-per-user", type=float, required=True, metavar="TOKEN/S",
                    help="the least decode speed each sequence must get, in tokens per second")
    pn.add_argument("--max-ttft", metavar="TIME", help='the longest time to first token, e.g. "2 s" or "500 ms"')
    pn.add_argument("--prompt", type=float, help="tokens of the prompt the time to first token is for "
                                                 "(default: the context)")
    pn.add_argument("--hardware", help="comma-separated hardware ids (default: every chip with a rental price)")
    pn.add_argument("--formats", help="comma-separated weight formats to try, e.g. bf16,fp8,fp4 (default: the "
                                      "model's own)")
    pn.add_argument("--by", choices=("expected", "bound"), default="expected",
                    help="which numbers the targets judge: expected (default: the bound at the efficiency "
                         "published measurements reach in each candidate's regime) or bound (100%% efficiency)")
    pn.add_argument("--set", action="append", metavar="NAME=VALUE", help="override an input for every candidate")
    pn.add_argument("--measurements-file", default="measurements.yaml",
                    help="the published measurements the expected efficiencies come from (default: %(default)s)")
    pn.add_argument("--json", action="store_true", help="print one JSON object")
    pn.add_argument("--csv", action="store_true", help="print the frontier as CSV, units in the header")
    model_config(pn)
    pn.set_defaults(func=cmd_plan)

    ls = sub.add_parser("list", parents=[common], help="list quantities, hardware or models")
    ls.add_argument("what", nargs="?", default="quantities", choices=["quantities", "hardware", "models"])
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=cmd_list)

    a = sub.add_parser("audit", parents=[common], help="audit the lecture's claims")
    a.add_argument("--claims-file", default="claims.yaml", help="claims to audit (default: %(default)s)")
    a.add_argument("--json", action="store_true", help="print a JSON list of claims")
    a.set_defaults(func=cmd_audit)

    v = sub.add_parser("validate", parents=[common],
                       help="published measurements against the strict step-time bound")
    v.add_argument("--measurements-file", default="measurements.yaml",
                   help="measurements to check (default: %(default)s)")
    v.add_argument("--json", action="store_true", help="print one JSON object")
    v.set_defaults(func=cmd_validate)
    return p


def main(argv=None) -> int:
    _safe_streams()
    signal.signal(signal.SIGTERM, _terminate)
    parser = make_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"build", "check", "eval", "compare", "plan", "list", "audit", "validate"}
    if not any(a in commands for a in argv) and not ({"-h", "--help"} & set(argv)):
        argv = ["build", *argv]  # no command: build the report
    args = parser.parse_args(argv)
    if args.func is cmd_build:
        _hash_before_import(args)
    from chalkboard.data import DataError
    from chalkboard.errors import InputError, MissingInput, NotApplicable
    from chalkboard import symcache
    symcache.load(ROOT)  # SymPy results of an earlier run from the same derivation sources
    if AS_COMMAND:
        gc.freeze()
        gc.enable()
    try:
        status = args.func(args)
        sys.stdout.flush()  # a full disk or closed pipe surfaces here, inside the error handling
        symcache.save(ROOT)
        return status
    except (DataError, InputError, UserError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except NotApplicable as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except MissingInput as e:
        hint = "" if "--set" in str(e) else " (supply it with --set)"
        print(f"error: cannot evaluate: {e}{hint}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0
    except OSError as e:  # the environment: a full disk, a closed or unwritable stream
        where = f": {e.filename}" if e.filename else ""
        print(f"error: {e.strerror or e}{where}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
