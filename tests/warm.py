"""`python build.py ...` as a user runs it, without paying Python's start and the libraries' imports
for each of the suite's several hundred runs.

Most of a failing command's time (a bad --set, a malformed YAML file) is the import of SymPy, Pint,
PyYAML, Jinja2 and numpy: about 0.7 s of 0.8 s on a 2-core machine. A helper process imports those
libraries once, then forks a child for each run: the child moves to the project's folder, takes the
run's environment, stdin from /dev/null and stdout/stderr to files, and runs build.py as __main__
with build.py's folder first on sys.path, as `python build.py` would. Nothing of chalkboard is
imported before the fork, so each run imports the project it is given (a test's edited copy too),
and an uncaught exception prints its traceback and exits 1, as Python does.

A run whose environment sets PYTHON* variables (they act at interpreter start), or that needs a
preexec_fn, starts a real interpreter; so does every run when CHALKBOARD_TEST_COLD=1 is set.
"""
from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading

_HELPER = r'''
import atexit, json, os, runpy, sys, traceback
import sympy, pint, yaml, jinja2, numpy   # what every command imports: loaded once, before any fork

for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            fd = os.open(os.devnull, os.O_RDONLY)
            os.dup2(fd, 0)
            for target, path in ((1, req["stdout"]), (2, req["stderr"])):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(fd, target)
            sys.argv = [req["script"], *req["args"]]
            sys.path[0] = os.path.dirname(req["script"])
            try:
                runpy.run_path(req["script"], run_name="__main__")
                code = 0
            except SystemExit as e:
                if e.code is None or isinstance(e.code, int):
                    code = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    code = 1
            except BaseException:
                traceback.print_exc()
                code = 1
            atexit._run_exitfuncs()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    sys.stdout.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
    sys.stdout.flush()
'''


class _Helper:
    def __init__(self):
        self.proc = None
        self.lock = threading.Lock()

    def start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", _HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=tempfile.gettempdir())
        atexit.register(self.stop)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def run(self, script: str, args: list[str], cwd: str, env: dict, timeout: float):
        with self.lock, tempfile.TemporaryDirectory() as tmp:
            if self.proc is None or self.proc.poll() is not None:
                self.start()
            out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
            req = {"script": script, "args": list(args), "cwd": cwd, "env": env, "stdout": out, "stderr": err}
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            answer = {}
            reader = threading.Thread(target=lambda: answer.update(json.loads(self.proc.stdout.readline() or "{}")))
            reader.start()
            reader.join(timeout)
            if "rc" not in answer:
                self.stop()   # the run and its helper go together; the next run starts a new helper
                raise subprocess.TimeoutExpired([script, *args], timeout)
            with open(out, encoding="utf-8") as f, open(err, encoding="utf-8") as g:
                return subprocess.CompletedProcess([sys.executable, script, *args], answer["rc"], f.read(), g.read())


_HELPERS: dict = {}


def run(script, args, cwd, env=None, timeout=300, preexec_fn=None) -> subprocess.CompletedProcess:
    """``python script *args`` in ``cwd`` with ``env`` (the whole environment; None: this one's),
    output captured as text, as subprocess.run(..., capture_output=True, text=True) returns it."""
    env = dict(os.environ if env is None else env)
    cold = (preexec_fn is not None or os.environ.get("CHALKBOARD_TEST_COLD") == "1"
            or any(k.startswith("PYTHON") and os.environ.get(k) != v for k, v in env.items()))
    if cold:
        return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, env=env, preexec_fn=preexec_fn)
    helper = _HELPERS.setdefault(os.getpid(), _Helper())
    return helper.run(str(script), [str(a) for a in args], str(cwd), env, timeout)
