"""The output folder, built beside and exchanged in one step: at every instant the folder holds the
complete old output or the complete new one (Linux renameat2 RENAME_EXCHANGE), and a build that
died leaves its sibling to be removed by the next."""
from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


from ..errors import OutputError
from .lifecycle import alive, forget, held, on_signal


# -- the output folder: built beside, exchanged in one step ------------------------------------
OUTPUT_NAMES = frozenset({"report.html", "report.pdf", "report.typ", "reference.html", "reference.pdf",
                          "reference.typ", "results.json", "figures", "hardware", ".chalkboard-stamp"})
# temp files that earlier versions of this program left inside the output folder
LEGACY_TEMP = re.compile(r"^\.(figures|report\.(html|pdf|typ)|results\.json)\.")


def shown_path(p: Path) -> str:
    try:
        return os.path.relpath(p, Path.cwd()) if str(p).startswith(str(Path.cwd()) + os.sep) else str(p)
    except (ValueError, OSError):   # (OSError: the working folder was deleted)
        return str(p)


def output_folder(root: Path, out_arg: str) -> Path:
    """The folder --out names, checked before anything is computed; OutputError in one line if it
    cannot be (re)placed: a file, a dangling link, under a file, or a folder holding other files."""
    arg = str(out_arg)
    if not arg.strip() or "\x00" in arg:
        raise OutputError(f"--out {arg!r}: not a usable folder name")
    out = Path(os.path.abspath(Path(arg) if Path(arg).is_absolute() else root / arg))
    try:
        if out.is_symlink():
            target = Path(os.path.realpath(out))
            if not target.exists():
                raise OutputError(f"--out {arg}: a symbolic link to {target}, which does not exist")
            out = target
        if out.exists() and not out.is_dir():
            raise OutputError(f"--out {arg}: exists and is not a folder")
        if out.parent == out:
            raise OutputError(f"--out {arg}: cannot replace the root folder")
        p = out.parent
        while not p.exists():
            if p.is_symlink():
                raise OutputError(f"--out {arg}: {p} is a symbolic link to something that does not exist")
            p = p.parent
        if not p.is_dir():
            raise OutputError(f"--out {arg}: {p} is a file, not a folder")
        if out.is_dir():
            foreign = sorted(n for n in os.listdir(out) if n not in OUTPUT_NAMES and not LEGACY_TEMP.match(n))
            if foreign:
                more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
                raise OutputError(f"--out {arg}: the folder holds files this program did not write "
                                  f"({', '.join(foreign[:3])}{more}); it replaces the whole folder, "
                                  "so choose a new or empty one")
    except OSError as e:
        raise OutputError(f"--out {arg}: {e.strerror or e}") from None
    return out


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    """Remove a file, link or folder we wrote (read-only folders included); errors ignored."""
    def retry(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            func(p)
        except OSError:
            pass
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, onerror=retry)
    except OSError:
        pass


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths a and b in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where
    the system or file system does not offer it."""
    fn = getattr(_libc(), "renameat2", None)
    if fn is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(str(a)), at_fdcwd, os.fsencode(str(b)), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


_LIBC = []


def _libc():
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


@contextmanager
def _writing_to(out: Path):
    """An OSError while the output is written, as the one line the user reads: what could not be
    written (the output folder, or the file named when it is not in the staging folder beside it)."""
    try:
        yield
    except OSError as e:
        where = e.filename if e.filename and not str(e.filename).startswith(str(out.parent / ".")) else out
        raise OutputError(f"cannot write {shown_path(Path(where))}: {e.strerror or e} "
                          "(the previous output is unchanged)") from None


class Writing:
    """A file of the output being written from ``content`` (text, bytes, or text in parts):
    ``write_while(go_on)`` writes parts while ``go_on()`` is true (the build writes results.json
    while it would otherwise wait for its forked jobs), ``finish()`` writes the rest, syncs the
    file and returns its SHA-256."""

    def __init__(self, path: Path, content, out: Path):
        self.path, self.out, self.digest = path, out, hashlib.sha256()
        self.parts = iter([content] if isinstance(content, (str, bytes)) else content)
        with _writing_to(out):
            self.file = open(path, "xb")

    def write_while(self, go_on) -> None:
        try:
            while go_on():
                part = next(self.parts, None)
                if part is None:
                    return
                chunk = part.encode("utf-8") if isinstance(part, str) else part
                self.digest.update(chunk)
                with _writing_to(self.out):   # (an error reading the parts is not the output's)
                    self.file.write(chunk)
        except BaseException:
            self.close()
            raise

    def finish(self) -> str:
        with self.file as f:
            self.write_while(lambda: True)
            with _writing_to(self.out):
                f.flush()
                os.fsync(f.fileno())
        with _writing_to(self.out):
            os.chmod(self.path, 0o644)
        return self.digest.hexdigest()

    def close(self) -> None:
        """Stop where it is: the file closed, what would have been written dropped."""
        self.file.close()
        close = getattr(self.parts, "close", None)
        if close is not None:
            close()


class Staging:
    """A fresh sibling of the output folder to write the whole output into; commit() exchanges it
    with the output folder. Leaving the block without commit() removes it."""

    def __init__(self, out: Path):
        self.out, self.path, self.committed = out, None, False
        self.open: list[Writing] = []   # files being written a part at a time
        self.prefix = f".{out.name}.tmp-"

    def _stale(self):
        """Recover from an earlier build killed mid-write: an old output moved aside (fallback
        path only) is moved back; every other leftover of a process that no longer runs goes."""
        parent = self.out.parent
        pat = re.compile(rf"^{re.escape(self.prefix)}(\d+)-(old-)?")
        for name in sorted(os.listdir(parent)):
            m = pat.match(name)
            if not m or alive(int(m.group(1))):
                continue
            if m.group(2) and not self.out.exists() and not self.out.is_symlink():
                os.rename(parent / name, self.out)
                continue
            _remove(parent / name)

    def __enter__(self):
        # (a with block's exit runs only once its entry returned: what fails or is interrupted
        # here cleans up here; the folder is made and recorded with the signals held)
        parent = self.out.parent
        try:
            with _writing_to(self.out):
                parent.mkdir(parents=True, exist_ok=True)
                self._stale()
                with held():
                    self.path = Path(tempfile.mkdtemp(prefix=f"{self.prefix}{os.getpid()}-", dir=parent))
                    on_signal(self, self._remove_path)
                os.chmod(self.path, 0o755)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def write(self, rel: str, content) -> str:
        """Write ``content`` (text, bytes, or text in parts, written as they come) to ``rel``;
        returns its SHA-256."""
        return self.writing(rel, content).finish()

    def writing(self, rel: str, content) -> "Writing":
        """``rel`` opened for ``content``, to be written a part at a time (see Writing); closed
        with the block if it is not finished."""
        path = self.path / rel
        with _writing_to(self.out):
            for folder in reversed(path.parents):
                if folder.is_relative_to(self.path) and not folder.is_dir():
                    folder.mkdir()
                    os.chmod(folder, 0o755)
        self.open.append(Writing(path, content, self.out))
        return self.open[-1]

    def commit(self) -> None:
        with _writing_to(self.out):
            self._commit()

    def _commit(self) -> None:
        for d in [p for p in self.path.rglob("*") if p.is_dir()] + [self.path]:
            _fsync_dir(d)
        with held():   # the exchange and its record as one step (self.path: then the old output)
            if not self.out.exists() and not self.out.is_symlink():
                os.rename(self.path, self.out)       # first build: nothing to replace
            elif not _exchange(self.path, self.out):
                # no atomic exchange here: move the old aside, then the new in (a later build moves
                # the old back if this process dies between the two renames)
                aside = self.out.parent / f"{self.prefix}{os.getpid()}-old-{self.path.name[-8:]}"
                os.rename(self.out, aside)
                os.rename(self.path, self.out)
                self.path = aside
            self.committed = True
        _fsync_dir(self.out.parent)
        _remove(self.path)                        # the old output, now beside

    def __exit__(self, exc_type, exc, tb):
        try:
            for writing in self.open:
                try:
                    writing.close()
                except Exception:   # noqa: BLE001  (a part that fails as it is dropped: the folder still goes)
                    pass
        finally:
            with held():   # (a second Ctrl-C waits until it is gone)
                self._remove_path()
                forget(self)
        return False

    def _remove_path(self) -> None:
        """The new output unused, or after commit() the old one."""
        if self.path is not None:
            _remove(self.path)
