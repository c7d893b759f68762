"""Start one backend's child process and stop it, with everything it started, on Ctrl-C or SIGTERM.

The child runs in its own session and process group (``start_new_session``): the engine
processes it starts (vLLM's engine core, a launched server) join that group, so one
``killpg`` reaches all of them. ``compare.py`` turns SIGTERM and SIGHUP into :class:`Interrupted`
(SIGINT is Python's ``KeyboardInterrupt``), forwards the signal to the group, waits for it to stop
(then SIGKILL), and exits ``128 + signal`` with a resume hint. The run directory's lock descriptor
is passed down, so a child that outlives a killed parent still keeps a second writer out.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

STOP_WAIT_S = 30.0  # how long a child gets to close its engine after the signal


class Interrupted(Exception):  # it is a signal, like KeyboardInterrupt
    """SIGTERM or SIGHUP reached ``compare.py``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, frame: object) -> None:
    raise Interrupted(signum)


@contextmanager
def handlers() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Interrupted` while the run's children run (then the old handlers
    return)."""
    old = {sig: signal.signal(sig, _raise_interrupted) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def stop_group(proc: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to the child's process group, wait, then SIGKILL the group."""
    for s, wait in ((sig, STOP_WAIT_S), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, s)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_child(root: Path, run_dir: Path, backend: str, python: str, lock_fd: int, start: int = 0) -> int:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
    }
    command = [python, "-m", "llm_call_anatomy.harness.child", str(run_dir), backend, "--start", str(start)]
    proc = subprocess.Popen(command, cwd=root, env=env, start_new_session=True, pass_fds=(lock_fd,))
    try:
        return proc.wait()
    except KeyboardInterrupt:
        stop_group(proc, signal.SIGINT)
        raise
    except Interrupted as exc:
        stop_group(proc, exc.signum)
        raise
