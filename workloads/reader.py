"""Read workload files: YAML with line numbers, pydantic validation, every mistake reported at once.

    specs = read_workload_file("my_study.yaml")   # or WorkloadFileError listing every mistake

Each mistake reads ``FILE:LINE: workloads[2].turns[0].user: Field required``: the YAML is read
with PyYAML's composer, which keeps each node's position, and a pydantic error's ``loc`` is
walked down that node tree. The files a workload names (``transcripts.path``, ``filler_file``,
relative to the workload file) are read and checked in the same pass, so one run of the reader
reports the file's mistakes and its transcripts' bad lines together. Nothing is returned unless
everything is valid. Which fields name files, and what a kind makes of a file once read, are the
kind's (``Kind.files``, ``Kind.with_files``): a conversation with ``transcripts`` becomes one
conversation per transcript, named ``<name>/<k>``; a load's transcripts become its ``sessions``
(one a user), checked again with them (a level above their number is a mistake at the level's
line); a sweep's ``filler_file`` becomes its ``filler``.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from llm_call_anatomy.workloads import kinds, transcripts
from llm_call_anatomy.workloads.spec import WorkloadSpec, error_loc

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
        raise WorkloadFileError(
            f"{path}: cannot read the workload file ({getattr(exc, 'strerror', None) or exc})"
        ) from exc
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            check_expansion(node, path)
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise WorkloadFileError(f"{path}:{line}: not valid YAML: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise WorkloadFileError(f"{path}: not valid YAML: {exc}") from exc
    finally:
        loader.dispose()


# What a file may grow to through aliases (``*name``): eight levels of ten-fold aliases in 600 bytes are 10^8
# nodes, minutes of building before any check (issue 44, item 13). Counted on the composed node graph, where
# an alias is a node met again, so the count itself costs the file's own nodes only.
MAX_EXPANDED_NODES = 200_000


def check_expansion(root: Node, path: Path) -> None:
    """WorkloadFileError when the document's aliases expand it past ``MAX_EXPANDED_NODES`` nodes (or an alias
    holds itself), before anything is built."""
    size: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    open_: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_.discard(key)
            size[key] = 1 + sum(size[id(c)] for c in _children(node))
            if size[key] > MAX_EXPANDED_NODES and size[key] > len(size):
                line = node.start_mark.line + 1
                raise WorkloadFileError(
                    f"{path}:{line}: its aliases (*name) expand it past {MAX_EXPANDED_NODES:,} nodes: write "
                    "the values out, or use fewer aliases of aliases"
                )
            continue
        if key in size:
            continue
        if key in open_:
            raise WorkloadFileError(f"{path}:{node.start_mark.line + 1}: an alias (*name) holds itself")
        open_.add(key)
        stack.append((node, True))
        stack += [(c, False) for c in _children(node) if id(c) not in size]


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


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
    """Each of ``exc``'s errors as a mistake at its line; ``at``: where the validated value sits in the
    file."""
    out = []
    for err in exc.errors(include_url=False):
        loc = (*at, *error_loc(err))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "union_tag_invalid":
            loc, msg = (
                (*loc, "kind"),
                f"unknown kind {err['ctx']['tag']!r} (choose from: {', '.join(kinds.names())})",
            )
        elif err["type"] == "union_tag_not_found":
            loc, msg = (*loc, "kind"), f"Field required (one of: {', '.join(kinds.names())})"
        elif err["type"] == "extra_forbidden":
            msg = "unknown field" + did_you_mean(err["loc"])
        elif err["type"] == "model_type" and not loc:
            msg = "expected a mapping with a top-level 'workloads:' list"
        line, field = locate(root, loc)
        out.append(Mistake(file, line, field, msg))
    return out


def did_you_mean(loc: tuple) -> str:
    """``" (did you mean 'think_s'?)"`` for an unknown field of a kind's entry that is close to one of the
    kind's own fields (a typo), else ``""``."""
    raw = [p for p in loc if isinstance(p, str)]
    if len(raw) < 2 or raw[-2] not in kinds.names():  # a field of a nested value: no suggestion
        return ""
    fields = list(kinds.kind(raw[-2]).spec.model_fields)
    close = difflib.get_close_matches(raw[-1], fields, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --- loading ----------------------------------------------------------------------------------
def _entries(data: Any) -> list[tuple[int, dict]]:
    items = data.get("workloads") if isinstance(data, dict) else None
    return [(i, w) for i, w in enumerate(items) if isinstance(w, dict)] if isinstance(items, list) else []


def referenced_files(path: str | Path, data: Any = None) -> dict[int, tuple[kinds.FileRef, Path]]:
    """Workload index -> (the kind's FileRef, path) of the file it names, relative paths taken from the file's
    folder."""
    path = Path(path)
    if data is None:
        data = yaml.safe_load(path.read_text())
    out = {}
    for i, w in _entries(data):
        if w.get("kind") not in kinds.KINDS:
            continue  # an unknown kind is the validation's mistake
        for ref in kinds.kind(w["kind"]).files:
            value = _at(w, ref.loc)
            if isinstance(value, str):
                out[i] = (ref, path.parent / value)
                break
    return out


def _at(entry: dict, loc: tuple[str, ...]) -> Any:
    """The value at ``loc`` inside a workload entry, or None where the path is not there."""
    value: Any = entry
    for key in loc:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _read_text(ref: Path, first: int | None) -> tuple[str, list]:  # ``first`` is for transcripts
    text = transcripts.read_capped(ref).decode("utf-8")
    if not text.strip():
        raise ValueError("the file is empty")
    return text, []


# FileRef.reads -> reader(path, first) -> (content, [(line, mistake)])
READERS = {"text": _read_text, "transcripts": transcripts.read}


def _read_refs(path: Path, data: Any, root: Node | None, mistakes: list[Mistake]) -> dict[int, Any]:
    """Read every file the workloads name; record a mistake for each that cannot be used."""
    loaded: dict[int, Any] = {}
    for i, (ref, file) in referenced_files(path, data).items():
        loc = ("workloads", i, *ref.loc)
        first = _at(data["workloads"][i], ref.loc[:-1]).get("first") if ref.takes_first else None
        first = first if isinstance(first, int) and not isinstance(first, bool) and first >= 1 else None
        try:
            found, bad = (ref.reader or READERS[ref.reads])(file, first)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            line, where = locate(root, loc)
            mistakes.append(
                Mistake(str(path), line, where, f"cannot use {file}: {getattr(exc, 'strerror', None) or exc}")
            )
            continue
        mistakes += [Mistake(str(file), n, "", msg) for n, msg in bad]
        if first is not None and not bad and len(found) < first:
            line, where = locate(root, (*loc[:-1], "first"))
            mistakes.append(
                Mistake(str(path), line, where, f"asks for {first} transcripts, {file} holds {len(found)}")
            )
        if not bad:  # a file with bad lines is not used further (a load would count its users short)
            loaded[i] = found
    return loaded


def _shown(path: Path) -> str:
    """A path for messages: relative to the project for its own files, else as given."""
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


@dataclass
class EntryContext:
    """What a kind's ``with_files`` may ask about the workload entry it is given
    (``kinds.Kind.with_files``)."""

    path: Path  # the workload file
    index: int  # the entry's position in its ``workloads:`` list
    root: Node | None
    mistakes: list[Mistake]

    def origin(self, loc: tuple[Any, ...]) -> str:
        """``FILE:LINE`` of a field of the entry (``("turns", 2)``)."""
        return f"{_shown(self.path)}:{locate(self.root, ('workloads', self.index, *loc))[0]}"

    def shown(self, path: Path) -> str:
        return _shown(path)

    def revalidate(self, spec: WorkloadSpec, doc: dict[str, Any]) -> WorkloadSpec:
        """``doc`` validated as the spec's model, or the spec as it was and the mistakes recorded at the
        entry."""
        try:
            return type(spec).model_validate(doc)
        except ValidationError as exc:
            self.mistakes += pydantic_mistakes(exc, self.root, str(self.path), ("workloads", self.index))
            return spec


def _with_files(
    specs: list[WorkloadSpec], loaded: dict[int, Any], root: Node | None, path: Path, mistakes: list[Mistake]
) -> list[WorkloadSpec]:
    """Each spec as its kind takes the file it names (inlined, expanded, validated again), in file order."""
    out: list[WorkloadSpec] = []
    for i, spec in enumerate(specs):
        take = kinds.kind(spec.kind).with_files
        out += take(spec, loaded.get(i), EntryContext(path, i, root, mistakes)) if take else [spec]
    return out


def _unique_after_expansion(specs: list[WorkloadSpec], path: Path) -> list[WorkloadSpec]:
    names = [s.name for s in specs]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise WorkloadFileError(
            f"{path}: workload names repeat after transcripts are expanded: {', '.join(clash)}"
        )
    return specs


def read_workload_file(path: str | Path) -> list[WorkloadSpec]:
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
    specs = _with_files(list(parsed.workloads), loaded, root, path, mistakes) if parsed is not None else []
    mistakes.sort(key=lambda m: (m.file != str(path), m.file, m.line))
    raise_mistakes(mistakes, str(path))
    assert parsed is not None
    return _unique_after_expansion(specs, path)


def hashes(paths: list[str | Path]) -> dict[str, str]:
    """{path: hash} of the workload files and of the transcript / filler files they name."""
    out = {}
    for p in paths:
        out[str(p)] = file_hash(p)
        for _, ref in referenced_files(p).values():
            out[str(ref)] = file_hash(ref)
    return out
