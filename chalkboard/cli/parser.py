"""The command line, declared once: every command, its options and its help."""
from __future__ import annotations

import argparse

from pathlib import Path

from ..data.featured import FEATURED_HARDWARE as DEFAULT_HARDWARE, FEATURED_MODEL as DEFAULT_MODEL
from ..runtime.home import INSTALLED, default_out
from .common import EXIT_BAD_INPUT

# the commands and where each lives (module, function), imported only when run
COMMANDS = {"build": ("build", "cmd_build"), "check": ("chalkboard.cli.tables", "cmd_check"),
            "eval": ("chalkboard.cli.numbers", "cmd_eval"), "compare": ("chalkboard.cli.numbers", "cmd_compare"),
            "plan": ("chalkboard.cli.plan", "cmd_plan"), "list": ("chalkboard.cli.tables", "cmd_list"),
            "audit": ("chalkboard.cli.tables", "cmd_audit"), "validate": ("chalkboard.cli.tables", "cmd_validate"),
            "watch": ("chalkboard.watch.command", "cmd_watch")}


class _Parser(argparse.ArgumentParser):
    """argparse, except that a bad argument is one line (not the usage), exit status 2."""

    def error(self, message):
        self.exit(EXIT_BAD_INPUT, f"error: {self.prog}: {message} (see `{self.prog} --help`)\n")


# Options naming a file or folder, with the default each takes in the project's folder. They are
# parsed with no default (argparse.SUPPRESS), so that an option given before the command is not
# replaced by the command's own default; finish() then fills in what was not given.
PATHS = {"hardware_file": "hardware.yaml", "models_file": "models.yaml", "prices_file": "prices.yaml",
         "claims_file": "claims.yaml", "measurements_file": "measurements.yaml", "out": "build"}


def finish(args, cwd: Path, root: Path) -> argparse.Namespace:
    """``args`` with each path option not given set to its default (read from the project's folder,
    which installed is the data bundled in the package; the output folder then goes to ``cwd``:
    runtime/home.py) and each one given relative to ``cwd``, the folder the command was run from, made
    absolute."""
    try:
        elsewhere = cwd.resolve() != root.resolve()
    except OSError:   # the working folder was removed: a relative path names nothing there
        elsewhere = True
    for name in getattr(args, "paths_declared", ()):
        given = getattr(args, name, None)
        if given is None:
            setattr(args, name, default_out(cwd) if name == "out" else PATHS[name])
        elif elsewhere and given and not Path(given).is_absolute():
            setattr(args, name, str(cwd / given))
    return args


def _files(parser):
    d = argparse.SUPPRESS
    parser.add_argument("--hardware-file", default=d, help=f"hardware data (default: {PATHS['hardware_file']})")
    parser.add_argument("--models-file", default=d, help=f"model data (default: {PATHS['models_file']})")
    parser.add_argument("--prices-file", default=d,
                        help=f"API price snapshots and memory tiers (default: {PATHS['prices_file']})")


def _model_config(parser):
    parser.add_argument("--model-config", metavar="CONFIG.JSON",
                        help="add a model read from a Hugging Face config.json (Llama, Mistral, Qwen, "
                             "Mixtral, Qwen-MoE, DeepSeek); it is the model used unless --model is given")

def _layout_option(parser):
    parser.add_argument(
        "--layout", choices=("deployed", "even"), default="deployed",
        help="deployed (default): step_time, latency_floor, cost_per_token, kv_per_chip and the other "
             "names with a form under a layout are answered for one copy laid out as deployed (tp, "
             "dp_attention, ep, pp: set them with --set; the default is the practitioner's layout on "
             "the fewest chips that hold the model), communication in the step; even: the lecture's picture, "
             "one copy spread evenly over the chips, no communication")


def _add_build(sub, common) -> None:
    """`build` and its options."""
    b = sub.add_parser("build", parents=[common], help="write build/report.html, report.pdf, figures and results.json")
    b.add_argument("--hardware", default=DEFAULT_HARDWARE, help="featured hardware id (default: %(default)s)")
    b.add_argument("--model", help=f"featured model id (default: the --model-config model, else {DEFAULT_MODEL})")
    b.add_argument("--out", default=argparse.SUPPRESS, help=f"output folder (default: {PATHS['out']})")
    b.add_argument("--claims-file", default=argparse.SUPPRESS,
                   help=f"claims to audit (default: {PATHS['claims_file']})")
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
    _model_config(b)
    b.set_defaults(command="build", paths_declared=('hardware_file', 'models_file', 'prices_file', 'out', 'claims_file'))


def _add_watch(sub, common) -> None:
    """`watch`: the build again on every saved edit."""
    w = sub.add_parser(
        "watch", parents=[common], help="build the report, then again on every saved edit (--serve: a live page)",
        description="Build the report, then watch its inputs and build again on every saved edit, in a "
                    "process that keeps the libraries, SymPy's results, the figures and Typst warm: the "
                    "page and results.json are written first, the PDF when Typst is done. An edit to the "
                    "data or the templates is rebuilt in place; an edit to the program (chalkboard/, "
                    "derivations/, units/, lecture/, build.py) starts a fresh process. An edit that makes "
                    "the data invalid prints one line and keeps the last good output. Ctrl-C ends it.")
    w.add_argument("--hardware", default=DEFAULT_HARDWARE, help="featured hardware id (default: %(default)s)")
    w.add_argument("--model", help=f"featured model id (default: {DEFAULT_MODEL})")
    w.add_argument("--out", default=argparse.SUPPRESS, help=f"output folder (default: {PATHS['out']})")
    w.add_argument("--claims-file", default=argparse.SUPPRESS, help=f"claims to audit (default: {PATHS['claims_file']})")
    w.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a workload or data input for the featured scenario (e.g. --set context=4096)")
    w.add_argument("--no-pdf", action="store_true", help="skip the PDF")
    w.add_argument("--serve", action="store_true",
                   help="also serve the output folder on localhost; the open page reloads itself after each rebuild")
    w.add_argument("--port", type=int, default=8000, help="the port --serve listens on (default: %(default)s; 0: any free one)")
    w.add_argument("--worker", type=int, metavar="FD", help=argparse.SUPPRESS)   # the process that builds
    w.set_defaults(command="watch", paths_declared=('hardware_file', 'models_file', 'prices_file', 'out', 'claims_file'))


def _add_eval(sub, common) -> None:
    """`check`, and `eval`: one quantity, or a sweep of several."""
    c = sub.add_parser("check", parents=[common], help="dimension-check all equations; evaluate every hardware x model")
    c.set_defaults(command="check", paths_declared=('hardware_file', 'models_file', 'prices_file'))

    e = sub.add_parser(
        "eval", parents=[common], help="evaluate one quantity",
        description="Evaluate one quantity for one hardware and model. --set overrides any input "
                    "(a hardware or model field, a workload parameter, format=bf16|fp8|fp4|int8|int4, "
                    "price=SNAPSHOT, or engine=NAME: the engine model fitted to that engine's published runs, "
                    "where `validate` lists one, "
                    "for every expected number) with a value and unit, so chips and models not in the files can "
                    "be evaluated; --hardware custom or --model custom takes every field from --set. A "
                    "count (batch, context, tp) may be a bare number (--set batch=128); any other input "
                    "needs its unit (--set hbm_bandwidth=\"3.35 TB/s\"). Not given, the workload is 64 "
                    "sequences of 4,096 tokens, on the fewest chips of one scale-up domain that hold the "
                    "weights and that KV cache under the default layout (eval names the defaults it took; "
                    "the report and audit keep the lecture's 2,000 sequences of 8,192 tokens on a scale-up "
                    "domain). A choice names an option instead of a number: best_kv_tier is the memory tier "
                    "a cached KV should wait in for --set hold_time=...")
    e.add_argument("quantity", nargs="+", help="quantity name (see `build.py list quantities`); "
                                              "several with --sweep")
    e.add_argument("--hardware", default=DEFAULT_HARDWARE, help="hardware id (default: %(default)s)")
    e.add_argument("--model", help=f"model id (default: the --model-config model, else {DEFAULT_MODEL})")
    e.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help='override an input, e.g. --set hbm_bandwidth="8.1e11 B/s" --set batch=128')
    e.add_argument("--json", action="store_true", help="print one JSON object (everything --explain prints)")
    e.add_argument("--explain", action="store_true",
                   help="also print the definition, the closed form with every quantity expanded to the inputs, "
                        "the board form, and each input with its value and source")
    e.add_argument("--sweep", action="append", metavar="NAME=SPEC",
                   help="sweep an input over a grid (up to three, crossed): a,b,c | start:stop:log (every "
                        "doubling) | start:stop:N[:log] | start:stop (whole numbers); e.g. --sweep batch=1:65536:log")
    e.add_argument("--csv", action="store_true", help="with --sweep: print CSV")
    _layout_option(e)
    _model_config(e)
    e.set_defaults(command="eval", paths_declared=('hardware_file', 'models_file', 'prices_file'))


def _add_compare(sub, common) -> None:
    """`compare`: quantities across chips and models."""
    cp = sub.add_parser(
        "compare", parents=[common], help="one table of quantities across chips and models",
        description="Evaluate quantities for several chips and models side by side, with their number "
                    "formats, and flag set-ups whose weights and KV cache do not fit in the engine's share of "
                    "HBM (engine_memory_share, 90%%). Each row names its deployment (chips, layout, batch); "
                    "each column keeps the name asked, in the unit its header names. The workload not given "
                    "is eval's: 64 sequences of 4,096 tokens on the fewest chips that hold the model, which "
                    "differs from chip to chip (--chips N holds it the same for every row).")
    cp.add_argument("quantity", nargs="+", help="quantity names (see `build.py list quantities`)")
    cp.add_argument("--hardware", help="comma-separated hardware ids (default: every chip)")
    cp.add_argument("--model", help=f"comma-separated model ids (default: {DEFAULT_MODEL})")
    cp.add_argument("--chips", metavar="N",
                    help="the same number of chips for every row (as --set chips=N); not given, each row takes the "
                         "fewest chips that hold its model, and the table names them")
    cp.add_argument("--set", action="append", metavar="NAME=VALUE", help="override an input for every row")
    cp.add_argument("--json", action="store_true", help="print JSON")
    cp.add_argument("--csv", action="store_true", help="print CSV")
    _layout_option(cp)
    _model_config(cp)
    cp.set_defaults(command="compare", paths_declared=('hardware_file', 'models_file', 'prices_file'))


def _add_plan(sub, common) -> None:
    """`plan`: the cheapest deployment that meets a speed target."""
    pn = sub.add_parser(
        "plan", parents=[common], help="the cheapest deployment that meets a speed target",
        description="Search every chip x layout (tp, dp_attention, ep; a mixture of experts also over several "
                    "scale-up domains) x batch x weight format x deployment (colocated, or a prefill pool "
                    "beside the decoding copies) for the cheapest way to serve a model at a speed each user "
                    "must get, and print the frontier of cost per million tokens against tokens per second "
                    "per user, which deployment wins and why, and why each chip loses. Every row carries the "
                    "`eval` command that reproduces it.")
    pn.add_argument("--model", help=f"model id (default: the --model-config model, else {DEFAULT_MODEL})")
    pn.add_argument("--context", metavar="TOKENS",
                    help="tokens of context each sequence holds while decoding, e.g. 4096 or \"32k tokens\" (default: "
                         "the workload's default context, as `eval` takes it, raised to the prompt and its answer "
                         "where --prompt is longer)")
    pn.add_argument("--min-tokens-per-user", required=True, metavar="TOKEN/S",
                    help="the least decode speed each sequence must get, e.g. 30 or \"30 token/s\"")
    pn.add_argument("--max-ttft", metavar="TIME", help='the longest time to first token, e.g. "2 s" or "500 ms"')
    pn.add_argument("--prompt", metavar="TOKENS",
                    help="tokens of a request's prompt: its prefill, and the time to first token (default: the "
                         "context); longer than a --context given, it is refused")
    pn.add_argument("--output", metavar="TOKENS",
                    help="tokens a request decodes (its answer), which sets how often a copy prefills "
                         "(default: the workload's output_tokens, as `eval` takes it)")
    pn.add_argument("--hardware", help="comma-separated hardware ids (default: every chip with a rental price)")
    pn.add_argument("--formats", help="comma-separated weight formats to try, e.g. bf16,fp8 (default: bf16, "
                                      "fp8 and fp4 where the chip publishes a dense rate for the format)")
    pn.add_argument("--by", choices=("expected", "bound"), default="expected",
                    help="which numbers the targets judge: expected (default: the engine model fitted to "
                         "published measurements, with its range) or bound (100%% efficiency)")
    pn.add_argument("--set", action="append", metavar="NAME=VALUE", help="override an input for every candidate")
    pn.add_argument("--measurements-file", default=argparse.SUPPRESS,
                    help="the published measurements the expected efficiencies come from "
                         f"(default: {PATHS['measurements_file']})")
    pn.add_argument("--json", action="store_true", help="print one JSON object")
    pn.add_argument("--csv", action="store_true", help="print the frontier as CSV, units in the header")
    pn.add_argument("--total-gpus", type=int, metavar="N",
                    help="a budget of chips: deploy whole workers within it (colocated: N / chips copies; "
                         "disaggregated: x prefill and y decode workers, each with its own layout and batch, "
                         "rate-matched), the time to first token with the wait in the prefill queue")
    pn.add_argument("--emit", choices=("vllm", "sglang", "trtllm"),
                    help="print the launch command of the pick for this serving engine (its documented flags: "
                         "parallel sizes, max sequences = the batch, memory fraction = engine_memory_share, max "
                         "model length = the context, the weight and KV cache formats, speculative settings)")
    _model_config(pn)
    pn.set_defaults(command="plan", paths_declared=('hardware_file', 'models_file', 'prices_file', 'measurements_file'))


def _add_tables(sub, common) -> None:
    """`list`, `audit` and `validate`."""
    ls = sub.add_parser("list", parents=[common], help="list quantities, hardware or models")
    ls.add_argument("what", nargs="?", default="quantities", choices=["quantities", "hardware", "models"])
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.add_argument("--short", action="store_true", help="one line per chip or model: its headline figures")
    ls.set_defaults(command="list", paths_declared=('hardware_file', 'models_file', 'prices_file'))

    a = sub.add_parser("audit", parents=[common], help="audit the lecture's claims")
    a.add_argument("--claims-file", default=argparse.SUPPRESS,
                   help=f"claims to audit (default: {PATHS['claims_file']})")
    a.add_argument("--json", action="store_true", help="print a JSON list of claims")
    a.add_argument("--verdict", choices=("holds", "roughly", "fails", "inconclusive", "not-judged"),
                   help="only the claims with this verdict (fails: does not hold; inconclusive: computed, "
                        "but the evidence does not measure what the sentence says)")
    a.add_argument("--kind", choices=("derived", "arithmetic", "identity", "spec", "input", "sourced", "qualitative"),
                   help="only the claims of this kind")
    a.add_argument("--chapter", choices=("batch", "moe", "pipeline", "memory", "training", "prices", "crypto"),
                   help="only the claims judged on a quantity of this lecture chapter")
    a.add_argument("--grep", metavar="WORDS", help="only the claims whose id, quote or claim contains WORDS")
    a.set_defaults(command="audit", paths_declared=('hardware_file', 'models_file', 'prices_file', 'claims_file'))

    v = sub.add_parser("validate", parents=[common],
                       help="published measurements against the strict step-time bound")
    v.add_argument("--measurements-file", default=argparse.SUPPRESS,
                   help=f"measurements to check (default: {PATHS['measurements_file']})")
    v.add_argument("--json", action="store_true", help="print one JSON object")
    v.set_defaults(command="validate", paths_declared=('hardware_file', 'models_file', 'prices_file', 'measurements_file'))


def make_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    _files(common)

    p = _Parser(
        prog="chalkboard" if INSTALLED else "build.py", parents=[common],
        description="chalkboard: the math of Reiner Pope's lecture on LLM training and serving, as "
                    "unit-checked SymPy derivations evaluated for every chip and model.",
        epilog="With no command, builds the report (same as `build.py build`). "
               "Examples: `build.py eval balance_batch --hardware h100-sxm --model deepseek-v3`, "
               "`build.py eval step_time --hardware b200 --model llama-3-70b --set batch=64`, "
               "`build.py list hardware`.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for add in (_add_build, _add_watch, _add_eval, _add_compare, _add_plan, _add_tables):
        add(sub, common)
    return p
