"""Who ran, who was skipped and why, who failed: so no backend goes silently missing.

A backend that could not start writes one ``skipped`` record per workload; a block it cannot run (a missing
capability) writes one ``skipped`` record with the mode; a request that raised writes an ``error`` record. A
load level's own record (``rep`` None) is not a request: the counts leave it out. Load levels the run planned
(env.json ``planned_levels``) that a backend has no records of (a child killed in the middle) are named: that
backend ran "partly". Server-side timings (``extra.server_ttft_ms`` from an OpenAI-compatible server's
/metrics) are collected here too, next to the client's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from llm_call_anatomy.contract.level_flags import level_name
from llm_call_anatomy.reports.stats import num

LEVEL_KEY = ("backend", "workload", "mode", "case")  # a load level: its requests and its own record share it


@dataclass
class BackendStatus:
    backend: str
    measured: int = 0
    errors: int = 0
    skipped: list[tuple[str, str | None, str]] = field(default_factory=list)  # (workload, mode, reason)
    first_error: str | None = None
    missing: list[str] = field(
        default_factory=list
    )  # planned load levels with no records ("workload · mode case")

    @property
    def state(self) -> str:
        if self.measured == 0 and self.errors == 0:
            return "skipped" if self.skipped else "no records"
        if self.measured == 0:
            return "failed"
        return "partly" if self.errors or self.skipped or self.missing else "ran"

    def reasons(self) -> list[str]:
        return list(dict.fromkeys(reason for _, _, reason in self.skipped))


def level_records(df: pd.DataFrame) -> pd.Series:
    """True for a load level's own record (its facts, not a
    request): a concurrency or an arrival rate, no rep."""
    level = pd.Series(False, index=df.index)
    for column in ("load_concurrency", "load_rate_rps"):
        if column in df:
            level |= df[column].notna()
    return level & df["rep"].isna() & df["skipped"].isna()


def unreached_levels(
    df: pd.DataFrame, planned: dict[str, list[tuple[str, str, str]]] | None
) -> dict[str, list[tuple[str, str, str]]]:
    """Per backend column, the load levels its run planned (``planned``: backend -> (workload, mode, case), in
    plan order) that have no record in ``df``: the run stopped before them (the status table names them, the
    capacity rows call them not run). A level of a workload (or mode) the backend recorded as skipped (not
    installed, needs a GPU, a missing capability) was not cut short: its skip record says why, so it is not
    named here (issue 43: "not run (the run stopped before C=1...)" for a backend that never started)."""
    seen = set(zip(*(df[c] for c in ("backend", "workload", "mode", "case")), strict=True))
    skipped = df[df["skipped"].notna()] if "skipped" in df else df.iloc[:0]
    whole = {
        (b, w)
        for b, w, m in zip(skipped["backend"], skipped["workload"], skipped["mode"], strict=True)
        if not isinstance(m, str)
    }
    modes = set(zip(skipped["backend"], skipped["workload"], skipped["mode"], strict=True))

    def unreached(b: str, w: str, m: str, c: str) -> bool:
        return (b, w, m, c) not in seen and (b, w) not in whole and (b, w, m) not in modes

    return {
        b: [(w, m, c) for w, m, c in levels if unreached(b, w, m, c)] for b, levels in (planned or {}).items()
    }


def backend_status(
    df: pd.DataFrame, backends: list[str], planned: dict[str, list[tuple[str, str, str]]] | None = None
) -> list[BackendStatus]:
    """Per backend: requests measured and failed, what was skipped, and the planned load levels
    (``planned``: backend -> (workload, mode, case)) it has no records of."""
    out = []
    requests = df[~level_records(df)]
    unreached = unreached_levels(df, planned)
    for backend in backends:
        g = requests[requests["backend"] == backend]
        s = BackendStatus(backend)
        s.missing = [f"{w} · {m} {c}" for w, m, c in unreached.get(backend, [])]
        s.measured = int((g["skipped"].isna() & g["error"].isna()).sum())
        errs = g[g["error"].notna()]
        s.errors = len(errs)
        s.first_error = str(errs.iloc[0]["error"]) if len(errs) else None
        s.skipped = [
            (str(r["workload"]), r["mode"] if isinstance(r["mode"], str) else None, str(r["skipped"]))
            for r in g[g["skipped"].notna()].to_dict("records")
        ]
        out.append(s)
    return out


def workload_notes(df: pd.DataFrame, workload: str) -> list[str]:
    """One line per backend that skipped (part of) this workload or had failed requests in it."""
    g = df[(df["workload"] == workload) & ~level_records(df)]
    notes = []
    for r in g[g["skipped"].notna()].to_dict("records"):
        what = f"mode {r['mode']}" if isinstance(r["mode"], str) else "the whole workload"
        notes.append(f"{r['backend']}: {what} skipped: {r['skipped']}")
    for backend, errs in g[g["error"].notna()].groupby("backend", sort=False):
        notes.append(
            f"{backend}: {len(errs)} of {int((g['backend'] == backend).sum())} "
            f"requests failed: {errs.iloc[0]['error']}"
        )
    return notes


def server_timings(df: pd.DataFrame) -> pd.DataFrame:
    """Per request with the engine's (or server's) own TTFT
    beside the caller's: both figures and their difference.

    The engine's figure is ``engine_ttft_ms`` (issue 14 runs) or ``extra.server_ttft_ms`` (serving mode);
    old records whose ``ttft_ms`` already is the engine's figure have no caller figure to compare. ``level``:
    the case as shown (``contract.level_flags.level_name``: ``U=256`` for a load level of users who think,
    from its level record's ``think_time_s``).
    """
    records = df.to_dict("records")
    think = {  # a load level's record (no repeat): its users' think time
        tuple(r[k] for k in LEVEL_KEY): r["extra"]["level"].get("think_time_s")
        for r in records
        if num(r.get("rep")) is None
        and isinstance(r.get("extra"), dict)
        and isinstance(r["extra"].get("level"), dict)
    }
    rows = []
    for r in records:
        extra = r.get("extra") if isinstance(r.get("extra"), dict) else {}
        if r.get("ttft_common") is False:
            continue
        server = num(r.get("engine_ttft_ms"))
        server = server if server is not None else num(extra.get("server_ttft_ms"))
        if server is None:
            continue
        client = num(r.get("ttft_ms"))
        rows.append(
            {
                "backend": r["backend"],
                "workload": r["workload"],
                "mode": r["mode"],
                "case": r["case"],
                "level": level_name(r["case"], think.get(tuple(r[k] for k in LEVEL_KEY))),
                "rep": r["rep"],
                "turn": r["turn"],
                "client_ttft_ms": client,
                "server_ttft_ms": server,
                "difference_ms": None if client is None else client - server,
                "server_prefill_ms": num(extra.get("server_prefill_ms")),
                "server_decode_ms_per_token": num(r.get("engine_decode_ms_per_token"))
                if num(r.get("engine_decode_ms_per_token")) is not None
                else num(extra.get("server_decode_ms_per_token")),
                "client_decode_ms_per_token": num(r.get("decode_ms_per_token")),
            }
        )
    return pd.DataFrame(rows)
