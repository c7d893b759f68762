"""Writing a file that others read whole or not at all: the run directory's JSON files and the report.

    atomic_write_text(path, text)

The text goes to a temporary file in the same folder, is fsynced and renamed over the old file, so a
full disk or a crash leaves the previous file or the new one, never half of one (and no temporary
file). One function for every layer: the harness's ``plan.json`` / ``run.json`` / ``env.json``, the
report's page and its JSON export.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (temporary file in the same folder, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
