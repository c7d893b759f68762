"""What a run found, said in the terminal at its end: a run that measured nothing says so in one line.

``harness/backend_runs.py`` asks after the last backend, from the records alone (no report extra needed).
:func:`nothing_measured`: every requested backend was skipped (not installed, could not start, or lacks
what each workload needs) or every request failed. The run then exits 1 and its last line says so, with
the backend's reason or first error.
"""

from __future__ import annotations

SHORT = 160  # characters of an error kept in the last line


def _failed(row: dict) -> bool:
    return bool(row.get("error"))


def _first_line(text: str, short: int | None = None) -> str:
    lines = [x.strip() for x in str(text).splitlines() if x.strip()]
    first = lines[0] if lines else ""
    return first if short is None or len(first) <= short else first[: short - 1] + "…"


# --- a run that measured nothing ------------------------------------------------------------------------
def measured(row: dict) -> bool:
    """A request that was served: not skipped, not failed, not a load level's own record."""
    return not row.get("skipped") and not _failed(row) and "level" not in (row.get("extra") or {})


def nothing_measured(rows: list[dict], backends: list[str]) -> str | None:
    """One line when no requested backend measured anything, None when something was measured: one backend
    skipped gives its reason whole (it ends with its fix: ``pip install ...``); several name the backends
    (each reason was printed as it was skipped, and is in env.json); a backend whose every request failed,
    its first error."""
    mine = [r for r in rows if r.get("backend") in backends]
    if any(measured(r) for r in mine):
        return None
    said: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for name in backends:
        skipped = next((r["skipped"] for r in mine if r.get("backend") == name and r.get("skipped")), None)
        errors = [r["error"] for r in mine if r.get("backend") == name and _failed(r)]
        if errors:
            said[name] = f"{name}: every request failed (first: {_first_line(errors[0], SHORT)})"
        elif skipped:
            said[name], reasons[name] = f"{name} was skipped", _first_line(skipped)
        else:
            said[name] = f"{name} recorded nothing"
    if len(reasons) == len(backends) == 1:
        return f"nothing was measured: {backends[0]} was skipped: {reasons[backends[0]]}"
    if len(reasons) == len(backends):
        return (
            f"nothing was measured: every backend was skipped ({', '.join(backends)}: each reason is above)"
        )
    return "nothing was measured: " + "; ".join(said.values())
