"""Reliability beyond one bad value (tests/cli/test_hardening.py holds the table of those): the
data-file options wherever they are written, relative paths from the user's folder, signals at any
moment, a closed stdout, a build without Typst, control characters in a config's model name, kept
files altered on disk, and rules whose time must not grow with an input's value."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import warm
from conftest import ROOT

PROGRESS_OR_NOTE = ("chalkboard build", "  ", "note: ")
HW = (ROOT / "hardware.yaml").read_text(encoding="utf-8")
LLAMA_CONFIG = json.loads((ROOT / "tests" / "configs" / "llama-3.1-70b-instruct.json").read_text(encoding="utf-8"))


def run(args, cwd=ROOT, env=None, timeout=180):
    return warm.run(ROOT / "build.py", args, cwd=cwd, env={**os.environ, **(env or {})}, timeout=timeout)


def tree(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(out):
    return [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp-")]


def error_lines(stderr):
    return [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith(PROGRESS_OR_NOTE)]


# -- every flag honoured: the data-file options before or after the command --------------------
# each command, with what it needs to run; a broken models file must stop every one of them
COMMANDS = {
    "build": ["build", "--no-pdf", "--out", "{OUT}"],
    "check": ["check"],
    "eval": ["eval", "step_time"],
    "compare": ["compare", "step_time"],
    "plan": ["plan", "--min-tokens-per-user", "20"],
    "list": ["list", "models"],
    "audit": ["audit"],
    "validate": ["validate"],
}


@pytest.mark.parametrize("option", ["--hardware-file", "--models-file", "--prices-file"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_data_file_given_before_the_command_is_read(command, option, tmp_path):
    """`build.py --models-file BROKEN check` once passed: the command's own default replaced the
    option given before it."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("sources: [\n", encoding="utf-8")
    args = [a.replace("{OUT}", str(tmp_path / "out")) for a in COMMANDS[command]]
    r = run([option, str(broken), *args])
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr[-2000:])
    (line,) = error_lines(r.stderr)
    assert str(broken) in line and "YAML" in line, line
    assert not (tmp_path / "out").exists()


def _renamed_h100(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(HW.replace('name: "NVIDIA H100 SXM5 80 GB"', 'name: "My Own H100"', 1), encoding="utf-8")
    return f


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_a_data_file_is_used_wherever_it_is_written(before, tmp_path):
    f = _renamed_h100(tmp_path)
    args = ["--hardware-file", str(f), "list", "hardware"] if before else ["list", "hardware", "--hardware-file", str(f)]
    r = run(args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "My Own H100" in r.stdout and "NVIDIA H100 SXM5 80 GB" not in r.stdout


def test_the_later_of_two_data_files_wins(tmp_path):
    f = _renamed_h100(tmp_path)
    r = run(["--hardware-file", "no-such.yaml", "list", "hardware", "--hardware-file", str(f)])
    assert r.returncode == 0 and "My Own H100" in r.stdout, r.stderr[-2000:]


def test_relative_paths_are_read_from_the_working_folder(tmp_path):
    """A relative --hardware-file and --out name paths in the folder the command is run from,
    not in the project's folder."""
    _renamed_h100(tmp_path)
    r = run(["list", "hardware", "--hardware-file", "mine.yaml"], cwd=tmp_path)
    assert r.returncode == 0 and "My Own H100" in r.stdout, r.stderr[-2000:]
    r = run(["eval", "step_time", "--hardware-file", "hardware.yaml"], cwd=tmp_path)   # not the project's
    assert r.returncode == 2 and str(tmp_path / "hardware.yaml") in r.stderr and "not found" in r.stderr, r.stderr
    r = run(["build", "--no-pdf", "--out", "here"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "here" / "report.html").is_file()
    assert not (ROOT / "here").exists()


# -- no traceback: signals, a closed stdout, no Typst -------------------------------------------
def _started(args, cwd=ROOT):
    return subprocess.Popen([sys.executable, str(ROOT / "build.py"), *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _still_running(session: int) -> list[str]:
    r = subprocess.run(["pgrep", "-s", str(session)], capture_output=True, text=True)
    return r.stdout.split()


def _until(predicate, deadline=120.0, what="the condition"):
    """Wait for ``predicate()`` to hold, checking often, up to a deadline far past what an idle
    machine needs (a loaded one may take many times as long): no fixed sleep decides a test."""
    end = time.monotonic() + deadline
    while True:
        got = predicate()
        if got or time.monotonic() > end:
            assert got, f"no {what} within {deadline:.0f} s"
            return got
        time.sleep(0.02)


def _none_left(session: int) -> None:
    """Every process of the build's session ended (a killed parent's workers end with it)."""
    _until(lambda: not _still_running(session), what="end of every process of the build")


def _until_stage(p, stage: str) -> None:
    """Read the build's progress lines until ``stage`` has been timed."""
    line, deadline = "", time.monotonic() + 300
    while time.monotonic() < deadline and line.strip().split(" ")[:1] != [stage]:
        line = p.stderr.readline()
        if not line:
            break


def _until_build_py_runs(pid: int) -> None:
    """Wait until build.py's first lines have run (it then catches SIGHUP, which Python does not):
    before that, the interpreter itself starts (site's .pth files), which no script can guard."""
    status = f"/proc/{pid}/status"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with open(status) as f:
                caught = next(int(ln.split()[1], 16) for ln in f if ln.startswith("SigCgt:"))
        except (OSError, StopIteration):
            return
        if caught & (1 << (signal.SIGHUP - 1)):
            return
        time.sleep(0.002)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/PID/status")
@pytest.mark.parametrize("after", [0.0, 0.1, 0.25, 0.4])
@pytest.mark.parametrize("to_group", [False, True], ids=["process", "group"])
def test_ctrl_c_during_the_imports_is_one_line(after, to_group):
    """Ctrl-C in the first half second of build.py (the imports of SymPy, Pint, numpy): exit 130,
    one line."""
    p = _started(["eval", "step_time"])
    _until_build_py_runs(p.pid)
    time.sleep(after)
    os.killpg(p.pid, signal.SIGINT) if to_group else p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    if p.returncode == 0:   # a machine fast enough to have finished: nothing to interrupt
        return
    assert p.returncode == 130 and "Traceback" not in err, (p.returncode, err[-2000:])
    assert error_lines(err) == ["interrupted"], err


@pytest.mark.parametrize("how", ["SIGINT-group", "SIGHUP", pytest.param("SIGINT", marks=pytest.mark.slow),
                                 pytest.param("SIGTERM", marks=pytest.mark.slow),
                                 pytest.param("SIGHUP-group@validate", marks=pytest.mark.slow),
                                 pytest.param("SIGINT-group@figures", marks=pytest.mark.slow)])
def test_a_signal_mid_build_leaves_the_output_and_no_process(how, report_build, tmp_path):
    """Ctrl-C (to the process or its whole group), SIGHUP and SIGTERM while the build derives,
    draws or writes (as the staging folder is made, as the workers start, as the PDF's starts):
    one line, exit 128 + the signal, the previous output as it was, no temporary folder beside it
    and no process of the build left running."""
    how, _, stage = how.partition("@")
    name, _, group = how.partition("-")
    sig = getattr(signal, name)
    out = tmp_path / "out"
    shutil.copytree(report_build[0], out)
    before = tree(out)
    p = _started(["--force", "--out", str(out)])
    _until_stage(p, stage or "evaluate")
    os.killpg(p.pid, sig) if group else p.send_signal(sig)
    _, err = p.communicate(timeout=300)
    assert "Traceback" not in err, err[-3000:]
    if p.returncode != 0:
        assert p.returncode == 128 + sig, (p.returncode, err[-2000:])
        assert error_lines(err)[-1:] == ["interrupted"], err[-2000:]
        assert tree(out) == before, "the previous output changed"
    assert not leftovers(out), leftovers(out)
    _none_left(p.pid)


@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_kill_9_mid_build_leaves_the_output_and_no_process(group, report_build, tmp_path):
    """`kill -9` of the build (its main process, or the whole group) while it writes: the previous
    output as it was, every worker gone with it (they end with their parent), and what it left
    beside the output removed by the next build."""
    from chalkboard.runtime.staging import Staging

    out = tmp_path / "out"
    shutil.copytree(report_build[0], out)
    before = tree(out)
    p = _started(["--force", "--out", str(out)])
    _until_stage(p, "audit")
    os.killpg(p.pid, signal.SIGKILL) if group else p.kill()
    p.communicate(timeout=300)
    assert p.returncode == -signal.SIGKILL
    _none_left(p.pid)
    assert tree(out) == before, "the previous output changed"
    with Staging(out):   # what the next build does first
        pass
    assert not leftovers(out), leftovers(out)


def _in_a_deleted_folder(tmp_path, args, delete_after=None):
    """build.py run from a folder that is deleted before it starts, or ``delete_after`` seconds
    after its first lines ran (the imports: half a second), through bash, since Popen's cwd must exist."""
    here = tmp_path / "gone"
    here.mkdir()
    script = 'cd "$1" && shift && { [ -n "$DELAY" ] || rmdir "$PWD"; } && exec "$@"'
    env = {**os.environ, "DELAY": "" if delete_after is None else str(delete_after)}
    p = subprocess.Popen(["bash", "-c", script, "-", str(here), sys.executable, str(ROOT / "build.py"), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    if delete_after is not None:
        _until_build_py_runs(p.pid)
        time.sleep(delete_after)
        here.rmdir()
    out, err = p.communicate(timeout=300)
    return p.returncode, out, err


NO_FOLDER = "error: the folder this command was run in no longer exists"


@pytest.mark.parametrize("args", [["eval", "step_time"], ["list", "models"], ["build", "--no-pdf"]])
def test_a_deleted_working_folder_is_one_line(args, tmp_path):
    """Run from a folder that no longer exists (`cd /tmp/x; rm -rf /tmp/x; build.py ...`): one line,
    status 2, no traceback."""
    rc, _, err = _in_a_deleted_folder(tmp_path, args)
    assert rc == 2 and "Traceback" not in err, (rc, err[-3000:])
    (line,) = error_lines(err)
    assert line.startswith(NO_FOLDER), line


@pytest.mark.parametrize("after", [0.0, 0.3])
def test_a_working_folder_deleted_while_the_command_runs_is_one_line(after, tmp_path):
    """The folder deleted during the imports or after: the command either finishes (it no longer
    needs the folder) or says so in one line with status 2."""
    rc, out, err = _in_a_deleted_folder(tmp_path, ["eval", "step_time"], delete_after=after)
    assert "Traceback" not in err, err[-3000:]
    if rc == 0:
        assert "step_time" in out
    else:
        assert rc == 2 and [ln for ln in error_lines(err) if ln.startswith("error")] == error_lines(err), err
        (line,) = error_lines(err)
        assert line.startswith(NO_FOLDER), line


@pytest.mark.parametrize("args", [["eval", "step_time"], ["eval", "step_time", "--json"],
                                  ["eval", "step_time", "--sweep", "batch=1:64:log", "--csv"], ["list", "hardware"]])
def test_a_closed_stdout_is_not_an_error(args):
    r = subprocess.run(["bash", "-c", 'exec "$@" >&-', "-", sys.executable, str(ROOT / "build.py"), *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Traceback" not in r.stderr, (r.returncode, r.stderr[-2000:])


def _config_with_control_characters(tmp_path):
    f = tmp_path / "config.json"
    f.write_text(json.dumps({**LLAMA_CONFIG, "_name_or_path": "org/evil\x1b[31mred\x07 \u202eoverride"}),
                 encoding="utf-8")
    return f


RAW = ("\x1b", "\x07", "\u202e")


def test_control_characters_of_a_config_never_reach_the_terminal(tmp_path):
    f = _config_with_control_characters(tmp_path)
    r = run(["eval", "params_total", "--model-config", str(f), "--json"])
    assert r.returncode == 0, r.stderr[-2000:]
    for raw in RAW:
        assert raw not in r.stdout and raw not in r.stderr, repr(raw)
    assert "evil-31mred-override" in r.stderr   # the id made of the name's letters and digits


def test_a_build_without_a_pdf_needs_no_typst_and_shows_control_characters(tmp_path):
    """--no-pdf with Typst not importable builds the page, figures and report.typ; a config's model
    name with ESC, BEL and U+202E reaches none of them raw, and matplotlib draws it without a
    missing-glyph warning."""
    no_typst = tmp_path / "no-typst"
    (no_typst / "typst").mkdir(parents=True)
    (no_typst / "typst" / "__init__.py").write_text('raise ImportError("typst is not installed")\n')
    f = _config_with_control_characters(tmp_path)
    out = tmp_path / "out"
    r = run(["build", "--no-pdf", "--model-config", str(f), "--out", str(out)], env={"PYTHONPATH": str(no_typst)})
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "Glyph" not in r.stderr and "Warning" not in r.stderr, r.stderr[-3000:]
    assert (out / "report.html").is_file() and (out / "report.typ").is_file() and not (out / "report.pdf").exists()
    for rel in tree(out):
        text = (out / rel).read_bytes().decode("utf-8", errors="replace")
        for raw in RAW:
            assert raw not in text, (rel, repr(raw))
    assert "#fit[" not in (out / "report.typ").read_text(encoding="utf-8")   # valid Typst without the fitting
    assert "evil\\x1b[31mred\\x07 \\u202eoverride" in (out / "report.html").read_text(encoding="utf-8")


# -- kept work verified ---------------------------------------------------------------------------
def _flip_one_byte(path):
    """The file altered in place, its length unchanged (the last byte of the pickle's payload)."""
    raw = bytearray(path.read_bytes())
    i = len(raw) - 2
    raw[i] ^= 0x01
    path.write_bytes(bytes(raw))


def test_a_kept_figure_altered_on_disk_is_drawn_again(data, tmp_path):
    from chalkboard.cache.figcache import MISS, FigureCache

    kept = FigureCache(tmp_path, code="x")
    key = kept.key("step_time_vs_batch")
    kept.put(key, {}, ("<svg>AAAA</svg>", "h100-sxm"))
    kept.save()
    assert FigureCache(tmp_path, code="x").lookup(key, data) == ("<svg>AAAA</svg>", "h100-sxm")
    (path,) = (tmp_path / ".cache" / "figures").glob("*.pickle")
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"AAAA", b"BBBB"))   # same length, another figure
    assert len(path.read_bytes()) == len(raw)
    assert FigureCache(tmp_path, code="x").lookup(key, data) is MISS


def test_a_kept_pdf_altered_on_disk_is_compiled_again(tmp_path):
    from chalkboard.cache import pdfcache

    pdfcache.put(tmp_path, "k", "fitted", b"%PDF-1.7 the body")
    assert pdfcache.get(tmp_path, "k") == ("fitted", b"%PDF-1.7 the body")
    path = tmp_path / pdfcache.FOLDER / "k.pickle"
    path.write_bytes(path.read_bytes().replace(b"the body", b"THE BODY"))
    assert pdfcache.get(tmp_path, "k") is None
    pdfcache.put(tmp_path, "k2", "fitted", b"%PDF-1.7 x")
    _flip_one_byte(tmp_path / pdfcache.FOLDER / "k2.pickle")
    assert pdfcache.get(tmp_path, "k2") is None


def test_a_sealed_file_refuses_any_change():
    import pickle

    from chalkboard.cache import sealed

    raw = sealed.dumps({"a": [1, 2, 3]})
    assert sealed.loads(raw) == {"a": [1, 2, 3]}
    for bad in (raw[:-1], raw[:-1] + bytes([raw[-1] ^ 1]), pickle.dumps({"a": [1, 2, 3]}), b""):
        with pytest.raises(sealed.Broken):
            sealed.loads(bad)


# -- no rule whose time grows with an input's value ------------------------------------------------
def test_the_layout_rules_take_no_time_for_huge_counts():
    """tensor_parallel once tried every divisor candidate up to the chip count (10^12: hours)."""
    from derivations import rules

    start = time.perf_counter()
    assert rules.tensor_parallel(2.0**40, 0, 1, 128) == 128
    assert rules.tensor_parallel(999999999989.0, 0, 1, 64) == 1   # a prime chip count
    assert rules.tensor_parallel(3.0 * 2**30, 0, 1, 96) == 96
    assert rules.tensor_parallel(24.0, 0, 2, 64) == 4     # 12 chips a stage, 64 heads: 4 divides both
    assert rules.expert_chips(2.0**20, 1e9) == 2**20
    assert rules.expert_chips(256.0, 72.0) == 64          # DeepSeek-V3's 256 experts on an NVL72
    assert rules.expert_chips(384.0, 72.0) == 64          # Kimi K2's 384: 64 divides it, 72 does not
    assert rules.expert_chips(2.0**20 - 3, 10**9) == 2**20 - 3
    assert time.perf_counter() - start < 1


@pytest.mark.parametrize("layers, first, freq", [(61, 3, 1), (60, 0, 2), (7, 9, 1), (100, 5, 3), (60000, 3, 1)])
def test_a_configs_moe_layers_are_counted_without_walking_them(layers, first, freq, tmp_path):
    from chalkboard.data.hfconfig import read_config

    cfg = json.loads((ROOT / "tests" / "configs" / "deepseek-v3.json").read_text(encoding="utf-8"))
    cfg.update(num_hidden_layers=layers, first_k_dense_replace=first, moe_layer_freq=freq)
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg), encoding="utf-8")
    entry = read_config(f, "config.json")
    walked = len([i for i in range(layers) if i >= first and i % freq == 0])   # DeepSeek's rule, layer by layer
    assert entry.values["moe_layers"].quantity.magnitude == walked


def test_qwen_moe_layers_are_counted_without_walking_them(tmp_path):
    from chalkboard.data.hfconfig import read_config

    cfg = json.loads((ROOT / "tests" / "configs" / "qwen3-30b-a3b.json").read_text(encoding="utf-8"))
    cfg.update(num_hidden_layers=48, decoder_sparse_step=2, mlp_only_layers=[1, 3, 3, 4, 200, -1])
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg), encoding="utf-8")
    walked = len([i for i in range(48) if i not in (1, 3, 4) and (i + 1) % 2 == 0])   # Qwen's rule, layer by layer
    assert read_config(f, "config.json").values["moe_layers"].quantity.magnitude == walked


def test_a_huge_count_is_refused_in_seconds():
    """--set chips=10^12 once looped over every divisor candidate; --sweep batch=1:10^9 allocated
    10^9 points and was killed for memory."""
    for args in (["eval", "step_time", "--hardware", "h100-sxm", "--model", "llama-3-70b", "--set", "chips=1e12"],
                 ["eval", "step_time", "--sweep", "batch=1:1000000000"]):
        start = time.perf_counter()
        r = run(args, timeout=60)
        assert r.returncode == 2 and ("at most" in r.stderr or "points" in r.stderr), r.stderr[-2000:]
        assert time.perf_counter() - start < 30


@pytest.fixture(scope="module")
def all_hardware_build(tmp_path_factory):
    """A clean `build --all-hardware` (every chip's report), and its files' digests."""
    out = tmp_path_factory.mktemp("all-hardware") / "out"
    r = run(["--all-hardware", "--out", str(out)], timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    return out, tree(out)


@pytest.mark.slow   # a build of every chip's report after each kill (issue: within 120 s each)
@pytest.mark.parametrize("after", [0.1, 0.3, 0.5])
@pytest.mark.parametrize("group", [False, True], ids=["process", "group"])
def test_kill_9_of_an_all_hardware_build_leaves_old_or_new_output(after, group, all_hardware_build, tmp_path):
    """`kill -9` of `build --all-hardware` (its main process, or the whole group) 0.1, 0.3 and
    0.5 s after build.py starts: the output is the old one or the new one (the same here: the
    inputs did not change), no process of the build is alive 10 s later, and the next build,
    within 120 s, writes what a clean build writes and leaves nothing beside it."""
    clean, clean_tree = all_hardware_build
    out = tmp_path / "out"
    shutil.copytree(clean, out)
    p = _started(["--all-hardware", "--force", "--out", str(out)])
    _until_build_py_runs(p.pid)
    time.sleep(after)
    os.killpg(p.pid, signal.SIGKILL) if group else p.kill()
    p.communicate(timeout=60)
    _until(lambda: not _still_running(p.pid), deadline=10.0, what="end of every process of the build")
    assert tree(out) == clean_tree, "neither the old output nor the new one"
    t0 = time.monotonic()
    r = run(["--all-hardware", "--force", "--out", str(out)], timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert time.monotonic() - t0 < 120
    assert tree(out) == clean_tree, "the next build differs from a clean one"
    assert not leftovers(out), leftovers(out)
