"""Workloads: the four built-in studies (files in ``builtin/``) and user files in the same format.

    specs = load_builtin(["conversation", "sweep"]) + load_file("my_study.yaml")
    plan = build_plan(specs, renderer, repeats=5)      # every request, as token ids
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path

import yaml
from pydantic import ValidationError

from harness.chat import Renderer
from workloads import conversation, json_extraction, sweep, template
from workloads.plan import Plan
from workloads.spec import WorkloadFile, WorkloadSpec

BUILTIN_DIR = Path(__file__).parent / "builtin"
BUILTIN: tuple[str, ...] = ("conversation", "sweep", "json", "template")

PLANNERS: dict[str, Callable[..., None]] = {
    "conversation": conversation.plan,
    "sweep": sweep.plan,
    "json": json_extraction.plan,
    "template": template.plan,
}


class WorkloadFileError(ValueError):
    """A workload file that cannot be used; the message names the file and the field."""


def file_hash(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def load_file(path: str | Path) -> list[WorkloadSpec]:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise WorkloadFileError(f"{path}: cannot read ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise WorkloadFileError(f"{path}: not valid YAML ({exc})") from exc
    try:
        return list(WorkloadFile.model_validate(data).workloads)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise WorkloadFileError(f"{path}: {where}: {first['msg']}") from exc


def load_builtin(names: Iterable[str]) -> list[WorkloadSpec]:
    specs: list[WorkloadSpec] = []
    for name in names:
        if name not in BUILTIN:
            raise WorkloadFileError(f"unknown workload {name!r} (built-in: {', '.join(BUILTIN)})")
        specs += load_file(BUILTIN_DIR / f"{name}.yaml")
    return specs


def build_plan(specs: Iterable[WorkloadSpec], renderer: Renderer, repeats: int) -> Plan:
    plan = Plan()
    for spec in specs:
        PLANNERS[spec.kind](spec, renderer, plan, repeats)
    return plan


def corpus_texts() -> list[str]:
    """The text the project's tokenizer is trained on: the built-in workload files, plus the chat
    template's fixed strings so that, as in Qwen3's vocabulary, they are few tokens."""
    tags = "<|im_start|>system\n<|im_start|>user\n<|im_start|>assistant\n<think>\n\n</think>\n\n" * 32
    return [p.read_text() for p in sorted(BUILTIN_DIR.glob("*.yaml"))] + [tags]
