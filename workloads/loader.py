"""Read workload files: YAML with line numbers, pydantic validation, every mistake reported at once.

    specs = load_file("my_study.yaml")   # or WorkloadFileError listing every mistake

Each mistake reads ``FILE:LINE: workloads[2].turns[0].user: Field required``: the YAML is read
with PyYAML's composer, which keeps each node's position, and a pydantic error's ``loc`` is
walked down that node tree. The files a workload names (``transcripts.path``, ``filler_file``,
relative to the workload file) are read and checked in the same pass, so one run of the loader
reports the file's mistakes and its transcripts' bad lines together. Nothing is returned unless
everything is valid. A conversation with ``transcripts`` becomes one conversation per
transcript, named ``<name>/<k>``; a load's transcripts become its ``sessions`` (one a user),
checked again with them (a level above their number is a mistake at the level's line).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from workloads import kinds, transcripts
from workloads.spec import ConversationSpec, SweepSpec, WorkloadSpec, error_loc

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class WorkloadFileError(ValueError):
    """A workload file that cannot be used; the message lists every mistake with file and line."""


@dataclass(frozen=True)
class Mistake:
    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field + ': ' if self.field else ''}{self.message}"


def file_hash(path: str | Path) -> str:
    return hashlib.sha256(transcripts.read_capped(Path(path))).hexdigest()[:16]


def raise_mistakes(mistakes: list[Mistake], what: str) -> None:
    if mistakes:
        n = len(mistakes)
        lines = [f"{what}: {n} mistake{'s' if n > 1 else ''}, nothing was run", *map(str, mistakes)]
        raise WorkloadFileError("\n".join(lines))


# --- YAML with positions --------------------------------------------------------------------
def read_yaml(path: Path) -> tuple[Any, Node | None]:
    """The document and its node tree (for line numbers); WorkloadFileError if unreadable."""
    try:
        text = transcripts.read_capped(path).decode("utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise WorkloadFileError(f"{path}: cannot read the workload file ({getattr(exc, 'strerror', None) or exc})") from exc
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise WorkloadFileError(f"{path}:{line}: not valid YAML: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise WorkloadFileError(f"{path}: not valid YAML: {exc}") from exc
    finally:
        loader.dispose()


def _key(node: MappingNode, key: str) -> tuple[ScalarNode, Node] | None:
    return next(((k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == key), None)


def locate(root: Node | None, loc: tuple | list) -> tuple[int, str]:
    """The line (1-based) of the deepest node ``loc`` reaches, and ``loc`` as a field path.

    Items of ``loc`` that name no key of a mapping and are not last, or equal the mapping's
    ``kind``, are pydantic's union tags (``workloads.0.conversation.turns``): they are skipped.
    A missing field (the last item) points at the mapping that lacks it.
    """
    node, line, parts = root, (root.start_mark.line + 1 if root is not None else 1), []
    for i, item in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, MappingNode) and isinstance(item, str):
            hit = _key(node, item)
            kind = _key(node, "kind")
            if hit is None and (not last or (kind is not None and getattr(kind[1], "value", None) == item)):
                continue
            if hit is not None:
                line, node = hit[0].start_mark.line + 1, hit[1]
            else:
                node = None
        elif isinstance(node, SequenceNode) and isinstance(item, int) and 0 <= item < len(node.value):
            node = node.value[item]
            line = node.start_mark.line + 1
        else:
            node = None
        parts.append(f"[{item}]" if isinstance(item, int) else ("." if parts else "") + str(item))
    return line, "".join(parts)


def duplicate_keys(node: Node | None, file: str, path: str = "") -> list[Mistake]:
    """PyYAML keeps the last of two equal keys silently; a workload file must not have any."""
    out: list[Mistake] = []
    if isinstance(node, MappingNode):
        seen: set[str] = set()
        for k, v in node.value:
            name = k.value if isinstance(k, ScalarNode) else "?"
            sub = f"{path}.{name}" if path else name
            if name in seen:
                out.append(Mistake(file, k.start_mark.line + 1, sub, "this key is given twice"))
            seen.add(name)
            out += duplicate_keys(v, file, sub)
    elif isinstance(node, SequenceNode):
        for i, v in enumerate(node.value):
            out += duplicate_keys(v, file, f"{path}[{i}]")
    return out


def pydantic_mistakes(exc: ValidationError, root: Node | None, file: str, at: tuple = ()) -> list[Mistake]:
    """Each of ``exc``'s errors as a mistake at its line; ``at``: where the validated value sits in the file."""
    out = []
    for err in exc.errors(include_url=False):
        loc = (*at, *error_loc(err))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "union_tag_invalid":
            loc, msg = (*loc, "kind"), f"unknown kind {err['ctx']['tag']!r} (choose from: {', '.join(kinds.names())})"
        elif err["type"] == "union_tag_not_found":
            loc, msg = (*loc, "kind"), f"Field required (one of: {', '.join(kinds.names())})"
        elif err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] == "model_type" and not loc:
            msg = "expected a mapping with a top-level 'workloads:' list"
        line, field = locate(root, loc)
        out.append(Mistake(file, line, field, msg))
    return out


# --- loading ----------------------------------------------------------------------------------
def _entries(data: Any) -> list[tuple[int, dict]]:
    items = data.get("workloads") if isinstance(data, dict) else None
    return [(i, w) for i, w in enumerate(items) if isinstance(w, dict)] if isinstance(items, list) else []


def referenced_files(path: str | Path, data: Any = None) -> dict[int, tuple[str, Path]]:
    """Workload index -> (field, path) of the file it names, relative paths taken from the file's folder."""
    path = Path(path)
    if data is None:
        data = yaml.safe_load(path.read_text())
    out = {}
    for i, w in _entries(data):
        src = w.get("transcripts")
        if w.get("kind") in ("conversation", "load") and isinstance(src, dict) and isinstance(src.get("path"), str):
            out[i] = ("transcripts", path.parent / src["path"])
        elif w.get("kind") == "sweep" and isinstance(w.get("filler_file"), str):
            out[i] = ("filler_file", path.parent / w["filler_file"])
    return out


def _read_filler(ref: Path) -> str:
    text = transcripts.read_capped(ref).decode("utf-8")
    if not text.strip():
        raise ValueError("the file is empty")
    return text


def _read_refs(path: Path, data: Any, root: Node | None, mistakes: list[Mistake]) -> dict[int, Any]:
    """Read every file the workloads name; record a mistake for each that cannot be used."""
    loaded: dict[int, Any] = {}
    for i, (field, ref) in referenced_files(path, data).items():
        loc = ("workloads", i, *(("transcripts", "path") if field == "transcripts" else (field,)))
        first = data["workloads"][i]["transcripts"].get("first") if field == "transcripts" else None
        first = first if isinstance(first, int) and not isinstance(first, bool) and first >= 1 else None
        try:
            if field == "filler_file":
                loaded[i] = _read_filler(ref)
                continue
            found, bad = transcripts.read(ref, first)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            line, where = locate(root, loc)
            mistakes.append(Mistake(str(path), line, where, f"cannot use {ref}: {getattr(exc, 'strerror', None) or exc}"))
            continue
        mistakes += [Mistake(str(ref), n, "", msg) for n, msg in bad]
        if first is not None and not bad and len(found) < first:
            line, where = locate(root, ("workloads", i, "transcripts", "first"))
            mistakes.append(Mistake(str(path), line, where, f"asks for {first} transcripts, {ref} holds {len(found)}"))
        if not bad:  # a file with bad lines is not used further (a load would count its users short)
            loaded[i] = found
    return loaded


def _recorded_sessions(specs: list[WorkloadSpec], loaded: dict[int, Any], root: Node | None, path: Path,
                       mistakes: list[Mistake]) -> None:
    """Each load's transcripts, in place, as its ``sessions``: the spec validated again with them."""
    for i, spec in enumerate(specs):
        if spec.kind == "load" and getattr(spec, "transcripts", None) is not None and i in loaded:
            doc = {**spec.model_dump(exclude_none=True, exclude={"transcripts"}), "sessions": [m for _, m in loaded[i]]}
            try:
                specs[i] = type(spec).model_validate(doc)
            except ValidationError as exc:
                mistakes += pydantic_mistakes(exc, root, str(path), ("workloads", i))


def _shown(path: Path) -> str:
    """A path for messages: relative to the project for its own files, else as given."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def _expand(specs: list[WorkloadSpec], loaded: dict[int, Any], root: Node | None, path: Path) -> list[WorkloadSpec]:
    out: list[WorkloadSpec] = []
    for i, spec in enumerate(specs):
        if isinstance(spec, SweepSpec) and spec.filler_file is not None:
            out.append(spec.model_copy(update={"filler": loaded[i]}))
        elif isinstance(spec, ConversationSpec) and spec.transcripts is not None:
            ref = path.parent / spec.transcripts.path
            for k, (line, messages) in enumerate(loaded[i], start=1):
                one = spec.model_copy(update={"name": f"{spec.name}/{k}", "messages": messages, "transcripts": None})
                one._origins = [f"{_shown(ref)}:{line}"]
                out.append(one)
        else:
            if isinstance(spec, ConversationSpec) and spec.turns is not None:
                spec._origins = [f"{_shown(path)}:{locate(root, ('workloads', i, 'turns', t))[0]}" for t in range(len(spec.turns))]
            elif isinstance(spec, ConversationSpec):
                spec._origins = [f"{_shown(path)}:{locate(root, ('workloads', i, 'messages'))[0]}"]
            out.append(spec)
    names = [s.name for s in out]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise WorkloadFileError(f"{path}: workload names repeat after transcripts are expanded: {', '.join(clash)}")
    return out


def load_file(path: str | Path) -> list[WorkloadSpec]:
    """Every workload of a file, checked; the files they name are read and inlined."""
    path = Path(path)
    data, root = read_yaml(path)
    mistakes = duplicate_keys(root, str(path))
    if data is None:
        raise WorkloadFileError(f"{path}:1: the file is empty (expected a top-level 'workloads:' list)")
    parsed = None
    try:
        parsed = kinds.file_model().model_validate(data)
    except ValidationError as exc:
        mistakes += pydantic_mistakes(exc, root, str(path))
    loaded = _read_refs(path, data, root, mistakes)
    specs = list(parsed.workloads) if parsed is not None else []
    _recorded_sessions(specs, loaded, root, path, mistakes)
    mistakes.sort(key=lambda m: (m.file != str(path), m.file, m.line))
    raise_mistakes(mistakes, str(path))
    assert parsed is not None
    return _expand(specs, loaded, root, path)


def hashes(paths: list[str | Path]) -> dict[str, str]:
    """{path: hash} of the workload files and of the transcript / filler files they name."""
    out = {}
    for p in paths:
        out[str(p)] = file_hash(p)
        for _, ref in referenced_files(p).values():
            out[str(ref)] = file_hash(ref)
    return out
