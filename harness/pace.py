"""This machine's pace, remembered between runs: the plan's time estimate before the first engine starts.

A plan has no clock; a machine that ran a backend on a model before has one. After a backend ran a whole
fresh run (not a resume, no failure, not skipped), ``harness/backend_runs.py`` keeps its seconds (engine
starts included) and the new tokens its plan asked for in ``$LCA_CACHE/pace.json``, by backend, model
and device; the next run's plan (``harness/plan_summary.py``) scales them to its own tokens:

    time: about 35 min at this machine's pace (the last runs here of hf, vllm on this model and device)

A backend never timed here is named as such, and its time comes from the run itself (the progress bar's
ETA, then the rest of the run at the pace of the backends that ran). The estimate is rough by design:
seconds a planned token, one figure a backend, an engine start's fixed cost scaled with the rest. The file
is a convenience: it is read and written whole, and a file that cannot be read or written is no estimate,
never an error.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from llm_call_anatomy.contract.files import atomic_write_text
from llm_call_anatomy.contract.plan import Plan
from llm_call_anatomy.harness.models import cache_root
from llm_call_anatomy.harness.plan_summary import duration

PACE_FILE = "pace.json"


def pace_path() -> Path:
    return cache_root() / PACE_FILE


def plan_tokens(plan: Plan) -> int:
    """The new tokens a backend's run of ``plan`` asks for: every step's ``max_new_tokens``, warm-ups and
    every engine start included, a capacity search's pool left out (the levels it adds are in no plan)."""
    return sum(s.max_new_tokens for g in plan.groups if not (g.load or {}).get("pool") for s in g.steps)


def _key(backend: str, model: str, device: str) -> str:
    return f"{backend} | {model} | {device}"


def _read(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def remember(path: Path, backend: str, model: str, device: str, seconds: float, tokens: int) -> None:
    """Keep a backend's whole run: its seconds and the new tokens its plan asked for (nothing where the plan
    asked for none, or the file cannot be written)."""
    if tokens <= 0 or seconds <= 0:
        return
    doc = _read(path)
    doc[_key(backend, model, device)] = {
        "seconds": round(seconds, 1),
        "tokens": tokens,
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }
    try:
        atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    except OSError:
        return


def estimate(path: Path, backends: list[str], model: str, device: str, tokens: int) -> dict[str, float]:
    """Seconds a backend, for the backends this machine ran on ``model`` and ``device`` before, at their pace
    then (seconds a planned token) times ``tokens``."""
    doc = _read(path)
    out = {}
    for b in backends:
        seen = doc.get(_key(b, model, device))
        if isinstance(seen, dict) and seen.get("tokens") and seen.get("seconds"):
            out[b] = float(seen["seconds"]) / float(seen["tokens"]) * tokens
    return out


def time_line(path: Path, backends: list[str], model: str, device: str, tokens: int) -> str | None:
    """The plan's time line from this machine's pace; None where no backend of the run was timed here."""
    known = estimate(path, backends, model, device, tokens)
    if not known:
        return None
    unknown = [b for b in backends if b not in known]
    total = duration(sum(known.values()))
    names = ", ".join(known)
    if not unknown:
        return (
            f"  time: about {total} at this machine's pace (the last runs here of {names} on this model "
            "and device); the progress bar's ETA once cases finish"
        )
    return (
        f"  time: about {total} for {names} at this machine's pace (as they ran here before on this model "
        f"and device); {', '.join(unknown)} not timed here yet: the progress bar's ETA once cases finish"
    )
