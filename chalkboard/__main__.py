"""The `chalkboard` command (installed with the package) and `python -m chalkboard`: the same
program as `python build.py`, run as a script (its signal handling and quick exit included), from
the checkout or from the copy bundled in the package (runtime/home.py)."""
import runpy
import sys


def main() -> None:
    from chalkboard.runtime.home import ENTRY

    sys.argv[0] = str(ENTRY)
    runpy.run_path(str(ENTRY), run_name="__main__")   # ends the process itself (build.py: _exit)


if __name__ == "__main__":
    main()
