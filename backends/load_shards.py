"""A load level driven from client processes: the sessions sharded over N processes, merged into one level.

A backend with a load client (:meth:`backends.base.Backend.load_client`: an HTTP server) is not
driven from the harness's own process: that process samples the server's ``/metrics`` (a scrape
and parse about once a second: ``backends.load_level.sample_pause_s``) and must not share an
interpreter with the code that stamps tokens. N
client processes (``python -m llm_call_anatomy.backends.load_shards``, ``--client-procs N``) each run THE load
loop (:func:`backends.load_loop.drive`) over their shard of the sessions, on the level's one
origin: ``time.perf_counter()`` is ``CLOCK_MONOTONIC`` on Linux, one clock for every process of
the host, so their stamps merge into one level without translation.

- Closed loop (C): sessions are dealt round-robin, the C workers split as evenly as possible
  (a process whose shard runs out does not take another's sessions: a static split).
  Open loop: the parent draws every session's Poisson arrival with the level's seed, as one
  process would, and each process starts its sessions at their times.
- Automatic N (``client_procs`` None): one process per :data:`STREAMS_PER_PROCESS` streams in
  flight (open loop: per :data:`RPS_PER_PROCESS` requests/s offered, at most one per
  :data:`STREAMS_PER_PROCESS` of its sessions), at least one: each process stays well below one core
  (benchmark 4 measures what one sustains). At most half the CPUs when the server is
  on this host (a launched ``vllm serve`` / SGLang / ``transformers serve``, benchmark 4's fake
  server: every study on the GPU host), all but one when ``--base-url`` names another host
  (:func:`server_is_local`); see :func:`auto_client_procs` for why.
- Each process freezes what its set-up made (``gc.freeze()`` once the imports and the job are in,
  before it says it is ready): the ~100,000 objects of the modules it imports (the ``openai``
  package among them) were traversed by every full collection, a stall of the whole process — every
  stream it holds — of ~85 ms on a 2-core VM, about once per 6 s level at 64 streams, seen as the
  client's added TTFT and ITL p99. Collections during the level then see only the level's objects.
- Each process reports every request's submit as it happens and its outcome as it ends, and its
  CPU time over the level: the level records each client's CPU share (``client_cpu_share``) and
  ``client_limited`` when one was busy more than :data:`BUSY_LIMIT` of the time (the page says
  "the client may have limited this level").
- A process that dies mid-level: each of its requests that was submitted and not reported becomes
  an error naming it; those it never started are not started; the level's record carries the error
  (``client_failed``), so ``--resume`` redoes the level. Nothing is counted twice: an outcome is
  taken once, from the process that ran it.
"""

from __future__ import annotations

import asyncio
import gc
import ipaddress
import math
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from llm_call_anatomy import HOME
from llm_call_anatomy.backends.load_loop import (
    Drive,
    LoadSettings,
    Outcome,
    arrival_times,
    drive,
    new_outcomes,
)
from llm_call_anatomy.backends.telemetry import GpuTelemetry
from llm_call_anatomy.contract.level_facts import LevelFacts

STREAMS_PER_PROCESS = 32
RPS_PER_PROCESS = 16.0
BUSY_LIMIT = 0.5
START_LEAD_S = 0.1  # the level's origin this far after the client processes are told it
ROOT = HOME  # where a shard process imports llm_call_anatomy from (the checkout or site-packages)
LOOP_ENV_VAR = "LCA_LOAD_LOOP"
TEST_EXIT_VAR = "LCA_TEST_CLIENT_EXIT_AFTER"  # fault tests: "SHARD:N" -> that process exits after N outcomes


def event_loop() -> tuple[str, Any]:
    """The client processes' event loop: uvloop where it is installed (its loop, transports and callbacks are
    C: the per-chunk wake-ups of every stream cost less than the stdlib's; vLLM and SGLang depend on it, so
    their environments have it), else asyncio's. ``LCA_LOAD_LOOP=asyncio`` keeps the stdlib's (benchmarks
    that compare). Returns its name for the level's ``client`` and a ``loop_factory`` (None: asyncio's)."""
    if os.environ.get(LOOP_ENV_VAR) != "asyncio":
        try:
            import uvloop

            return f"uvloop {uvloop.__version__}", uvloop.new_event_loop
        except ImportError:
            pass
    return "asyncio loop", None


def auto_client_procs(
    settings: LoadSettings,
    sessions: int,
    cpus: int | None = None,
    server_local: bool = True,
    requests: int | None = None,
) -> int:
    """The automatic ``--client-procs``: one per :data:`STREAMS_PER_PROCESS` streams (open loop: per
    :data:`RPS_PER_PROCESS` requests/s offered), capped. ``requests``: the level's requests (default one a
    session).

    An open loop's rate counts sessions: a sessions load's (new users/s, each running all its turns) offers
    the rate x its requests a session, 10x the rate for the built-in's ten turns, and at 8 users/s over a
    server that serves fewer it holds every user's stream at once, as a closed loop at C = users does; counted
    as requests/s of the rate alone, one process held them all. It never holds more streams than it has
    sessions (one request of a session in flight at a time), so it needs no more processes than a closed
    loop at C = sessions.

    The cap is what holds C = 512 at 64 streams a process on the 16-core GPU host (8 processes, not 16),
    where benchmark 4 saw the client's added TTFT p50 pass 1 ms. It stays at half the CPUs whenever the
    server shares the host, which is every study there: a launched server's API and engine processes
    (and benchmark 4's fake server, in as many processes as the client) need the other half, and more
    client processes than cores left would compete with the server they measure, making it slower
    rather than the client faster. A server on another host (``server_local`` False) leaves the cores to
    the client: all but one (the harness's own process samples ``/metrics``)."""
    cpus = cpus or os.cpu_count() or 2
    if settings.rate_rps:
        offered = settings.rate_rps * (requests or sessions) / max(1, sessions)  # requests/s
        want = math.ceil(min(offered / RPS_PER_PROCESS, sessions / STREAMS_PER_PROCESS))
    else:
        want = math.ceil((settings.concurrency or 1) / STREAMS_PER_PROCESS)
    cap = cpus // 2 if server_local else cpus - 1
    return max(1, min(want, max(1, cap), sessions))


def client_cpu_facts(shares: list[float | None]) -> dict[str, Any]:
    """A level's client CPU facts from each client's CPU share (None: a process that died): the shares, the
    busiest (``client_busy_max``) and ``client_limited`` where it was busy more than :data:`BUSY_LIMIT`."""
    known = [x for x in shares if x is not None]
    busiest = max(known) if known else None
    return {
        "client_cpu_share": shares,
        "client_busy_max": busiest,
        "client_limited": busiest is not None and busiest > BUSY_LIMIT,
    }


def server_is_local(base_url: str | None) -> bool:
    """Whether the server at ``base_url`` runs on this host: a loopback address, ``localhost``, this host's
    name, or no URL (an in-process or launched server). Anything else counts as another host (no name
    lookup: a server reached through this host's own LAN address is taken for a remote one)."""
    host = urlsplit(base_url).hostname if base_url else None
    if host is None or host in ("localhost", socket.gethostname()):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def client_procs_error(n: int | None, sessions: int) -> str | None:
    """Why ``--client-procs n`` cannot drive a level of ``sessions`` sessions (None: it can)."""
    if n is None:
        return None
    if n <= 0:
        return f"--client-procs {n}: give 1 or more client processes (or leave it out: automatic)"
    if n > sessions:
        return f"--client-procs {n}: more client processes than the {sessions} sessions of a load level"
    return None


def shards(sessions: int, n: int, settings: LoadSettings) -> list[tuple[list[int], int]]:
    """Per process: its sessions' indices and its closed-loop workers (open loop: 0, unused)."""
    n = min(n, sessions, settings.concurrency or sessions) if not settings.rate_rps else min(n, sessions)
    out = []
    for j in range(n):
        keys = list(range(j, sessions, n))
        workers = (
            0
            if settings.rate_rps
            else (settings.concurrency or 1) // n + (j < (settings.concurrency or 1) % n)
        )
        out.append((keys, workers))
    return out


class _Client:
    """One client process, seen from the parent: its pipe, and a thread that reads its messages."""

    def __init__(self, index: int, job: dict[str, Any]) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
        }
        self.index = index
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "llm_call_anatomy.backends.load_shards"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=str(ROOT),
        )
        self.messages: list[tuple] = []
        self.ready = threading.Event()
        pickle.dump(job, self.proc.stdin)
        self.proc.stdin.flush()
        self.thread = threading.Thread(target=self._read, name=f"load-client-{index}", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            try:
                message = pickle.load(self.proc.stdout)
            except (EOFError, pickle.UnpicklingError, OSError):
                break
            if message[0] == "ready":
                self.ready.set()
            else:
                self.messages.append(message)
        self.ready.set()  # a process that died before it was ready must not hold up the level
        self.proc.wait()

    def go(self, origin: float) -> None:
        try:
            pickle.dump(origin, self.proc.stdin)
            self.proc.stdin.close()
        except OSError:
            pass  # it died already: the reader has seen it

    def describe(self) -> str:
        code = self.proc.returncode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return f"client process {self.index} (pid {self.proc.pid}) died with {how}"


async def run_sharded(
    backend, spec, sessions: list, settings: LoadSettings, sampler
) -> tuple[list[list[Outcome]], LevelFacts]:
    """The level from client processes; this process only starts them, merges their outcomes, samples
    metrics. Its facts as ``backends.load_level.run_level`` returns them."""
    local = server_is_local(getattr(spec, "base_url", None))
    requests = sum(len(s) for s in sessions)
    n = settings.client_procs or auto_client_procs(
        settings, len(sessions), server_local=local, requests=requests
    )
    arrivals = arrival_times(len(sessions), settings) if settings.rate_rps else None
    plan = shards(len(sessions), n, settings)
    clients = []
    for j, (keys, workers) in enumerate(plan):
        job = {
            "spec": spec,
            "sessions": [sessions[k] for k in keys],
            "keys": keys,  # each session's index in the level: its think times' seed
            "settings": settings,
            "workers": workers,
            # the level's schedule, drawn once here: each process starts its share at the level's times
            # (with a duration, sessions past the last arrival never start)
            "arrivals": [arrivals[k] for k in keys if k < len(arrivals)] if arrivals is not None else None,
            "index": j,
            "timeout_s": backend.settings.request_timeout_s,
        }
        clients.append(_Client(j, job))
    try:
        for c in clients:  # imports and the session set-up happen before the level's clock starts
            await asyncio.to_thread(c.ready.wait)
        gpu = GpuTelemetry().__enter__()  # its own thread, in this process: not where tokens are stamped
        gpu.idle()  # the idle floor: the clients wait for the origin, nothing in flight yet
        # the level's clock starts a moment after the processes are told it: each reads the origin and starts
        # its loop before the first arrival is due (told "now", every process's first arrival was 10-17 ms
        # late on a 2-core VM, and a level flagged not offered as planned for it)
        origin = time.perf_counter() + START_LEAD_S
        for c in clients:
            c.go(origin)
        sampling = asyncio.create_task(sampler.run())
        while any(c.thread.is_alive() for c in clients):
            await asyncio.sleep(0.05)
        wall_s = time.perf_counter() - origin
        sampling.cancel()
        gpu.__exit__(None, None, None)
    finally:
        for c in clients:
            if c.proc.poll() is None:
                c.proc.kill()
    outs = new_outcomes(sessions)
    ends = [_merge(c, keys, outs) for c, (keys, _) in zip(clients, plan, strict=True)]
    finished = sum(o.output is not None for session in outs for o in session)
    facts: dict[str, Any] = {
        "wall_s": wall_s,
        "origin_perf_counter": origin,
        "client_procs": len(clients),
        "client": f"{spec.describe()}, {event_loop()[0]}",
        "client_cpu_share": [],
        **sampler.facts(finished),
        **gpu.facts(origin),  # its energy series on the level's clock (perf_counter is system-wide)
    }
    failed = []
    for c, (keys, _), ended in zip(clients, plan, ends, strict=True):
        if ended is None:
            failed.append(c.describe())
            for k in keys:
                for o in outs[k]:
                    if o.started and o.finish_s is None:
                        o.error = f"ClientDied: {c.describe()} before this request finished"
                        o.finish_s = wall_s
            facts["client_cpu_share"].append(None)
        else:
            cpu_s, child_wall_s = ended
            facts["client_cpu_share"].append(round(cpu_s / child_wall_s, 3) if child_wall_s > 0 else None)
    _name_the_server(backend, outs)
    facts.update(client_cpu_facts(facts["client_cpu_share"]))
    if failed:
        facts["client_failed"] = "; ".join(failed) + ": the level is incomplete (--resume redoes it)"
    return outs, LevelFacts.from_engine(facts, f"backend {backend.name}")


def _name_the_server(backend, outs: list[list[Outcome]]) -> None:
    """A server that died mid-level: the clients saw lost connections; each such error gets the server's own
    account."""
    failed = [
        o
        for session in outs
        for o in session
        if o.error and not o.error.startswith(("TimeoutError", "ClientDied"))
    ]
    gone = backend.server_gone() if failed else None
    if gone:
        for o in failed:
            o.error = f"{gone} ({o.error})"


def _merge(client: _Client, keys: list[int], outs: list[list[Outcome]]) -> tuple[float, float] | None:
    """Its messages into the level's outcomes; (cpu_s, wall_s) if it ended the level, None if it died."""
    ended = None
    for message in client.messages:
        if message[0] == "submit":
            _, k, turn, submit_s = message
            outs[keys[k]][turn].submit_s = submit_s
        elif message[0] == "done":
            _, k, turn, outcome = message
            outcome.session = keys[k]
            outs[keys[k]][turn] = outcome
        elif message[0] == "end":
            ended = message[1], message[2]
    return ended


def _child() -> None:
    """A client process: read its job, say ready, wait for the origin, run the load loop, report."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the pipe
    job = pickle.load(sys.stdin.buffer)
    client = job["spec"].build()
    lock = threading.Lock()
    exit_after = _test_exit_after(job["index"])
    done = [0]

    def send(message: tuple) -> None:
        with lock:
            pickle.dump(message, out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()

    def report(event: str, outcome: Outcome) -> None:
        send((event, outcome.session, outcome.turn, outcome.submit_s if event == "submit" else outcome))
        if event == "done":
            done[0] += 1
            if exit_after is not None and done[0] >= exit_after:
                os._exit(3)

    gc.collect()
    gc.freeze()  # what set-up made (modules, the job's prompts) is never traversed again: see the docstring
    send(("ready",))
    origin = pickle.load(sys.stdin.buffer)
    cpu0 = time.process_time()
    outs = new_outcomes(job["sessions"])

    async def level() -> None:
        try:
            await drive(
                Drive(client.stream, job["timeout_s"], origin, report),
                job["sessions"],
                outs,
                job["settings"],
                job["arrivals"],
                job["workers"],
                job.get("keys"),
            )
        finally:
            await client.aclose()

    with asyncio.Runner(loop_factory=event_loop()[1]) as runner:
        runner.run(level())
    send(("end", time.process_time() - cpu0, time.perf_counter() - origin))
    out.close()


def _test_exit_after(index: int) -> int | None:
    shard, _, after = os.environ.get(TEST_EXIT_VAR, "").partition(":")
    return int(after) if shard and int(shard) == index else None


if __name__ == "__main__":
    # Ctrl-C reaches the run's whole process group, this process included: the run's own processes stop the
    # level and print the one clean message, so this one ends at once and says nothing (a KeyboardInterrupt
    # here printed a torn traceback as the run stopped it: issue 44, item 14)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        _child()
    except KeyboardInterrupt:
        os._exit(130)
