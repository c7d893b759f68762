"""What the libraries log while the child's progress bar is drawn: printed above the bar, never through it
(issue 43).

While the bar is live on a terminal, rich swaps ``sys.stdout`` and ``sys.stderr`` for proxies that print each
line above the bar. A ``warnings.warn`` writes to ``sys.stderr`` as it fires, so it lands above the bar; a
``logging`` handler keeps the stream it was made with (transformers' and vLLM's handlers are made at import,
on the process's own stderr and stdout), so a library's log line was written right after the bar's text, in
the middle of its line. :func:`above_the_bar` points every such handler at the proxies for as long as the bar
is drawn, and back afterwards. Nothing is dropped: a library's warning is still seen, where it happened
(FutureWarnings, deprecations meant for whoever writes the calls, are not printed at all:
``harness.child.quiet_future_warnings``). Where the output is no terminal there is no bar and no proxy, and
nothing changes.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def stream_handlers() -> list[logging.StreamHandler]:
    """Every handler of every logger made so far that writes to a stream (a file's handler is its own)."""
    loggers = [logging.getLogger()] + [
        found for found in logging.Logger.manager.loggerDict.values() if isinstance(found, logging.Logger)
    ]
    return [
        h
        for lg in loggers
        for h in lg.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]


@contextmanager
def above_the_bar() -> Iterator[None]:
    """Inside a live progress bar: the handlers on the process's own stdout and stderr write to what
    ``sys.stdout`` and ``sys.stderr`` are now (the bar's proxies), each restored on the way out."""
    now = {id(sys.__stdout__): sys.stdout, id(sys.__stderr__): sys.stderr}
    swapped = [
        (h, h.setStream(now[id(h.stream)]))
        for h in stream_handlers()
        if id(h.stream) in now and h.stream is not now[id(h.stream)]
    ]
    try:
        yield
    finally:
        for handler, own in reversed(swapped):
            handler.setStream(own)
