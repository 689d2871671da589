"""`python build.py watch`: the edit loop. The report is built once, then again on every saved
edit, with everything that does not depend on the edit kept warm.

Two processes. The supervisor (``supervisor.py``: the command itself, which imports no library)
watches the program (chalkboard/, derivations/, units/, lecture/, build.py), serves the output
with ``--serve``, and runs the worker: `build.py watch --worker`, a fresh interpreter. The
worker (``loop.py``) watches the data (the YAML files and templates/) and rebuilds in the same
process on each edit: the imports, SymPy's results, the compiled closed forms, matplotlib (for
the figure processes it forks) and a Typst compiler (``typst_process.py``) stay loaded. An edit
to the program cannot be reloaded safely in place (modules hold what was computed from the old
code), so the supervisor starts a new worker: a fresh interpreter, never a stale result.

The page comes first: report.html, results.json and the figures are committed as soon as they
are made (the previous PDF kept beside them), and the PDF, compiled meanwhile by the warm Typst,
replaces the old one when it is done. An edit that makes the data invalid prints the usual one
line and keeps the last good output; Ctrl-C ends the loop with status 130.
"""
