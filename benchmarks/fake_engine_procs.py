"""Benchmark 4's fake engine as several processes on one port, so that the server is never what limits the
client's ceiling (one Python process paces at most ~45,000 tokens/s: on the H200's host it fell behind its
7 ms step at C = 512).

Each process is a whole :class:`benchmarks.fake_engine.FakeEngine` listening on the same port with
``SO_REUSEPORT``: the kernel hands each new connection to one of them, and a process paces the streams of
its own connections (its own step loop). A keep-alive connection stays with its process, so the streams
spread as the connections do (the kernel hashes them: about evenly, not exactly; the benchmark reports
the requests each process served).

``/metrics`` is summed over the processes, whichever one answers: each process writes its counters and
histograms into its row of a :class:`Board` (shared memory) and renders the sum, so a client that scrapes
it before and after a level reads one engine's figures. ``/fake/log`` on the shared port is the answering
process's own; :meth:`FakeServer.log` merges every process's, read from a port of each process's own.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import queue
import socket
import time
import urllib.request

from benchmarks.fake_engine import serve, wait_accepting
from benchmarks.fake_engine_metrics import COUNTERS, HISTOGRAMS, Histogram

STREAMS_PER_SERVER_PROC = 128  # one process paced 18,000 tok/s at C = 128 without falling behind (H200 host)


def auto_server_procs(max_concurrency: int, cpus: int | None = None) -> int:
    """One process per 128 streams of the busiest level, at most half the host's cores (the client's
    processes need the other half)."""
    cpus = cpus or os.cpu_count() or 2
    return max(1, min(math.ceil(max_concurrency / STREAMS_PER_SERVER_PROC), cpus // 2))


class Board:
    """The processes' counters, one row each (the :data:`COUNTERS`, then each histogram's bucket counts, sum
    and count) in a shared array of doubles. Each process writes only its own row (after every step, and its
    in-flight count on every arrival); a reader sums the rows. A row is written element by element, so a
    scrape in the middle of a step may see one process's histogram half updated; a level's before/after
    scrapes fall where no stream ends."""

    WIDTH = len(COUNTERS) + sum(len(b) + 2 for b in HISTOGRAMS.values())

    def __init__(self, array, procs: int) -> None:
        self.array, self.procs = array, procs

    @classmethod
    def create(cls, procs: int, ctx) -> Board:
        return cls(ctx.Array("d", procs * cls.WIDTH, lock=False), procs)

    def publish(self, k: int, engine) -> None:
        row = [float(len(engine.active)), engine.finished, engine.prompt_tokens, engine.generation_tokens]
        for name in HISTOGRAMS:
            h = engine.hist[name]
            row += [*h.counts, h.sum, h.count]
        self.array[k * self.WIDTH : (k + 1) * self.WIDTH] = row

    def set_active(self, k: int, n: int) -> None:
        self.array[k * self.WIDTH] = float(n)

    def total(self) -> tuple[int, int, int, int, dict[str, Histogram]]:
        vals, w = self.array[:], self.WIDTH
        sums = [sum(vals[k * w + i] for k in range(self.procs)) for i in range(w)]
        hist, i = {}, len(COUNTERS)
        for name, bounds in HISTOGRAMS.items():
            h = hist[name] = Histogram(bounds)
            n = len(bounds)
            h.counts, h.sum, h.count = [int(x) for x in sums[i : i + n]], sums[i + n], int(sums[i + n + 1])
            i += n + 2
        active, finished, prompt, generated = (int(x) for x in sums[: len(COUNTERS)])
        return active, finished, prompt, generated, hist


class FakeServer:
    """``procs`` fake-engine processes on one port of 127.0.0.1 (started by :func:`start_procs`)."""

    def __init__(self, port: int, procs: list, own_ports: list[int]) -> None:
        self.url, self.procs, self.own_ports = f"http://127.0.0.1:{port}", procs, own_ports

    def log(self) -> dict[str, dict]:
        """Every process's ``/fake/log`` merged (response ids name their process: ``cmpl-K-N``)."""
        merged: dict[str, dict] = {}
        for port in self.own_ports:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/fake/log") as resp:
                merged.update(json.loads(resp.read()))
        return merged

    def dead(self) -> list[int]:
        return [k for k, p in enumerate(self.procs) if not p.is_alive()]

    def wait(self) -> None:
        for p in self.procs:
            p.join()

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.join(5)


def start_procs(step_s: float = 0.007, procs: int = 1, port: int | None = None) -> FakeServer:
    """Start ``procs`` processes on ``port`` (default: a free one); return once each accepts
    connections."""
    if procs < 1:
        raise ValueError(f"server processes: {procs} (give 1 or more)")
    if port is None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    ctx = multiprocessing.get_context("spawn")
    board = Board.create(procs, ctx) if procs > 1 else None
    control = ctx.Queue()
    started = [
        ctx.Process(
            target=serve,
            args=(port, step_s),
            kwargs={"index": k, "board": board, "control": control},
            daemon=True,
        )
        for k in range(procs)
    ]
    for p in started:
        p.start()
    server = FakeServer(port, started, [0] * procs)
    deadline = time.monotonic() + 120
    while 0 in server.own_ports:
        try:
            k, own = control.get(timeout=0.5)
            server.own_ports[k] = own
        except queue.Empty:
            if server.dead() or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(
                    f"the fake server's processes did not start (exited: {server.dead()})"
                ) from None
    wait_accepting(port)
    return server
