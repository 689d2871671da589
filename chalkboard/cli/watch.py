"""`build.py watch`: build the report, then again on every saved edit (chalkboard/watch/)."""
from __future__ import annotations

from .common import ROOT


def cmd_watch(args) -> int:
    if args.worker is not None:   # the process that builds (started by the one below)
        from ..watch.loop import run

        return run(ROOT, args, args.worker)
    from ..watch.supervisor import supervise

    return supervise(ROOT, args)
