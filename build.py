#!/usr/bin/env python3
"""chalkboard: the blackboard math of LLM serving, made executable.

Commands (run `python build.py COMMAND --help` for each):

  python build.py                 build the report: build/report.html, report.pdf, figures, results.json
                                  (--all-hardware: also one report per chip and build/hardware/index.html)
  python build.py check           dimension-check every equation, evaluate every hardware x model
  python build.py eval QUANTITY   one number, its inputs and the closed form it came from
                                  (--sweep NAME=SPEC: a table over a grid of inputs)
  python build.py compare Q...    quantities side by side across chips and models
  python build.py plan ...        the cheapest chip, layout, batch and format for a speed per user
  python build.py list [WHAT]     quantities, hardware or models, with units and sources
  python build.py audit           the lecture's claims, each with a computed verdict
  python build.py validate        published measurements against the strict step-time bound
  python build.py watch           build, then again on every saved edit, everything kept warm
                                  (--serve: the output on localhost, the open page reloading itself)

Each command lives in chalkboard/cli/ (parser.py declares them all); this file is the entry:
the process around a command, the build's up-to-date check, and one-line errors.

Bad input (a YAML error, a missing field, a wrong dimension, an unknown id, an output folder
that cannot be written) prints one line naming the file, entry and field or the path, and exits
with status 2.
"""
from __future__ import annotations

import gc
import os
import signal


def _stop_now(signum, frame):
    """Ctrl-C, SIGTERM or SIGHUP before the command starts or after it ended: nothing is being
    written, so the process ends at once with one line (no traceback from an import)."""
    try:
        os.write(2, b"interrupted\n")
    except OSError:
        pass
    os._exit(128 + signum)


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
if __name__ == "__main__":   # first of all: the imports below take half a second
    for _sig in SIGNALS:
        signal.signal(_sig, _stop_now)

# Run as a command, the imports (SymPy, Pint) and the cache of SymPy's work make some 150,000 objects
# that live as long as the process: the cyclic garbage collector is off while they are made, then
# told to leave them out of its scans (gc.freeze in main), which it would otherwise walk again and
# again (a tenth of a build's time). Imported as a module (the tests), nothing changes.
AS_COMMAND = __name__ == "__main__"
if AS_COMMAND:
    gc.disable()
import argparse  # noqa: E402
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from chalkboard.cli.common import EXIT_BAD_INPUT, UserError, error_line, parse_sets  # noqa: E402
from chalkboard.cli.parser import COMMANDS, finish, make_parser  # noqa: E402
from chalkboard.cli.process import safe_streams  # noqa: E402
from chalkboard.runtime.lifecycle import handle_signals  # noqa: E402

NO_FOLDER = ("error: the folder this command was run in no longer exists (deleted or moved while it ran, "
             "or before); run it from a folder that exists")


def _folder_gone() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def _hash_before_import(args) -> None:
    """The program, data and options hashed before the program's modules are imported (main does
    this first): what the build runs is what the hashes say. Each is taken again where what it
    names is kept, and nothing is kept if a file changed meanwhile (chalkboard/build.py: the
    stamp; chalkboard/cache/figcache.py: the figures)."""
    from chalkboard.cache import uptodate
    from chalkboard.cache.figcache import code_digest

    args.program = code_digest(ROOT)
    try:
        args.fingerprint = uptodate.fingerprint(ROOT, args)
        args.fingerprinted = argparse.Namespace(**vars(args))   # the options as hashed
    except (OSError, ValueError):  # an unreadable input: the build itself says what is wrong
        args.fingerprint = None


def cmd_build(args) -> int:
    import os

    from chalkboard.cache import uptodate

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
    args.set_pairs = parse_sets(args.set)
    if args.chip_pdf and not args.all_hardware:
        raise UserError("--chip-pdf goes with --all-hardware")
    if args.chip_pdf and args.no_pdf:
        raise UserError("--chip-pdf and --no-pdf contradict each other")
    from chalkboard.report.figure_process import standby

    # the figure process, forked before anything is read: it gets ready to draw on the other core
    # while this one reads the inputs, derives and validates
    process = standby()
    try:
        from chalkboard.build import build  # noqa: I001  (imports data only; derivations load in a timed stage)
        from chalkboard.errors import BuildError

        try:
            return build(ROOT, args, process)
        except BuildError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    finally:
        if process is not None:
            process.stop()   # ended with the build, whatever ended it


def main(argv=None) -> int:
    safe_streams()
    parser = make_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a in COMMANDS for a in argv) and not ({"-h", "--help"} & set(argv)):
        argv = ["build", *argv]  # no command: build the report
    try:
        cwd = Path(os.getcwd())
    except FileNotFoundError:   # (relative paths are read from it: nothing can be done without it)
        print(NO_FOLDER, file=sys.stderr)
        return EXIT_BAD_INPUT
    args = finish(parser.parse_args(argv), cwd, ROOT)
    module, name = COMMANDS[args.command]
    run = globals()[name] if module == "build" else getattr(importlib.import_module(module), name)
    if run is cmd_build:
        _hash_before_import(args)
    if args.command == "watch" and args.worker is None:
        # the watch's supervisor: imports no library (its worker does; chalkboard/watch/); Ctrl-C,
        # SIGTERM and SIGHUP reach its own handling (supervisor.py), which stops the worker and says so
        return run(args)
    from chalkboard.data.loader import DataError
    from chalkboard.errors import InputError, MissingInput
    from chalkboard.cache import symcache
    symcache.load(ROOT)  # SymPy results of an earlier run from the same derivation sources
    if AS_COMMAND:
        gc.freeze()
        gc.enable()
    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    try:
        # from here the command may write: Ctrl-C, SIGTERM and SIGHUP kill the forked workers and
        # unwind (what was half-written is removed; chalkboard/runtime/lifecycle.py)
        handle_signals()
        status = run(args)
        sys.stdout.flush()  # a full disk or closed pipe surfaces here, inside the error handling
        symcache.save(ROOT)
        return status
    except (DataError, InputError, MissingInput) as e:   # UserError, NotApplicable among them
        line, status = error_line(e)
        print(line, file=sys.stderr)
        return status
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except SystemExit as e:   # SIGTERM or SIGHUP (lifecycle.interrupt), unwound like Ctrl-C
        if isinstance(e.code, int) and e.code > 128:
            print("interrupted", file=sys.stderr)
        raise
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0
    except OSError as e:  # the environment: a full disk, a closed or unwritable stream, a deleted folder
        line, status = (NO_FOLDER, EXIT_BAD_INPUT) if _folder_gone() else error_line(e)
        print(line, file=sys.stderr)
        return status
    finally:   # the command is over: as a command, a signal now ends the process at once
        for sig in SIGNALS:
            signal.signal(sig, _stop_now if AS_COMMAND else previous[sig])


def _exit(status: int):
    """End the command: its exit handlers run and its streams are flushed, then the process ends
    without freeing its objects one by one (SymPy's and Pint's caches, the data, the results:
    about 0.2 s of a build), which the system takes back whole."""
    import atexit
    import os

    atexit._run_exitfuncs()   # what Python's own exit runs first (multiprocessing stops its workers)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed stream, or a reader gone: nothing left to say
            pass
    os._exit(status if isinstance(status, int) else 0 if status is None else 1)


if __name__ == "__main__":
    _exit(main())
