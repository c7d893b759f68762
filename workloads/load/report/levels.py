"""Load (many users at once): throughput, latency percentiles and goodput per level, from the records.

A level is one (backend, workload, variant, load) — ``case`` ``C=8`` (closed loop) or ``rate=4``
(Poisson), as recorded: the key every grouping takes; ``level`` is the name the reader sees
(``contract.level_flags.level_name``: ``U=256`` for a closed loop of users who think, whose case says
``C=256``, else the case). Its requests are the records with a ``submit_s``, served or failed (``error``); the
level's own record (``rep`` None) holds the engine's figures in ``extra.level``
(``contract.level_facts.LevelFacts``). Definitions (one
for every backend):

- requests = the requests served; errors = the requests that failed (a 429, a timeout, a cut
  stream): a failed request counts against the SLO and adds no tokens;
- window: from the level's first submit to its last finish, failed requests included (the
  level's monotonic clock); where several engine starts ran the level, the sum of each start's window
  (:func:`level_window`);
- output tokens/s = output tokens of the served requests ÷ window; requests/s = served ÷ window;
- TTFT p50/p90/p99 over requests (TTFT at the caller, from submit); ITL p50/p99 over every gap
  between consecutive tokens of a request, pooled over the level (tokens that came in one chunk
  give gaps of 0); ITL per chunk p50 over every gap between consecutive chunks (``chunk_times_s``:
  what ``vllm bench serve`` calls ITL); TPOT per request = its decode ms/token ((last token −
  first token) ÷ (tokens − 1): what AIPerf and GuideLLM call ITL);
- TTFT mean (``ttft_mean``): the caller's mean TTFT over the level's served requests;
- server figures, from the server's own histograms over the level (``extra.level.server_timings``;
  HTTP servers that export /metrics only), for each of ttft, itl, tpot, e2e and queue where the
  server has that histogram: ``server_<fig>_mean`` (exact: the histogram's sum ÷ count),
  ``server_<fig>_p50`` (interpolated within its bucket, as Prometheus' histogram_quantile) and
  ``server_<fig>_p50_bucket`` (the (lower, upper] ms that p50 lies in; upper None: the +Inf
  bucket); ``server_ttft_n`` its TTFT count. ``caller_minus_server_ttft_mean`` = ``ttft_mean`` −
  ``server_ttft_mean``: a difference of two exact means (a p50 inside a bucket of (0, 100 ms]
  says nothing of a 20 ms TTFT). ``server_metrics``: "recorded"; "not exported" for a backend over
  HTTP (``timing_source`` ``client-stream``) with no server timings at this level and nothing
  saying its server has /metrics (no level with timings, none with the server's /metrics gauges:
  transformers serve); "not recorded" for such a level of a server that has them (a run from
  before the harness read them, or scrapes that gave none); None in process;
- client CPU: the busiest client process's CPU time ÷ the level's wall time (``client_busy_max``);
  above ``backends.load_shards.BUSY_LIMIT`` the level is flagged (``client_limited``);
- goodput = requests that met the SLO (TTFT ≤ ``ttft_ms`` and TPOT ≤ ``tpot_ms``) ÷ window; the
  share that met it is over every request started, failed ones included;
- the engine's facts are kept only where they can be true: a counter that went down over the
  level (a reset: ``preemptions`` < 0) or a KV-cache usage peak outside 0-100 % is no figure
  (NaN), named in ``fact_problems``;
- prefix reuse: expected = what the prompts share (``shared_prefix_tokens``: across users or with
  the user's previous turn) ÷ prompt tokens; reported = the engine's cached tokens ÷ prompt tokens.

Percentiles are numpy's default (linear interpolation between closest ranks); each carries its n.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from llm_call_anatomy.contract.level_facts import LevelFacts
from llm_call_anatomy.contract.level_flags import level_name
from llm_call_anatomy.contract.records import record_place
from llm_call_anatomy.reports.stats import num

# MLPerf Inference's server-scenario latency targets for Llama-2-70B (TTFT 2 s, TPOT 200 ms): a
# published, engine-neutral pair. The page states the values it used; --slo changes them.
DEFAULT_SLO = {"ttft_ms": 2000.0, "tpot_ms": 200.0}
SLO_SOURCE = "MLPerf Inference server scenario, Llama-2-70B: TTFT ≤ 2 s, TPOT ≤ 200 ms"
CLIENT_LIMITED = (
    "the client may have limited this level"  # a level whose client process was busy > 50 % (load_shards)
)
SERVER_FIGURES = ("ttft", "itl", "tpot", "e2e", "queue")  # the level histograms (backends.openai.metrics)
HTTP_TIMING = "client-stream"  # a record's timing_source over HTTP (backends/base.py lists the sources)
HOLDS_SHARE = 0.9  # a level "holds" the SLO when at least this share of its requests meet it

COLUMNS = [
    "backend",
    "workload",
    "mode",
    "case",
    "level",
    "concurrency",
    "rate_rps",
    "requests",
    "errors",
    "window_s",
    "output_tps",
    "rps",
    "ttft_p50",
    "ttft_p90",
    "ttft_p99",
    "itl_p50",
    "itl_p99",
    "itl_n",
    "tpot_p50",
    "slo_met",
    "slo_share",
    "goodput_rps",
    "expected_reuse",
    "reported_reuse",
    "queue_p50",
    "served_as",
    "kv_cache_usage_peak",
    "preemptions",
    "prefix_hit_rate",
    "fact_problems",
    "itl_chunk_p50",
    "ttft_mean",
    *(f"server_{fig}_{x}" for fig in SERVER_FIGURES for x in ("mean", "p50", "p50_bucket")),
    "server_ttft_n",
    "server_metrics",
    "caller_minus_server_ttft_mean",
    "client_busy_max",
    "client_limited",
    "engine_ttft_p50",
    "caller_minus_engine_ttft_p50",
    "engine_step_ms",
]
COUNTERS = (
    "preemptions",
    "prefix_cache_queries",
    "prefix_cache_hits",
)  # differences over the level: never < 0


def percentile(values: list[float] | np.ndarray | pd.Series, p: float) -> float | None:
    """The p-th percentile (0-100, linear interpolation); None with no values."""
    xs = [float(v) for v in values if num(v) is not None]
    return float(np.percentile(xs, p)) if xs else None


def gaps_ms(token_times_s: list[float] | None) -> list[float]:
    """Inter-token gaps of one request in ms (tokens that arrived together give gaps of 0)."""
    t = token_times_s or []
    return [(b - a) * 1e3 for a, b in zip(t, t[1:], strict=False)]


def slo_met(ttft_ms: Any, tpot_ms: Any, slo: dict[str, float]) -> bool:
    """The request met the SLO: its TTFT and its TPOT within the targets (a 1-token reply has no TPOT)."""
    ttft, tpot = num(ttft_ms), num(tpot_ms)
    if ttft is None or ttft > slo["ttft_ms"]:
        return False
    return tpot is None or tpot <= slo["tpot_ms"]


def requests(df: pd.DataFrame) -> pd.DataFrame:
    """The load kind's request records (not the level records, not skipped)."""
    if "kind" not in df or df.empty:
        return df.iloc[0:0]
    rows = df[(df["kind"] == "load") & df["skipped"].isna()]
    return rows[rows["submit_s"].notna()] if "submit_s" in rows else rows.iloc[0:0]


def level_facts(df: pd.DataFrame, by_start: bool = False) -> dict[tuple, LevelFacts]:
    """(backend, workload, mode, case) -> the level record's ``extra.level`` (the last engine start's, where
    several ran the level); ``by_start``: keyed (backend, workload, mode, case, start), each start's."""
    out = {}
    rows = (
        df[(df["kind"] == "load") & df["rep"].isna() & df["skipped"].isna()] if "kind" in df else df.iloc[0:0]
    )
    for r in rows.to_dict("records"):
        level = (r.get("extra") or {}).get("level")
        if isinstance(level, dict):
            key = (r["backend"], r["workload"], r["mode"], r["case"])
            out[(*key, r.get("start")) if by_start else key] = LevelFacts.from_dict(level, record_place(r))
    return out


def level_fact_values(f: LevelFacts) -> tuple[dict[str, float | None], list[str]]:
    """The engine's level facts that can be true, and one phrase per fact that cannot (left out)."""
    values: dict[str, float | None] = {
        "preemptions": num(f.preemptions),
        "prefix_cache_queries": num(f.prefix_cache_queries),
        "prefix_cache_hits": num(f.prefix_cache_hits),
        "kv_cache_usage_peak": num(f.kv_cache_usage_peak),
    }
    problems = []
    for k in COUNTERS:
        if values[k] is not None and values[k] < 0:
            problems.append(
                f"{k.replace('_', ' ')} {values[k]:g} (a counter that went down: reset during the level)"
            )
            values[k] = None
    kv = values["kv_cache_usage_peak"]
    if kv is not None and not 0 <= kv <= 1:
        problems.append(f"KV-cache usage peak {100 * kv:.0f}% (outside 0-100 %)")
        values["kv_cache_usage_peak"] = None
    return values, problems


def bucket(bounds: Any) -> tuple[float, float | None] | None:
    """A recorded ``[lower, upper]`` ms (upper None: +Inf) as a tuple; None where it is not one."""
    if not isinstance(bounds, list | tuple) or len(bounds) != 2 or num(bounds[0]) is None:
        return None
    return (num(bounds[0]), num(bounds[1]))


def server_and_client(facts: LevelFacts, ok: pd.DataFrame | None = None) -> dict[str, Any]:
    """A level's server-side means, p50s and p50 buckets (``SERVER_FIGURES``), the caller's mean TTFT
    (over ``ok``, its served requests) minus the server's, and its busiest client process, from its level
    record. ``server_metrics`` is "recorded" where the level has server timings, else None (``per_level``
    tells "not exported" from "not recorded")."""
    server = facts.server_timings or {}
    out: dict[str, Any] = {}
    for fig in SERVER_FIGURES:
        out[f"server_{fig}_mean"] = num(server.get(f"{fig}_ms_mean"))
        out[f"server_{fig}_p50"] = num(server.get(f"{fig}_ms_p50"))
        out[f"server_{fig}_p50_bucket"] = bucket(server.get(f"{fig}_p50_bucket_ms"))
    ttft = ok["ttft_ms"].dropna() if ok is not None and "ttft_ms" in ok else pd.Series(dtype=float)
    caller = float(ttft.mean()) if len(ttft) else None
    return {
        "ttft_mean": caller,
        **out,
        "server_ttft_n": num(server.get("ttft_n")),
        "server_metrics": "recorded" if any(v is not None for v in out.values()) else None,
        "caller_minus_server_ttft_mean": caller - out["server_ttft_mean"]
        if caller is not None and out["server_ttft_mean"] is not None
        else None,
        "client_busy_max": num(facts.client_busy_max),
        "client_limited": bool(facts.client_limited),
    }


def server_metrics_state(levels: pd.DataFrame, over_http: set[str], exports: set[str]) -> pd.Series:
    """Per level: "recorded"; for a backend over HTTP without server timings at this level, "not recorded"
    where its server exports /metrics (``exports``: another level has timings, or some level holds the
    server's /metrics gauges) and "not exported" where nothing says it does; None in process."""
    recorded = exports | set(levels.loc[levels["server_metrics"] == "recorded", "backend"])

    def state(r: pd.Series) -> str | None:
        if r["server_metrics"] == "recorded" or r["backend"] not in over_http:
            return r["server_metrics"]
        return "not recorded" if r["backend"] in recorded else "not exported"

    return levels.apply(state, axis=1) if len(levels) else levels["server_metrics"]


def caller_and_engine(ok: pd.DataFrame, facts: LevelFacts) -> dict[str, Any]:
    """The engine's own TTFT p50 (per request, in process), the caller's minus it per
    request (p50), and the mean ``LLMEngine.step()`` of a stepped engine (vLLM in process:
    its cause, an arrival or a first token waits for it)."""
    both = (
        ok[ok["ttft_ms"].notna() & ok["engine_ttft_ms"].notna()] if "engine_ttft_ms" in ok else ok.iloc[0:0]
    )
    steps, step_s = num(facts.engine_steps), num(facts.engine_step_s)
    return {
        "engine_ttft_p50": percentile(both["engine_ttft_ms"], 50) if len(both) else None,
        "caller_minus_engine_ttft_p50": percentile(both["ttft_ms"] - both["engine_ttft_ms"], 50)
        if len(both)
        else None,
        "engine_step_ms": step_s / steps * 1e3 if steps and step_s is not None else None,
    }


def level_window(g: pd.DataFrame) -> float | None:
    """The level's length in seconds, first submit to last finish; where several engine starts ran it (each
    on its own clock), the sum of each start's, so that a rate over it is the starts' total over their total
    time (pooled on one clock, two starts' tokens fell in one start's window: twice the tok/s)."""
    parts = [p for _, p in g.groupby("start", sort=False)] if "start" in g and len(g) else [g]
    total = sum(
        max(w, 0.0) for p in parts if len(p) and (w := p["finish_s"].max() - p["submit_s"].min()) == w
    )
    return total if total > 0 else None


def per_level(
    df: pd.DataFrame,
    slo: dict[str, float] | None = None,
    by_backend: dict[str, dict[str, float]] | None = None,
) -> pd.DataFrame:
    """One row per level (see the module docstring for every definition); goodput counts against ``slo``, or
    against a column's own pair where ``by_backend`` has one (each run against its own target)."""
    page_slo = slo or DEFAULT_SLO
    reqs, facts = requests(df), level_facts(df)
    rows = []
    for key, g in reqs.groupby(["backend", "workload", "mode", "case"], sort=False):
        slo = (by_backend or {}).get(key[0]) or page_slo
        ok = g[g["error"].isna()]  # served; the rest failed
        window = level_window(g)
        itl = [x for t in ok["token_times_s"] for x in gaps_ms(t)]
        met = int(
            sum(slo_met(a, b, slo) for a, b in zip(ok["ttft_ms"], ok["decode_ms_per_token"], strict=True))
        )
        prompt = ok["prompt_tokens"].sum()
        cached = ok["cached_tokens"].dropna()
        f = facts.get(key) or LevelFacts()  # none: the run stopped inside the level
        values, problems = level_fact_values(f)
        queries, hits = values["prefix_cache_queries"], values["prefix_cache_hits"]
        rows.append(
            {
                **dict(zip(["backend", "workload", "mode", "case"], key, strict=True)),
                "level": level_name(key[3], f.think_time_s),
                "concurrency": num(g["load_concurrency"].iloc[0]),
                "rate_rps": num(g["load_rate_rps"].iloc[0]),
                "requests": len(ok),
                "errors": int(g["error"].notna().sum()),
                "window_s": window,
                "output_tps": ok["output_tokens"].sum() / window if window else None,
                "rps": len(ok) / window if window else None,
                "ttft_p50": percentile(ok["ttft_ms"], 50),
                "ttft_p90": percentile(ok["ttft_ms"], 90),
                "ttft_p99": percentile(ok["ttft_ms"], 99),
                "itl_p50": percentile(itl, 50),
                "itl_p99": percentile(itl, 99),
                "itl_n": len(itl),
                "tpot_p50": percentile(ok["decode_ms_per_token"], 50),
                "slo_met": met,
                "slo_share": met / len(g),
                "goodput_rps": met / window if window else None,
                "expected_reuse": ok["shared_prefix_tokens"].fillna(0).sum() / prompt if prompt else None,
                "reported_reuse": cached.sum() / ok.loc[cached.index, "prompt_tokens"].sum()
                if len(cached) and prompt
                else None,
                "queue_p50": percentile(ok["queue_ms"], 50),
                "served_as": f.served_as,
                "kv_cache_usage_peak": values["kv_cache_usage_peak"],
                "preemptions": values["preemptions"],
                "prefix_hit_rate": hits / queries if queries and hits is not None else None,
                "fact_problems": problems,
                "itl_chunk_p50": percentile(
                    [x for t in ok.get("chunk_times_s", pd.Series(dtype=object)) for x in gaps_ms(t)], 50
                ),
                **server_and_client(f, ok),
                **caller_and_engine(ok, f),
            }
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    http = (
        set(reqs.loc[reqs["timing_source"] == HTTP_TIMING, "backend"]) if "timing_source" in reqs else set()
    )
    gauges = {key[0] for key, f in facts.items() if metrics_gauges(f)}
    out["server_metrics"] = server_metrics_state(out, http, gauges)
    return out


def metrics_gauges(f: LevelFacts) -> bool:
    """Whether the level holds a gauge that a server over HTTP gives only from its /metrics
    (``backends.openai.metrics.LOAD_VALUES``): KV-cache usage, requests running or waiting."""
    return any(
        num(x) is not None for x in (f.kv_cache_usage_peak, f.requests_running_peak, f.requests_waiting_peak)
    )


def peaks(levels: pd.DataFrame) -> pd.DataFrame:
    """Per backend, workload and variant: the peak output tokens/s (and its level: ``peak_case`` as
    recorded, ``peak_level`` as shown), and the highest
    closed-loop concurrency whose requests met the SLO in at least HOLDS_SHARE of cases (failed ones
    included). The peak is a level that served every request; only where every level had failures
    is it one of those, with ``peak_errors`` saying how many failed."""
    rows = []
    for (b, w, m), g in levels.groupby(["backend", "workload", "mode"], sort=False):
        g = g.dropna(subset=["output_tps"])
        if g.empty:
            continue
        clean = g[g["errors"] == 0]
        pool = clean if len(clean) else g
        top = pool.loc[pool["output_tps"].idxmax()]
        held = g[(g["slo_share"] >= HOLDS_SHARE) & g["concurrency"].notna() & g["rate_rps"].isna()]
        rows.append(
            {
                "backend": b,
                "workload": w,
                "mode": m,
                "peak_tps": top["output_tps"],
                "peak_case": top["case"],
                "peak_level": top["level"],
                "peak_errors": int(top["errors"]),
                "holds_c": held["concurrency"].max() if len(held) else None,
                "tested_c": g["concurrency"].max(),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "backend",
            "workload",
            "mode",
            "peak_tps",
            "peak_case",
            "peak_level",
            "peak_errors",
            "holds_c",
            "tested_c",
        ],
    )
