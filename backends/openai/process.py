"""A server process the harness owns: start it, wait until it is healthy, and make sure it stops.

The server runs in its own session and process group (``start_new_session=True``), so a
Ctrl-C in the terminal reaches the harness, not the server, and :meth:`ServerProcess.stop`
can end the server together with every worker it spawned: SIGTERM to the group, SIGKILL to
whatever is left after a grace period. ``stop`` runs from the backend's ``close()``, at
interpreter exit (``atexit``), on SIGTERM (see :func:`exit_on_sigterm`) and, on Linux, the
server also gets SIGTERM from the kernel when the harness process dies (``PR_SET_PDEATHSIG``).
Its stdout and stderr go to a log file in the run directory.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path


class ServerFailed(RuntimeError):
    """The server exited, or did not become healthy in time."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, from /proc on Linux."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    members = []
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit in this process, so ``finally`` blocks and atexit stop the server."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _die_with_parent() -> None:  # runs in the server's process, before exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """A second Ctrl-C must not cut the shutdown short (the parent forwards one to its child)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status == 200
    except (OSError, ValueError):
        return False


class ServerProcess:
    def __init__(self, label: str, argv: list[str], env: dict[str, str], log_path: Path) -> None:
        self.label = label
        self.argv = argv
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.pid: int | None = None  # kept after stop, for the record
        self.returncode: int | None = None

    def start(self) -> None:
        """Start the server in its own session, its output appended to the log under a header line; it dies
        with this process (Linux: the parent-death signal) and is stopped at exit."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._log.write(f"=== {stamp} {self.label}: {shlex.join(self.argv)}\n".encode())
        self._log.flush()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        self.pid = self.proc.pid
        atexit.register(self.stop)

    def wait_healthy(self, url: str, timeout_s: float) -> None:
        """Poll ``url`` every 0.5 s until it answers 200. Raises :class:`ServerFailed`, with the log's tail,
        as soon as the process exits or once ``timeout_s`` (``LCA_SERVER_START_TIMEOUT``) has passed."""
        deadline = time.monotonic() + timeout_s
        while True:
            code = self.exit_code()
            if code is not None:
                raise ServerFailed(
                    f"{self.label} exited with {describe_exit(code)} before it became healthy; "
                    f"see {self.log_path}{self.log_tail()}"
                )
            if _ok(url):
                return
            if time.monotonic() > deadline:
                raise ServerFailed(
                    f"{self.label} was not healthy within {timeout_s:g} s "
                    f"(LCA_SERVER_START_TIMEOUT); see {self.log_path}{self.log_tail()}"
                )
            time.sleep(0.5)

    def exit_code(self, wait_s: float = 0.0) -> int | None:
        """The server's exit code if it has exited (waiting up to ``wait_s`` for it), else None."""
        if self.proc is None:
            return self.returncode
        try:
            return self.proc.wait(wait_s) if wait_s > 0 else self.proc.poll()
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = 12) -> str:
        try:
            tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n  | " + "\n  | ".join(tail) if tail else ""

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERM to the whole group, SIGKILL to what is left after ``grace_s``; safe to call twice."""
        with _sigint_ignored():
            proc = self.proc
            if proc is None:
                return
            pgid = proc.pid  # the session leader: its pid is the group id
            _signal_group(pgid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(grace_s)
            while group_members(pgid) and time.monotonic() < deadline:
                time.sleep(0.1)
            if group_members(pgid) or proc.poll() is None:
                _signal_group(pgid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5)
                end = time.monotonic() + 5
                while group_members(pgid) and time.monotonic() < end:
                    time.sleep(0.1)
            self.returncode = proc.returncode
            self.proc = None  # only now: an interrupted stop is finished by the atexit hook
            self._log.close()


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"code {code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f"code {code}"
    return f"code {code}"
