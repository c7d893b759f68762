"""Benchmark 7: the open loop's arrivals against their plan, over HTTP (issue 39: load that is what it says).

The study's own path drives the fast local fake server (:mod:`benchmarks.fake_engine`, one step every
``--step-ms``): the real ``OpenAIBackend`` with its lean client in ``--client-procs`` processes and
``backends.load_level.run_level`` at each offered rate (``--rates``, default 10, 100 and 1,000 requests/s)
for ``--duration-s`` (per rate, or one for all), the arrivals drawn by ``contract.arrivals`` (``--process``,
default Poisson) with the load's seed. Per rate it reports:

- ``ks_planned`` / ``ks_submitted``: the Kolmogorov-Smirnov statistic of the inter-arrival gaps against the
  exponential of the offered rate, for the plan (the generator alone) and for the submits that happened
  (the loop's timers and the client processes added), beside ``ks_critical_5pct`` (1.36 / sqrt(n));
- ``submit_lag_ms`` p50 / p99 / max: each request's submit minus its planned time, against the bound a
  level is flagged at (``contract.level_flags.SUBMIT_LAG_MS``, 5 ms);
- ``achieved_over_offered``: (n - 1) arrivals over the first-to-last submit span ÷ the offered rate, and the
  rate test's z (``contract.arrivals.rate_z``); ``not_offered``: the level's flag, None when it was offered
  as planned.

    python -m benchmarks.arrivals [--rates 10,100,1000] [--duration-s 20,10,5] [--client-procs N]
        [--process poisson] [--out FILE.json]

Not a timed test: it measures the machine it runs on; the result file names it (CPU, cores, load average
before the run: other processes on the host compete with the client and the fake server).
"""

from __future__ import annotations

import argparse
from typing import Any

from benchmarks.load_client import machine, pct, write_result


def measure_rate(backend, rate: float, duration_s: float, args: argparse.Namespace) -> dict[str, Any]:
    """One open-loop level at ``rate`` for ``duration_s`` through the study's load loop, against its plan."""
    from llm_call_anatomy.backends.load_level import run_level
    from llm_call_anatomy.backends.load_loop import LoadSettings, arrival_times
    from llm_call_anatomy.contract.adapter import Request
    from llm_call_anatomy.contract.arrivals import ks_critical, ks_exponential, rate_z
    from llm_call_anatomy.contract.level_flags import SUBMIT_LAG_MS, level_flags

    settings = LoadSettings(
        rate_rps=rate, duration_s=duration_s, arrival=args.process, client_procs=args.client_procs, seed=13
    )
    planned = arrival_times(10**7, settings)
    sessions = [
        [Request(prompt_ids=[(k * 7919 + i) % 30000 + 1 for i in range(args.prompt_tokens)],
                 max_new_tokens=args.tokens, ignore_eos=True)]
        for k in range(len(planned))
    ]  # fmt: skip
    outs, facts = run_level(backend, sessions, settings)
    started = [o for (o,) in outs if o.submit_s is not None]
    submits = sorted(o.submit_s for o in started)
    lags = [(o.submit_s - o.planned_submit_s) * 1e3 for o in started]
    gaps = [b - a for a, b in zip(submits, submits[1:], strict=False)]
    plan_gaps = [b - a for a, b in zip(planned, planned[1:], strict=False)]
    span = submits[-1] - submits[0] if len(submits) > 1 else 0.0
    rows = [
        {"submit_s": o.submit_s, "planned_submit_s": o.planned_submit_s, "finish_s": o.finish_s}
        for o in started
    ]
    flags = level_flags(rows, None, rate, args.process)
    return {
        "offered_rps": rate,
        "duration_s": duration_s,
        "planned": len(planned),
        "submitted": len(started),
        "failed": sum(o.error is not None for o in started),
        "ks_planned": round(ks_exponential(plan_gaps, rate), 4),
        "ks_submitted": round(ks_exponential(gaps, rate), 4),
        "ks_critical_5pct": round(ks_critical(len(gaps)), 4),
        "submit_lag_ms_p50": round(pct(lags, 50), 3),
        "submit_lag_ms_p99": round(pct(lags, 99), 3),
        "submit_lag_ms_max": round(max(lags), 3),
        "submit_lag_bound_ms": SUBMIT_LAG_MS,
        "achieved_rps": round((len(submits) - 1) / span, 3) if span > 0 else None,
        "achieved_over_offered": round((len(submits) - 1) / span / rate, 4) if span > 0 else None,
        "rate_z": round(rate_z(len(submits) - 1, rate, span, args.process), 2) if span > 0 else None,
        "not_offered": flags.not_offered,
        "client_procs": facts.client_procs,
        "client_cpu_share": facts.client_cpu_share,
        "client_limited": facts.client_limited,
    }


def measure(args: argparse.Namespace, model_path: str) -> list[dict]:
    """Every rate against one fake server, through one started ``OpenAIBackend``."""
    from benchmarks.fake_engine_procs import start_procs
    from llm_call_anatomy.backends.openai import OpenAIBackend
    from llm_call_anatomy.contract.adapter import BackendSettings

    server = start_procs(args.step_ms / 1e3, 1)
    try:
        backend = OpenAIBackend(
            BackendSettings(
                model_path=model_path,
                model_label="fake",
                base_url=server.url + "/v1",
                client_procs=args.client_procs,
            )
        )
        backend.start()
        rows = [measure_rate(backend, r, d, args) for r, d in zip(args.rates, args.duration_s, strict=True)]
        backend.close()
        return rows
    finally:
        server.stop()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked (a bad value: one line, exit 2); one duration stands for every rate."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rates", default="10,100,1000", help="offered rates, requests/s, comma-separated")
    p.add_argument("--duration-s", default="20,10,5", help="each rate's duration (one value: every rate's)")
    p.add_argument("--process", default="poisson", choices=("poisson", "constant", "gamma"))
    p.add_argument("--tokens", type=int, default=4, help="output tokens per request")
    p.add_argument("--prompt-tokens", type=int, default=16)
    p.add_argument("--step-ms", type=float, default=7.0, help="the fake engine's step")
    p.add_argument("--client-procs", type=int, default=None, help="client processes (default: automatic)")
    p.add_argument("--out", default=None, help="write the result (rows + machine) here as JSON")
    args = p.parse_args(argv)
    try:
        args.rates = [float(x) for x in args.rates.split(",")]
        args.duration_s = [float(x) for x in args.duration_s.split(",")]
    except ValueError:
        p.error("--rates and --duration-s: numbers, comma-separated")
    if len(args.duration_s) == 1:
        args.duration_s *= len(args.rates)
    if len(args.duration_s) != len(args.rates) or min(args.rates + args.duration_s) <= 0:
        p.error("--duration-s: one positive duration, or one per rate")
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure, print one line per rate, and with ``--out`` write the result as JSON with the machine."""
    args = parse_args(argv)
    from llm_call_anatomy.harness.models import build_tiny

    before = machine()
    rows = measure(args, str(build_tiny()))
    for r in rows:
        print(
            f"{r['offered_rps']:g}/s for {r['duration_s']:g} s: "
            f"{r['submitted']} of {r['planned']} submitted, "
            f"KS {r['ks_submitted']} (plan {r['ks_planned']}, 5 % critical {r['ks_critical_5pct']}), "
            f"lag p99 {r['submit_lag_ms_p99']} ms, achieved/offered {r['achieved_over_offered']}, "
            f"not offered: {r['not_offered']}"
        )
    if args.out:
        command = "python -m benchmarks.arrivals " + " ".join(argv or [])
        write_result(args.out, "arrivals (benchmark 7)", before, args, rows, command=command)
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
