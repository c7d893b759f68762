"""Writing a file that others read whole or not at all: the run directory's JSON files and the report.

    atomic_write_text(path, text)
    backend_env_blocks(run_dir, strict)

The text goes to a temporary file in the same folder, is fsynced and renamed over the old file, so a
full disk or a crash leaves the previous file or the new one, never half of one (and no temporary
file). One function for every layer: the harness's ``plan.json`` / ``run.json`` / ``env.json``, the
report's page and its JSON export. And one reader of a run's per-backend ``env/<backend>.json`` blocks,
for the harness (which merges them into ``env.json``) and the report (which fills from them what a run
cut short left out of ``env.json``).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)  # read by setting: the only portable way; set back at once
    os.umask(mask)
    return mask


# read once, at import (before a run's threads start): the mode every file of a run gets, as open() gives
# records.jsonl; mkstemp's own 0600 would make the JSON files and the page unreadable to the group
FILE_MODE = 0o666 & ~_umask()


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (temporary file in the same folder, fsync, rename), with
    the mode a plain ``open()`` gives (0666 less the umask: one mode for every file of a run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def backend_env_blocks(run_dir: Path, strict: bool) -> dict[str, object]:
    """Each ``run_dir/env/<backend>.json``, by backend name in name order. ``strict`` (the harness, which
    wrote them): a block that does not read or parse raises. Not strict (the report, reading whatever
    run it is given): such a block, or one that is not a JSON object, is left out."""
    blocks: dict[str, object] = {}
    for path in sorted((run_dir / "env").glob("*.json")):
        if strict:
            blocks[path.stem] = json.loads(path.read_text(encoding="utf-8"))
            continue
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(found, dict):
            blocks[path.stem] = found
    return blocks
