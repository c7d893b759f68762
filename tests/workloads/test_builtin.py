"""The built-in workloads, read from their files, plan exactly what they planned before the file format.

``builtin_plans.json`` holds sha256 digests of ``build_plan(...).to_json()`` (repeats=2) per
built-in workload, computed with the code as it was before workloads became files of this
format (commit eac27f2 plus the tokenizer of 85ef160). The plan is every prompt as token ids and
every step's settings, i.e. everything a record is made from, so equal digests mean equal records.
The digest is of the plan's canonical form (:func:`canonical`): prompts and groups sorted, so that
the order the requests run in may change while the requests may not; the digests were recomputed in
that form with the code of commit febce0b (before the interleaved order) and equal this code's.
Issue 42 rewrote the conversation built-in to the reference's size and kept the one before it as the
variant ``conversation-long``, whose plan is the old conversation's with its name changed (checked
when the digests were regenerated: renaming its workload and blocks back gives the old digests).

Two renderings: ``bytes`` (the chat template's text, one id per UTF-8 byte: independent of the
tiny tokenizer's training, so it always runs) and ``tiny`` (the tiny model's real tokenizer: run
while that tokenizer is the one the digests were made with). After an intended change of a
built-in file, the chat template or the planners, regenerate with
``python -m tests.workloads.test_builtin > tests/workloads/builtin_plans.json``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from llm_call_anatomy.contract.chat import Renderer
from llm_call_anatomy.harness.models import CHAT_TEMPLATE
from llm_call_anatomy.workloads.catalog import BUILTIN, VARIANTS, build_plan, builtin_file, read_builtin
from llm_call_anatomy.workloads.reader import WorkloadFileError, read_workload_file

GOLDEN = Path(__file__).with_name("builtin_plans.json")
REPEATS = 2
# The built-ins the digests were made for (the load kind came later: tests/workloads/test_load.py), and the
# named variants (``conversation-long``: the conversation built-in before issue 42, under its new name).
DIGESTED = tuple(dict.fromkeys([*json.loads(GOLDEN.read_text())["builtin_file_sha256"], *VARIANTS]))


class ByteRenderer(Renderer):
    """The real chat template, but one token per UTF-8 byte."""

    def text_ids(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def texts_ids(self, texts: list[str]) -> list[list[int]]:
        return [self.text_ids(t) for t in texts]

    def token_texts(self, ids: list[int]) -> list[str]:
        return [bytes([i]).decode("latin-1") for i in ids]


def sha(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def canonical(plan) -> str:
    """The plan's prompts and its groups as a sorted list: what is requested, not in which order.
    ``engine_start`` is left out where it is 0 (the one start of a plan made without --starts), and the
    load kind's fields (``Group.load``, ``Step.user``) where they are unset: older plans had neither."""
    groups = []
    for group in plan.groups:
        doc = asdict(group)
        if doc.get("load") is None:
            doc.pop("load", None)
        for step in doc["steps"]:
            if step.get("engine_start") == 0:
                del step["engine_start"]
            if step.get("user") is None:
                step.pop("user", None)
        groups.append(json.dumps(doc))
    return json.dumps({"prompts": dict(sorted(plan.prompts.items())), "groups": sorted(groups)})


def digests(tokenizer) -> dict:
    out: dict = {
        "repeats": REPEATS,
        "chat_template_sha256": sha(CHAT_TEMPLATE),
        "builtin_file_sha256": {n: sha(builtin_file(n).read_bytes()) for n in DIGESTED},
        "tiny_tokenizer_sha256": sha(tokenizer.backend_tokenizer.to_str()),
    }
    for label, r in (("bytes", ByteRenderer(tokenizer)), ("tiny", Renderer(tokenizer))):
        out[f"plan_sha256_{label}"] = {
            n: sha(canonical(build_plan(read_builtin([n]), r, REPEATS))) for n in DIGESTED
        }
    return out


@pytest.fixture(scope="module")
def now(renderer: Renderer) -> dict:
    return digests(renderer.tokenizer)


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())


def test_builtin_files_and_template_unchanged(now, golden):
    assert now["builtin_file_sha256"] == golden["builtin_file_sha256"], "a built-in workload file changed"
    assert now["chat_template_sha256"] == golden["chat_template_sha256"], (
        "harness/chat_template.jinja changed"
    )


@pytest.mark.parametrize("name", DIGESTED)
def test_builtin_plan_is_unchanged_bytes(name, now, golden):
    assert now["plan_sha256_bytes"][name] == golden["plan_sha256_bytes"][name], f"the {name} plan changed"


@pytest.mark.parametrize("name", DIGESTED)
def test_builtin_plan_is_unchanged_tiny_tokenizer(name, now, golden):
    if now["tiny_tokenizer_sha256"] != golden["tiny_tokenizer_sha256"]:
        pytest.skip("the tiny tokenizer changed since the digests were made (the bytes digests still apply)")
    assert now["plan_sha256_tiny"][name] == golden["plan_sha256_tiny"][name], f"the {name} plan changed"


def test_builtins_go_through_the_user_file_path():
    for name in (*BUILTIN, *VARIANTS):
        assert read_builtin([name]) == read_workload_file(builtin_file(name))
        names = [s.name for s in read_builtin([name])]  # the load file holds two: load-sessions, load-fixed
        assert names == [name] or all(n.startswith(f"{name}-") for n in names)


def test_a_variant_runs_only_when_named():
    assert "conversation-long" in VARIANTS and "conversation-long" not in BUILTIN
    assert [s.name for s in read_builtin(["conversation"])] == ["conversation"]
    assert builtin_file("conversation-long").name == "builtin-long.yaml"
    with pytest.raises(WorkloadFileError, match="variants: conversation-long"):
        read_builtin(["conversation-short"])


if __name__ == "__main__":
    from transformers import AutoTokenizer

    from llm_call_anatomy.harness.models import build_tiny

    print(json.dumps(digests(AutoTokenizer.from_pretrained(build_tiny())), indent=1))
