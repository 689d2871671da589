"""`build.py watch`: build the report, then again on every saved edit. The command lives with the
loop it runs (the commands' table in cli/parser.py names it), so cli/ never imports the loop."""
from __future__ import annotations

import sys

from ..cli.common import ROOT, error_line


def cmd_watch(args) -> int:
    if args.worker is not None:   # the process that builds (started by the one below)
        from .loop import run

        return run(ROOT, args, args.worker)
    from .supervisor import supervise

    try:   # (build.py's entry returns before its own error handling: nothing imported here needs it)
        return supervise(ROOT, args)
    except Exception as e:   # noqa: BLE001  (told in one line if the user can act on it)
        told = error_line(e)
        if told is None:
            raise
        print(told[0], file=sys.stderr)
        return told[1]
