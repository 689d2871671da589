"""SymPy's work kept on disk: used when the derivation sources are unchanged, never after an edit."""
import json
import shutil

import pytest

from conftest import ROOT, run_cli


@pytest.fixture
def project(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(ROOT, proj, ignore=shutil.ignore_patterns(".git", "build", "__pycache__", ".pytest_cache",
                                                              ".cache"))
    return proj


def _balance(proj):
    r = run_cli("eval", "balance_batch", "--hardware", "h100-sxm", "--model", "deepseek-v3", "--json", root=proj)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_cache_is_written_reused_and_never_stale(project):
    first = _balance(project)
    files = list((project / ".cache").glob("sympy-*.pickle"))
    assert len(files) == 1
    stamp = files[0].stat().st_mtime_ns
    again = _balance(project)
    assert files[0].stat().st_mtime_ns == stamp  # nothing new to keep: the file was not rewritten
    assert again["value"] == first["value"] and again["expression"] == first["expression"]
    # 1,979 TFLOP/s x 1 byte / (2 FLOP x 3.35 TB/s) x 671/37 (H100 datasheet, DeepSeek-V3 report)
    assert first["value"] == pytest.approx(1979e12 / (2 * 3.35e12) * 671 / 37, rel=1e-9)

    # an edited derivation: count 4 FLOP per multiply-accumulate; the balance batch halves,
    # so the solved closed form cannot have come from the old cache
    mod = project / "derivations" / "inputs.py"
    mod.write_text(mod.read_text().replace('"2 FLOP/parameter/token"', '"4 FLOP/parameter/token"'))
    edited = _balance(project)
    assert edited["value"] == pytest.approx(first["value"] / 2, rel=1e-12)
    assert "4·N_active" in edited["board_form"]
    new = list((project / ".cache").glob("sympy-*.pickle"))
    assert len(new) == 1 and new[0].name != files[0].name  # the stale file is replaced


def test_an_unreadable_cache_is_ignored(project):
    first = _balance(project)
    (cache,) = (project / ".cache").glob("sympy-*.pickle")
    cache.write_bytes(b"not a pickle")
    assert _balance(project)["value"] == first["value"]


def test_an_edited_audit_or_printer_module_names_another_cache(project):
    """The audit's parses and identity checks and the printed forms are kept with SymPy's work: an edit
    to any module whose work is kept names another cache file, so nothing kept before the edit is
    read after it. (The audit run before and after such an edit, its verdicts from the edited code:
    test_an_edited_audit_is_never_served_its_old_identity_checks, in the slow set.)"""
    from chalkboard.cache import symcache

    before = symcache.path(project)
    assert before == symcache.path(project)   # the same sources, the same name
    for rel in ("chalkboard/audit/fixed.py", "chalkboard/audit/exprtext.py", "chalkboard/typeset/printers.py",
                "chalkboard/evaluation/check.py", "derivations/roofline.py", "units/__init__.py"):
        mod = project / rel
        text = mod.read_text()
        mod.write_text(text + "\n# edited\n")
        try:
            assert symcache.path(project) != before, rel
        finally:
            mod.write_text(text)
        assert symcache.path(project) == before, rel


@pytest.mark.slow
def test_an_edited_audit_is_never_served_its_old_identity_checks(project):
    """The audit's parses and identity checks are kept too: editing chalkboard/audit/fixed.py (here, the
    message of a failed check) gives a new cache, and the audit's verdicts come from the edited code.
    Two audits, the second computing all of SymPy's work again: run by CI's slow set; by default
    test_an_edited_audit_or_printer_module_names_another_cache checks that such an edit names another cache."""
    def audit():
        r = run_cli("audit", "--json", root=project)
        assert r.returncode == 0, r.stderr
        return r.stdout
    first = audit()
    (old,) = (project / ".cache").glob("sympy-*.pickle")
    mod = project / "chalkboard" / "audit" / "fixed.py"
    text = mod.read_text()
    assert 'f"{text}: the difference is {printers.text(diff)}, not 0"' in text
    mod.write_text(text.replace('f"{text}: the difference is {printers.text(diff)}, not 0"',
                                'f"{text}: the two sides differ by {printers.text(diff)}"'))
    edited = audit()
    (new,) = (project / ".cache").glob("sympy-*.pickle")
    assert new.name != old.name
    assert "the difference is" in first and "the difference is" not in edited and "the two sides differ by" in edited


def test_sympy_work_done_in_a_forked_process_is_kept_by_the_parent():
    """The figures and the audit run in forked processes (chalkboard/cache/forked.py): SymPy work one
    does that no earlier run kept comes back with its result, so the build's cache keeps it and
    the next build does not do it again."""
    from chalkboard.cache.forked import Forked, can_fork
    from derivations import REGISTRY

    if not can_fork():
        pytest.skip("no fork here: the work is done in the build's own process")
    key = ("test", "work done in a child")
    REGISTRY.fresh.pop(key, None)
    try:
        job = Forked("keeping", lambda: REGISTRY.kept(key, lambda: 42) + 1)
        assert job.result() == 43
        assert REGISTRY.fresh[key] == 42
    finally:
        REGISTRY.fresh.pop(key, None)


def test_a_source_edited_during_a_run_keeps_nothing_under_its_new_name(project):
    """The cache file is named by the sources as they were when the run began (load); a source
    edited before the run ends would otherwise have this run's results kept under the edited
    source's name, and served to the next run."""
    from chalkboard.cache import symcache
    from derivations import REGISTRY

    key = ("test", "a result of the run")
    symcache.load(project)
    REGISTRY.fresh[key] = 1
    try:
        source = project / "derivations" / "roofline.py"
        source.write_text(source.read_text() + "\n# edited during the run\n")
        symcache.save(project)
        assert not (project / ".cache").exists() or not list((project / ".cache").glob("sympy-*.pickle"))
        symcache.load(project)   # a run that begins after the edit keeps its results
        symcache.save(project)
        assert len(list((project / ".cache").glob("sympy-*.pickle"))) == 1
    finally:
        REGISTRY.fresh.pop(key, None)
        symcache._LOADED.pop(project, None)


# -- the results shipped with the project (derivations/solved.pickle) ----------------------------
LOAD_COUNT = ("import sys; sys.path.insert(0, {root!r}); from pathlib import Path; "
              "from chalkboard.cache import symcache; print(symcache.load(Path({root!r})))")


def _preloaded(proj) -> int:
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", LOAD_COUNT.format(root=str(proj))], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


def _pinned(name):
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.lower().startswith(name.lower() + "=="):
            return line.split("==", 1)[1].strip()
    return None


def test_the_shipped_results_are_made_from_the_sources_as_they_are():
    """A fresh clone's first build starts from derivations/solved.pickle only if it was made from
    these sources: after editing a derivation (or chalkboard's audit, check, compiled or printers
    module, or units/), run `python3 -m chalkboard.cache.symcache --ship` and commit the file."""
    import pickle
    import sys

    import sympy
    from chalkboard.cache import symcache

    if sympy.__version__ != _pinned("sympy") or sys.version_info[:2] != (3, 11):
        pytest.skip("the shipped results are made with the pinned SymPy on Python 3.11")
    shipped = symcache.read_shipped(ROOT)
    assert shipped["key"] == symcache.path(ROOT).name, \
        "derivations/solved.pickle is stale: run `python3 -m chalkboard.cache.symcache --ship` and commit it"
    assert len(shipped["results"]) > 100


def test_a_fresh_clone_starts_from_the_shipped_results_and_an_edit_ignores_them(project):
    assert not (project / ".cache").exists()
    shipped = _preloaded(project)
    if shipped == 0:
        pytest.skip("the shipped results were made under another SymPy or Python version")
    assert shipped > 100
    # the first run keeps them in .cache/, as it keeps what it computes
    assert _balance(project)["value"] > 0
    assert len(list((project / ".cache").glob("sympy-*.pickle"))) == 1
    shutil.rmtree(project / ".cache")
    mod = project / "derivations" / "inputs.py"
    mod.write_text(mod.read_text() + "\n# edited\n")
    assert _preloaded(project) == 0     # another key: nothing shipped is used


def test_a_kept_template_is_taken_only_as_compiled_from_its_source_and_options(tmp_path):
    """The templates' compiled code is kept with SymPy's work (chalkboard/report/templates.py, KeptTemplates):
    an edited template is compiled again; an environment that reads templates differently (other
    delimiters) never takes another's code for the same template; nor one whose filter is now
    handed the environment (Jinja2 decides how to call a filter when it compiles)."""
    import jinja2
    from chalkboard.report.templates import KeptTemplates
    from derivations import REGISTRY

    (tmp_path / "t.j2").write_text("{{ x | f }} <{ x }>")
    loader = jinja2.FileSystemLoader(str(tmp_path))

    def plain(v):
        return f"[{v}]"

    @jinja2.pass_environment
    def given_the_environment(env, v):
        return f"<{v}>"

    def render(f=plain, **options):
        env = jinja2.Environment(loader=loader, **options)
        env.filters["f"] = f
        env.bytecode_cache = KeptTemplates(env)
        return env.get_template("t.j2").render(x=1)
    kept = {k for k in REGISTRY.fresh if k[0] == "template"}
    try:
        assert render() == "[1] <{ x }>"
        ours = {k for k in REGISTRY.fresh if k[0] == "template"} - kept
        assert len(ours) == 1   # compiled once, and kept
        assert render() == "[1] <{ x }>"
        assert render(given_the_environment) == "<1> <{ x }>"
        assert render(variable_start_string="<{", variable_end_string="}>") == "{{ x | f }} 1"
        (tmp_path / "t.j2").write_text("{{ x }}{{ x }}")
        assert render() == "11"
    finally:
        for k in {k for k in REGISTRY.fresh if k[0] == "template"} - kept:
            del REGISTRY.fresh[k]


def test_what_is_kept_of_the_report_equals_what_is_computed_again():
    """The dimension check's report and the closed forms' text shipped in derivations/solved.pickle
    (what a fresh clone's first build reads) equal what the code computes now; a source formula
    read back from the cache (kept as plain values) is the one printed now, its width included,
    and the shipped one, which a fresh clone's first build shows, is what is printed now."""
    import sys

    import sympy
    from chalkboard.cache import symcache
    from chalkboard.evaluation.check import _check_all
    from chalkboard.typeset.linebreak import SOURCE_FORMS, formula, kept_formula
    from derivations import REGISTRY

    if sympy.__version__ != _pinned("sympy") or sys.version_info[:2] != (3, 11):
        pytest.skip("the shipped results are made with the pinned SymPy on Python 3.11")
    shipped = symcache.read_shipped(ROOT)["results"]
    check = [v for k, v in shipped.items() if k[0] == "dimension check"]
    assert check == [vars(_check_all(REGISTRY))]
    texts = {k[1]: v for k, v in shipped.items() if k[0] == "closed form text"}
    assert len(texts) == len(REGISTRY.derived_quantities())
    assert all(text == str(REGISTRY.closed_form(name)) for name, text in texts.items())

    names = ["step_time", "balance_batch", "cost_per_token", "max_batch_capacity"]
    eq = next(iter(REGISTRY.equations))
    compared = 0
    for kind, name in [(k, n) for k in ("definition", "closed form", "board form") for n in names] + [("equation", eq)]:
        text, mathml, typst = formula(*SOURCE_FORMS[kind](REGISTRY, name))
        key = ("formula", kind, name)
        if key in shipped:   # shown only where it differs from the definition
            compared += 1
            assert shipped[key] == (text, mathml, str(typst), typst.em), (kind, name)
        REGISTRY.saved[key] = (text, mathml, str(typst), typst.em)   # as a later run reads it
        try:
            got = kept_formula(kind, name)
        finally:
            del REGISTRY.saved[key]
        assert got == (text, mathml, typst) and got[2].em == typst.em, (kind, name)
    assert compared >= 8


@pytest.mark.slow   # computes every form again; the default run's test_the_shipped_results_are_made_from_the_sources_as_they_are checks the key
def test_the_shipped_forms_are_the_ones_computed_now_term_for_term():
    """A fresh clone's first build prints the closed and board forms shipped in
    derivations/solved.pickle; a build that computes them (another SymPy, an emptied .cache/ after an
    edit undone) prints what the code gives. Both must be the same expression tree, not merely equal:
    3*(L*a/2 + 2*N) and 3*L*a/2 + 6*N are equal and print differently (the shipped file was once
    read back with SymPy evaluating, which distributes such a product)."""
    import sys

    import sympy
    from chalkboard.cache import symcache
    from derivations import REGISTRY
    from derivations.core import _tidy

    if sympy.__version__ != _pinned("sympy") or sys.version_info[:2] != (3, 11):
        pytest.skip("the shipped results are made with the pinned SymPy on Python 3.11")
    shipped = symcache.read_shipped(ROOT)["results"]   # as symcache.load reads it
    compared = 0
    for q in REGISTRY.derived_quantities():
        closed = _tidy(REGISTRY.expand(q.expr))      # what closed_form and board_form compute, not kept
        for key, now in ((("closed", q.name, ()), closed), (("board", q.name), REGISTRY.with_constants(closed))):
            if key in shipped:
                compared += 1
                assert sympy.srepr(shipped[key]) == sympy.srepr(now), (key, str(shipped[key]), str(now))
    assert compared > 2 * 100
