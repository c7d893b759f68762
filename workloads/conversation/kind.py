"""The ``conversation`` kind as the registry finds it: its spec and planner (``spec.py``), the files it
reads (transcripts), and its lint (``lint.py``: each turn's prompt extends the previous one)."""

from __future__ import annotations

from llm_call_anatomy.workloads.conversation import lint
from llm_call_anatomy.workloads.conversation.spec import ConversationSpec, plan, with_files
from llm_call_anatomy.workloads.kinds import FileRef, Kind, Lint

KIND = Kind(
    "conversation",
    ConversationSpec,
    plan,
    repeated=True,
    files=(FileRef(("transcripts", "path"), reads="transcripts", takes_first=True),),
    with_files=with_files,
    lint=Lint(lint.check, lint.report),
    order=10,
)
