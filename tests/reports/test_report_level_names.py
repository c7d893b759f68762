"""One name a level (issue 39): a closed level of users who think is recorded as ``C=N`` (the planner names
every closed level so, and old runs and --resume key on it) but read as ``U=N`` wherever the reader sees it
(``contract.level_flags.level_name``): the README's load table, the page's level tables, its caller-vs-engine
tables, its caveats and the anatomy's title, which says users who think, never "requests in flight". A closed
level without a think time still reads ``C=N``. From hand-made records: a think workload ``lt`` at C=8 (the
H200's 256 users thinking 30 s, with a handful in flight) beside a plain closed workload ``lf`` at C=4."""

from __future__ import annotations

import html
import re

import pytest

from llm_call_anatomy.contract.level_flags import level_name
from llm_call_anatomy.reports import build
from llm_call_anatomy.workloads.load.report import load_table
from tests.reports.records import load_level, load_request, write_run

THINK = {"think_time_s": 30.0, "think": "exponential", "users": 8, "session_turns": 10.0}


def level(workload: str, mode: str, c: int, facts: dict) -> list[dict]:
    """Five requests of the level C=c on vllm (each with the engine's own TTFT, so the caller-vs-engine
    tables hold it), and its level record with ``facts`` and a client busy enough to be named."""
    where = {"workload": workload, "mode": mode}
    out = []
    for rep in range(5):
        submit = 0.1 * rep
        times = [submit + 0.010, submit + 0.020, submit + 0.050]
        out.append(
            load_request(
                "vllm",
                c,
                rep,
                submit,
                times,
                ttft_ms=10.0,
                engine_ttft_ms=8.0,
                e2e_ms=55.0 + rep,
                decode_ms_per_token=20.0,
                prompt_tokens=100,
                **where,
            )
        )
    busy = {"client_busy_max": 0.9, "client_limited": True, "served_as": "batched by the engine"}
    out.append(load_level("vllm", c, {**facts, **busy}, **where))
    return out


def run_dir(tmp_path):
    rows = level("lt", "sessions", 8, THINK) + level("lf", "S=0", 4, {})
    return write_run(tmp_path / "run", rows)


def text_of(page: str) -> str:
    """The page's words: no scripts, no tags."""
    page = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "\n", page))


def test_a_level_is_named_u_where_its_users_think_else_as_recorded():
    assert level_name("C=256", 30.0) == "U=256"
    assert level_name("C=256", 0.0) == "C=256" and level_name("C=256", None) == "C=256"
    assert level_name("C=256", float("nan")) == "C=256"  # no think time recorded: as recorded
    assert level_name("rate=4", 30.0) == "rate=4"  # an open loop's arrivals are new users: its own name


def test_a_capacity_row_and_a_level_take_their_letter_from_one_rule():
    """The capacity cells (from a row's think_s) and the level names (from a case and a think time) decide
    U or C in one place, so a capacity cell and the level it names cannot disagree."""
    from llm_call_anatomy.workloads.load.report.capacity_cells import level_text, row_letter

    for think in (30.0, 0.0, None, float("nan")):
        row = {"loop": "closed", "think_s": think, "mode": "sessions"}
        assert level_text(row, 256) == level_name("C=256", think)
        assert row_letter(row) == level_name("C=1", think)[0]


def test_the_load_table_reads_u_for_users_who_think_and_c_for_a_closed_level(tmp_path, capsys):
    assert load_table.main([str(run_dir(tmp_path))]) == 0
    rows = [line.split(" | ")[0].lstrip("| ") for line in capsys.readouterr().out.splitlines()[2:4]]
    assert rows == ["lt · sessions · U=8", "lf · S=0 · C=4"]


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("names")
    return text_of(build([run_dir(tmp)], tmp / "report.html").read_text(encoding="utf-8"))


def test_the_page_names_the_think_level_u_and_never_c(page):
    lines = [line.strip() for line in page.splitlines()]
    assert "C=8" not in page  # the record's case is nowhere the reader looks
    assert lines.count("U=8") >= 2  # the level table and the caller-vs-engine table
    assert "vllm at lt · sessions U=8: a client process was busy 90%" in page  # the caveat
    assert "33.3 output tok/s (whole level) at U=8" in page  # the summary's peak


def test_the_anatomy_title_says_users_who_think_not_requests_in_flight(page):
    assert "Workload lt, under load: U=8 users, think 30 s (exponential)" in page
    assert "U=8 requests in flight" not in page and "C=8 requests in flight" not in page
    assert "case U=8" in page  # the call named by its level as shown


def test_a_closed_level_without_think_still_reads_c(page):
    lines = [line.strip() for line in page.splitlines()]
    assert "Workload lf, under load: C=4 requests in flight" in page
    assert lines.count("C=4") >= 2 and "vllm at lf · S=0 C=4: a client process" in page
    assert "U=4" not in page
