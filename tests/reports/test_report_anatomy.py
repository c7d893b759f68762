"""One call, taken apart: the stages add up to the end-to-end within the unaccounted part, a stage a record
cannot give reads "not measured", the representative call's rule, and the section on a page built from
fabricated records."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.analysis import anatomy
from tests.reports.records import load_level, load_request, sweep_record, write_run


def engine_call(**fields) -> dict:
    """A call with the engine's own stamps (in process): intake 1, queue 2, prefill 10, decode 3 x 63."""
    extra = {"engine_queue_ms": 2.0, "engine_prefill_ms": 10.0}
    return sweep_record(
        "vllm",
        256,
        0,
        14.0,
        3.2,
        engine_ttft_ms=13.0,
        engine_decode_ms_per_token=3.0,
        e2e_ms=230.0,
        last_token_ms=215.0,
        tokenize_ms=0.4,
        extra=extra,
        **fields,
    )


def caller_call(**fields) -> dict:
    """No engine stamps: prefill and decode from the caller's clock, detokenized by the adapter."""
    return sweep_record(
        "hf",
        256,
        0,
        20.0,
        4.0,
        e2e_ms=300.0,
        last_token_ms=272.0,
        detokenize_ms=1.5,
        tokenize_ms=0.5,
        **fields,
    )


def test_the_stages_add_up_to_the_end_to_end_within_the_unaccounted_part():
    for row in (engine_call(), caller_call()):
        stages = {s.name: s for s in anatomy.stages_of(row)}
        inside = [stages[n].ms for n in anatomy.INSIDE if stages[n].measured]
        assert math.isclose(sum(inside) + stages[anatomy.UNACCOUNTED].ms, row["e2e_ms"])
    engine = {s.name: s.ms for s in anatomy.stages_of(engine_call())}
    assert (engine["intake"], engine["queue"], engine["prefill"]) == (1.0, 2.0, 10.0)
    assert engine["decode"] == pytest.approx(3.0 * 63) and engine["unaccounted"] == pytest.approx(230 - 202)
    caller = {s.name: s.ms for s in anatomy.stages_of(caller_call())}
    assert (caller["prefill"], caller["decode"], caller["detokenize"]) == (20.0, 252.0, 1.5)
    assert caller["unaccounted"] == pytest.approx(300 - 20 - 252 - 1.5)


def test_the_unaccounted_part_is_split_at_the_callers_first_token_where_an_engine_clock_is_recorded():
    def call(row):
        return anatomy.Call("w", "b", "", 1, 64, row["e2e_ms"], anatomy.stages_of(row), row["ttft_ms"])

    engine = call(engine_call())
    assert engine.unaccounted_before_first_token_ms() == pytest.approx(14.0 - 13.0)  # caller TTFT less 13
    assert call(caller_call()).unaccounted_before_first_token_ms() is None  # its prefill is the caller's TTFT


def test_the_stages_before_the_call_stay_out_of_its_end_to_end():
    stages = {s.name: s for s in anatomy.stages_of(caller_call(template_ms=50.0))}
    assert stages["chat template"].ms == 50.0 and stages["tokenize"].ms == 0.5
    assert stages[anatomy.UNACCOUNTED].ms == pytest.approx(300 - 20 - 252 - 1.5)  # not less the 50.5


def test_a_stage_a_record_cannot_give_reads_not_measured_with_why():
    stages = {s.name: s for s in anatomy.stages_of(caller_call())}
    for name in ("intake", "queue"):
        assert not stages[name].measured and "no engine or server request stamps" in stages[name].why
    assert stages["chat template"].why == "the prompt was built from token ids"
    engine = {s.name: s for s in anatomy.stages_of(engine_call())}
    assert not engine["detokenize"].measured and "inside the engine or server" in engine["detokenize"].why
    old = {s.name: s for s in anatomy.stages_of(sweep_record("hf", 64, 0, 5.0, 1.0, e2e_ms=70.0))}
    assert old["tokenize"].why == "not timed in this run" and old["decode"].ms is None


def test_a_servers_metrics_stand_in_where_no_engine_stamps_are_recorded():
    extra = {"server_queue_ms": 0.5, "server_prefill_ms": 8.0, "server_ttft_ms": 9.0}
    row = sweep_record(
        "vllm-server",
        64,
        0,
        12.0,
        2.0,
        engine_decode_ms_per_token=1.0,
        e2e_ms=100.0,
        response_parse_ms=0.25,
        extra=extra,
    )
    stages = {s.name: s for s in anatomy.stages_of(row)}
    assert stages["intake"].ms == pytest.approx(0.5) and stages["queue"].clock == "server /metrics"
    assert stages["response parse"].ms == 0.25
    assert stages[anatomy.UNACCOUNTED].ms == pytest.approx(100 - 0.5 - 0.5 - 8 - 63 - 0.25)


def test_the_representative_call_is_the_middle_variants_median_call():
    rows = [
        sweep_record(b, n, rep, 1.0, 1.0, e2e_ms=float(n + 10 * rep))
        for b in ("hf", "vllm")
        for n in (64, 256, 1024)
        for rep in range(3)
    ] + [sweep_record("hf", 2048, 0, 1.0, 1.0, e2e_ms=5.0)]  # only one backend ran it: not a candidate
    chosen = anatomy.representative(pd.DataFrame(rows), ["hf", "vllm"])
    assert {b: (r["case"], r["rep"]) for b, r in chosen.items()} == {"hf": ("N=256", 1), "vllm": ("N=256", 1)}


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    tmp = tmp_path_factory.mktemp("anatomy")
    rows = [engine_call(run_id="fab"), caller_call(run_id="fab")]
    run = write_run(tmp / "fab", rows, {"model": {"label": "tiny"}})
    return build([run], tmp / "report.html").read_text(encoding="utf-8")


def test_the_section_comes_first_after_the_summary(page):
    assert "One call, taken apart" in page
    summary, section = page.index('<section id="summary">'), page.index('<section id="anatomy">')
    assert summary < section < page.index('class="workload"')
    body = page[section : page.index("</section>", section)]
    assert "not measured: the records carry no engine or server request stamps" in body
    assert "unaccounted" in body and "one call taken apart, sweep" in body


def test_an_engine_that_stamps_part_of_the_call_leaves_the_rest_not_measured():
    row = engine_call()
    row["extra"] = {"engine_queue_ms": 2.0}  # no prefill stamp: no intake either
    stages = {s.name: s for s in anatomy.stages_of(row)}
    assert stages["queue"].ms == 2.0 and stages["prefill"].why == "no prefill time recorded"
    assert not stages["intake"].measured and "all recorded" in stages["intake"].why
    assert math.isclose(2.0 + 3.0 * 63 + stages[anatomy.UNACCOUNTED].ms, row["e2e_ms"])


def test_the_page_states_the_references_split_beside_ours(page):
    assert "decode takes 96.9% at N = 1,024 and 92.8% at N = 2,048" in page
    assert "tokenization" in page and "Decode&#39;s share of the end-to-end here: vllm 82.2%" in page


def loaded(backend: str, c: int, rep: int, e2e_ms: float, **fields) -> dict:
    """A request of the level C=c: submitted at 1 s, its first token 10 ms later, its last at e2e - 5 ms."""
    times = [1.010, 1.0 + (e2e_ms - 5) / 1e3]
    return load_request(backend, c, rep, 1.0, times, e2e_ms=e2e_ms, ttft_ms=10.0, **fields)


def test_under_load_the_level_at_32_or_below_and_its_median_request_are_taken_apart():
    rows = [
        loaded(b, c, rep, 100.0 + 10 * rep + c, queue_ms=4.0 if b == "hf" else None)
        for b in ("hf", "vllm")
        for c in (8, 32, 64)
        for rep in range(3)
    ] + [load_level("hf", 32, {}), sweep_record("hf", 64, 0, 5.0, 1.0, e2e_ms=70.0)]
    chosen = anatomy.representative_loaded(pd.DataFrame(rows), ["hf", "vllm"])
    assert {b: (r["load_concurrency"], r["rep"]) for b, r in chosen.items()} == {
        "hf": (32, 1),
        "vllm": (32, 1),
    }
    stages = {s.name: s for s in anatomy.stages_of(chosen["hf"])}
    assert stages["queue"].ms == 4.0 and stages["prefill"].ms == pytest.approx(6.0)  # its turn -> first token
    assert stages["decode"].ms == pytest.approx(142 - 5 - 10)  # the last token from token_times_s
    assert stages[anatomy.UNACCOUNTED].ms == pytest.approx(5.0)
    calls = anatomy.calls(pd.DataFrame(rows), ["hf", "vllm"])
    assert [(c.workload, c.backend, c.level) for c in calls] == [
        ("lf", "hf", "C=32"),
        ("lf", "vllm", "C=32"),
        ("sweep", "hf", None),
    ]
    below = pd.DataFrame([r for r in rows if r["load_concurrency"] != 32])
    assert anatomy.representative_loaded(below, ["hf"])["hf"]["load_concurrency"] == 8  # the largest below 32


def test_the_view_gives_a_table_and_a_bar_per_workload_and_per_level():
    from llm_call_anatomy.reports.views import anatomy as view

    rows = [loaded(b, 32, rep, 100.0 + rep) for b in ("hf", "vllm") for rep in range(3)]
    rows.append(caller_call())
    calls = anatomy.calls(pd.DataFrame(rows), ["hf", "vllm"])
    specs = []
    blocks = view.blocks(calls, ["hf", "vllm"], lambda spec, label: specs.append(label) or "slot")
    titles = [b.text for b in blocks if b.kind == "h3"]
    assert titles == ["Workload lf, under load: C=32 requests in flight", "Workload sweep"]
    assert specs == ["one call taken apart, lf at C=32", "one call taken apart, sweep"]
    assert sum(b.kind == "table" for b in blocks) == 2
