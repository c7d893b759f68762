"""The shipped examples: study.yaml uses every field of the format and runs on the tiny model; the docs'
loads; load-transcripts.yaml lints and runs at the CPU's load scale."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from llm_call_anatomy.harness.cli import main
from llm_call_anatomy.workloads import spec as S
from llm_call_anatomy.workloads.conversation.spec import ConversationSpec
from llm_call_anatomy.workloads.json.kind import JsonCase, JsonMode, JsonSpec
from llm_call_anatomy.workloads.load.spec import CPU_LOAD, parse_load
from llm_call_anatomy.workloads.overrides import apply_fields
from llm_call_anatomy.workloads.reader import file_hash, hashes, read_workload_file
from llm_call_anatomy.workloads.sweep.kind import SweepSpec
from llm_call_anatomy.workloads.template.kind import Question, TemplateFormat, TemplateSpec
from tests.conftest import compare, records

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STUDY = EXAMPLES / "study.yaml"
NESTED = {  # list- or object-valued fields whose items are models themselves
    "turns": S.Turn,
    "transcripts": S.TranscriptSource,
    "messages": S.Message,
    "tool_calls": S.ToolCall,
    "function": S.FunctionCall,
    "modes": JsonMode,
    "cases": JsonCase,
    "questions": Question,
    "formats": TemplateFormat,
}
KIND_MODELS = {
    "conversation": ConversationSpec,
    "sweep": SweepSpec,
    "json": JsonSpec,
    "template": TemplateSpec,
}


def fields_of(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


def used(model: type[BaseModel], value, seen: dict[type, set[str]]) -> None:
    """Record which fields of ``model`` (and of the models nested in it) ``value`` sets."""
    for item in value if isinstance(value, list) else [value]:
        seen.setdefault(model, set()).update(item)
        for key, sub in item.items():
            if key in NESTED and key in fields_of(model) and sub is not None:
                used(NESTED[key], sub, seen)


def test_study_uses_every_field_of_every_kind():
    seen: dict[type, set[str]] = {}
    for w in yaml.safe_load(STUDY.read_text())["workloads"]:
        used(KIND_MODELS[w["kind"]], w, seen)
    for line in (EXAMPLES / "transcripts.jsonl").read_text().splitlines():
        value = json.loads(line)
        used(S.Message, value["messages"] if isinstance(value, dict) else value, seen)
    for model in [*KIND_MODELS.values(), *NESTED.values()]:
        missing = fields_of(model) - seen.get(model, set())
        assert not missing, f"examples/study.yaml does not use {model.__name__}.{sorted(missing)}"


def readme_example(tmp_path: Path) -> Path:
    """The YAML block of docs/guides/workloads.md's section "Your own workloads" (the README's is its first
    entry)."""
    text = (EXAMPLES.parent / "docs" / "guides" / "workloads.md").read_text()
    section = text.split("## Your own workloads", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    path = tmp_path / "my_study.yaml"
    path.write_text(block)
    return path


def test_readme_example_is_valid_and_stable(tmp_path, tiny_model_dir, capsys):
    path = readme_example(tmp_path)
    kinds = ["conversation", "sweep", "json", "template", "load", "trace"]
    assert [s.kind for s in read_workload_file(path)] == kinds
    assert main(["--lint-only", "--workload-file", str(path)]) == 0
    assert "support-agent: 2 turns, stable" in capsys.readouterr().out


def test_load_transcripts_example_lints_and_fits_the_cpu_load_scale(tiny_model_dir, capsys):
    path = EXAMPLES / "load-transcripts.yaml"
    [spec] = read_workload_file(path)
    assert spec.kind == "load" and len(spec.sessions) == spec.user_count() == max(spec.levels) == 4
    assert set(hashes([path])) == {str(path), str(EXAMPLES / "sessions.jsonl")}
    apply_fields([spec], "--load", parse_load(CPU_LOAD))  # compare.py's CPU default: no mistake
    assert main(["--lint-only", "--workload-file", str(path)]) == 0
    assert "1 workload(s) valid: load-recorded" in capsys.readouterr().out


@pytest.mark.slow
def test_study_runs_on_the_tiny_model(tmp_path):
    out = tmp_path / "run"
    compare(
        "--workload-file", str(STUDY), "--backend", "hf", "--repeats", "1", "--out", str(out), "--no-report",
        "--json-calls", "3",  # --repeats 1 alone caps the JSON grid at one call a temperature: case 1 only
    )  # fmt: skip
    rows = records(out)
    names = [s.name for s in read_workload_file(STUDY)]
    assert sorted({r["workload"] for r in rows}) == sorted(names)
    assert not [r for r in rows if r["error"] or r["skipped"]]
    assert {r["workload"] for r in rows if r["turn"] == 3} >= {
        "support-agent",
        "support-chat/1",
        "support-chat/2",
    }
    json_rows = [r for r in rows if r["kind"] == "json"]
    assert all(isinstance(r["valid_json"], bool) for r in json_rows)
    assert {r["correct"] is None for r in json_rows} == {True, False}  # case 3 has no expected values
    env = json.loads((out / "env.json").read_text())
    assert env["workload_files"] == {
        str(p): file_hash(p) for p in (STUDY, EXAMPLES / "transcripts.jsonl", EXAMPLES / "filler.txt")
    }
    assert [f["turn"] for f in env["prefix_stability"]["support-agent-clock"] if not f["expected"]] == [2]


def test_the_demos_load_file_runs_as_written_on_a_cpu_where_the_builtin_is_scaled_down(tmp_path):
    """`make demo`'s load (examples/demo-load.yaml) keeps its own 4 output tokens on a CPU; the built-in load,
    in the same run, gets the CPU scale (8 output tokens)."""
    out = tmp_path / "run"
    proc = compare(
        "--backend",
        "hf",
        "--workloads",
        "load",
        "--workload-file",
        str(EXAMPLES / "demo-load.yaml"),
        "--out",
        str(out),
        "--no-report",
    )
    assert "at the CPU's scale" in proc.stdout
    rows = [r for r in records(out) if r["rep"] is not None and not r["error"]]
    tokens = {r["workload"]: r["output_tokens"] for r in rows}
    assert tokens == {"demo-sessions": 4, "demo-fixed": 4, "load-sessions": 8, "load-fixed": 8}


def test_the_demos_arguments_and_files_are_valid_and_its_chat_is_stable(tiny_model_dir, capsys):
    """`make demo`'s DEMO_ARGS parse, name existing built-ins and files, and its chat passes the prefix
    lint."""
    import shlex

    from llm_call_anatomy.harness.cli import parser

    makefile = (EXAMPLES.parent / "Makefile").read_text()
    args = parser().parse_args(shlex.split(re.search(r"^DEMO_ARGS\s*\?=(.*)$", makefile, re.M).group(1)))
    files = [EXAMPLES.parent / f for f in args.workload_file]
    kinds = {s.kind for f in files for s in read_workload_file(f)}
    assert {"conversation", "sweep", "load"} <= kinds  # the first screen's latency and load rows
    assert args.repeats >= 3 and len(args.json_temperatures.split(",")) == 2  # a spread, and two temperatures
    lint = [
        "--lint-only",
        "--workloads",
        args.workloads,
        *[x for f in files for x in ("--workload-file", str(f))],
    ]
    assert main(lint) == 0
    assert "demo-chat: 3 turns, stable" in capsys.readouterr().out
