"""The run directory's safety: one writer at a time, whole files, whole lines, same settings on resume.

- :func:`lock`: an exclusive ``fcntl.flock`` on ``RUN_DIR/.lock``, taken by ``compare.py`` and
  passed to its child processes, so a second ``compare.py`` (a ``--resume`` started too early,
  a second terminal) is refused with one line instead of interleaving records. The lock lives
  as long as any process holding the descriptor: a child that outlives a killed parent keeps it. After a
  clean finish the ``.lock`` file is removed (:func:`claim`).
- :func:`atomic_write_text` (``contract.files``): ``plan.json``, ``run.json`` and ``env.json`` are written to
  a temporary file in the same folder, fsynced and renamed over the old one, so a full disk or a crash leaves
  the previous file or the new one, never half of one.
- :func:`cut_torn_tail`: a crash (or a full disk) can leave a last line without its newline;
  it is cut off before anything is appended, so the next record starts on a line of its own.
- :func:`settings_diff`: what differs between the settings a run was made with and a resume's.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LOCK = ".lock"
# Settings that change what is measured; a resume must match them (``run.json`` ``settings``).
RESUME_SETTINGS = (
    "model_label",
    "model_path",
    "model_config_hash",
    "dtype",
    "device",
    "random_weights",
    "attn",
    "tp",
    "max_model_len",
    "base_url",
    "endpoint",
    "engine_args",
    "tokenizer_path",
    "served_model_name",
    "prefix_caching",
    "engine_defaults",
    "dp",
    "router",
)
# what a run made before a setting existed had (its run.json does not name it)
RESUME_DEFAULTS = {
    "endpoint": "completions",
    "engine_args": {},
    "tokenizer_path": None,
    "served_model_name": None,
    "prefix_caching": True,
    "engine_defaults": "matched",
    "dp": 1,
    "router": "internal",
}


class RunDirBusy(RuntimeError):
    """Another process holds the run directory's lock (or it cannot be created or locked at all)."""


def lock(run_dir: Path) -> int:
    """Take the run directory's lock; the open descriptor (inheritable) holds it. RunDirBusy if taken."""
    fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.close(fd)
        raise RunDirBusy(
            f"another process{f' (pid {holder})' if holder else ''} is writing into {run_dir}: "
            "wait for it to finish, or stop it"
        ) from exc
    if not _still_there(run_dir / LOCK, fd):  # its holder finished and removed it: lock the file now there
        os.close(fd)
        return lock(run_dir)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    os.set_inheritable(fd, True)
    return fd


def _still_there(path: Path, fd: int) -> bool:
    """The locked descriptor is the file at ``path`` (not one a finished holder removed after this process
    opened it: a lock on that would be a lock on nothing)."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


@contextmanager
def claim(run_dir: Path) -> Iterator[int]:
    """Create (if needed) and lock the run directory for the duration; yields the lock's descriptor.
    A directory created here that ends up holding nothing but the lock is removed again; after a clean
    finish (no exception) the lock file goes too, removed while still held (a process that opened it
    meanwhile sees it gone and takes the new one: :func:`lock`). A run stopped short keeps it."""
    created = not run_dir.exists()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = lock(run_dir)
    except OSError as exc:
        if is_disk_full(exc):
            raise
        raise RunDirBusy(f"--out {run_dir}: not writable ({exc.strerror})") from exc
    clean = False
    try:
        yield fd
        clean = True
    finally:
        if created and [p.name for p in run_dir.iterdir()] == [LOCK]:
            (run_dir / LOCK).unlink()
            run_dir.rmdir()
        elif clean:
            (run_dir / LOCK).unlink(missing_ok=True)
        os.close(fd)


def cut_torn_tail(path: Path) -> int:
    """Cut a last line that has no newline (a write cut short); the number of bytes cut."""
    try:
        with path.open("rb+") as f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                return 0
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return 0
            keep, pos = 0, size
            while pos > 0:  # back to the last newline, in blocks
                step = min(65536, pos)
                pos -= step
                f.seek(pos)
                block = f.read(step)
                nl = block.rfind(b"\n")
                if nl >= 0:
                    keep = pos + nl + 1
                    break
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
            return size - keep
    except FileNotFoundError:
        return 0


def settings_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``name was X, now Y`` for each measuring setting that differs between a run and its resume."""

    def value(settings: dict[str, Any], k: str) -> Any:
        return settings.get(k, RESUME_DEFAULTS.get(k))

    return [
        f"{k.replace('_', '-')} was {value(old, k)!r}, now {value(new, k)!r}"
        for k in RESUME_SETTINGS
        if value(old, k) != value(new, k)
    ]


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
