"""No silence over a few seconds: a line while long work runs (an engine start, a warm-up, a load level).

    with Heartbeat("vllm: starting the engine", say=print, expected_s=40.0):
        backend.start()
    # after 5 s, every 5 s:  vllm: starting the engine ... 10 s (about 30 s left, as the last one took)

A daemon thread says ``what`` (a string, or a function read at each beat) with the seconds elapsed every
``every_s`` seconds until the block ends; the first line comes only once the work has taken ``every_s``
(short work says nothing). ``expected_s``, where the run knows how long the same work took before (an
earlier engine start of this backend), adds what is left at that pace, or that it is taking longer.
The lines go through ``say``: the child's console (stderr, beside its progress bar) or the parent's stdout
(its stderr keeps a mistake's one line).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

EVERY_S = 5.0


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


def beat_line(what: str, elapsed_s: float, expected_s: float | None = None) -> str:
    """One heartbeat: ``what ... 10 s``, with what is left where the run expects a duration."""
    line = f"{what} ... {_seconds(elapsed_s)}"
    if expected_s is None:
        return line
    if elapsed_s < expected_s:
        return f"{line} (about {_seconds(expected_s - elapsed_s)} left, as the last one took)"
    return f"{line} (the last one took {_seconds(expected_s)})"


class Heartbeat:
    """A context manager: ``say(beat_line(...))`` every ``every_s`` seconds while its block runs."""

    def __init__(
        self,
        what: str | Callable[[], str],
        say: Callable[[str], object],
        every_s: float = EVERY_S,
        expected_s: float | None = None,
    ) -> None:
        self.what, self.say, self.every_s, self.expected_s = what, say, every_s, expected_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.beats = 0

    def _run(self, started: float) -> None:
        while not self._stop.wait(self.every_s):
            self.beats += 1
            what = self.what() if callable(self.what) else self.what
            self.say(beat_line(what, time.monotonic() - started, self.expected_s))

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._run, args=(time.monotonic(),), daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
