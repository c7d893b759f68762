"""The page, built from the recorded runs: sections, skipped backends, references, escaping, offline, CLI."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from llm_call_anatomy.reports import build
from llm_call_anatomy.reports.__main__ import main
from llm_call_anatomy.reports.page import json_script
from tests.reports.records import FIXTURES, RUNS, record

SCRIPT = "<script>window.__injected = 1</script>"


def add_records(run: Path, *rows: dict) -> None:
    with (run / "records.jsonl").open("a", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def hostile(run: Path) -> None:
    """A failing JSON reply and a template reply that carry markup, and a mode name with markup."""
    add_records(
        run,
        record(
            run_id=run.name,
            backend="hf",
            workload="json",
            kind="json",
            mode="strict",
            case="case=9",
            rep=0,
            temperature=0.0,
            valid_json=False,
            output_text=SCRIPT,
            finish_reason="stop",
            prompt_tokens=60,
            e2e_ms=10.0,
            decode_ms_per_token=1.0,
        ),
        record(
            run_id=run.name,
            backend="hf",
            workload="template",
            kind="template",
            mode="<b>fmt</b>",
            case="q=0",
            clean=False,
            output_text="</pre>" + SCRIPT,
            finish_reason="length",
        ),
    )


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    """The page built once from copies of both recorded runs, the first with hostile records added."""
    tmp = tmp_path_factory.mktemp("page")
    runs = [Path(shutil.copytree(FIXTURES / name, tmp / name)) for name in RUNS]
    hostile(runs[0])
    out = build(runs, tmp / "out" / "report.html")
    assert out == tmp / "out" / "report.html"
    return out.read_text(encoding="utf-8")


def test_sections_and_columns(page):
    for heading in (
        "Workload “conversation”",
        "Workload “sweep”",
        "Workload “json”",
        "Workload “template”",
        "Agreement at T=0",
        "Caveats",
        "Environment",
        "Which stack for which job",
    ):
        assert heading.replace("“", "<q>").replace("”", "</q>") in page or heading in page
    assert "hf (tiny-eager)" in page and "hf (tiny-sdpa)" in page


def test_skipped_backends_appear_with_their_reason(page):
    assert "sglang is not installed here" in page
    assert "hf-graphs captures CUDA graphs" in page
    assert "hf does not support attentions" in page  # the sdpa run's skipped attention probe


def test_reference_values_are_labelled(page):
    assert page.count("reference (seed, A100)") >= 3  # header, conversation totals, sweep tables
    assert "5,549" in page and "494×" in page


def test_the_seed_article_is_cited_by_title_author_and_address(page):
    from llm_call_anatomy.reports.reference import SOURCE

    assert SOURCE["url"] in page and SOURCE["author"] in page
    assert SOURCE["title"].replace("?", "") in page.replace("?", "")


def test_random_weights_warning(page):
    assert "Weights are random" in page and "quality figures" in page


def test_model_text_is_escaped(page):
    assert SCRIPT not in page and "window.__injected" in page
    assert "&lt;script&gt;window.__injected = 1&lt;/script&gt;" in page
    assert "<b>fmt</b>" not in page and "&lt;b&gt;fmt&lt;/b&gt;" in page
    assert page.count("<script") == page.count("</script>")  # nothing from the data closed or opened a script


def test_offline_and_charts(page):
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page
    assert "default-src 'none'" in page  # the CSP forbids every request
    slots = re.findall(r'<div class="chart" data-spec="(spec-\d+)"', page)
    assert len(slots) >= 6  # TTFT per turn, prefill, decode, JSON pass rate, attention, agreement
    for slot in slots:
        assert f'<script type="application/json" id="{slot}">' in page


def test_json_script_escapes_markup():
    text = json_script({"t": "</script><!-- & -->"})
    assert "<" not in text and ">" not in text and "&" not in text.replace("\\u0026", "")
    assert json.loads(str(text)) == {"t": "</script><!-- & -->"}


def test_only_some_workloads(recorded_runs, tmp_path):
    page = build([recorded_runs[1]], tmp_path / "sdpa.html").read_text(encoding="utf-8")
    assert "<q>json</q>" not in page and "<q>conversation</q>" in page and "<q>template</q>" in page
    assert "Needs at least two backends" in page


def test_cli(recorded_runs, tmp_path, capsys):
    assert main([str(recorded_runs[1])]) == 0
    assert (recorded_runs[1] / "report.html").is_file()
    assert "report:" in capsys.readouterr().out
    assert (
        main(
            [
                str(recorded_runs[1]),
                "-o",
                str(tmp_path / "r.html"),
                "--bandwidth-gbps",
                "1000",
                "--tflops",
                "100",
            ]
        )
        == 0
    )
    assert main([str(tmp_path / "empty")]) == 2
    assert "no records.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize("random_weights", [True, False])
def test_quality_labels_only_for_random_weights_and_only_on_their_sections(tmp_path, random_weights):
    from tests.reports.records import write_run

    rows = [
        record(
            run_id="r",
            backend=b,
            workload=w,
            kind=w,
            mode=m,
            case="q=0",
            temperature=0.0,
            output_text="x",
            output_token_ids=[1, 2],
            valid_json=False if w == "json" else None,
            clean=False if w == "template" else None,
            prompt_tokens=10,
            e2e_ms=5.0,
        )
        for b in ("hf", "vllm")
        for w, m in (("json", "free"), ("template", "chat_template"))
    ]
    rows += [
        record(
            run_id="r",
            backend=b,
            workload="sweep",
            kind="sweep",
            mode="greedy",
            case="N=64",
            prompt_tokens=64,
            ttft_ms=3.0,
            decode_ms_per_token=1.0,
            output_token_ids=[1],
        )
        for b in ("hf", "vllm")
    ]
    env = {"model": {"label": "m", "random_weights": random_weights, "params": 1000}}
    page = build([write_run(tmp_path / "r", rows, env)], tmp_path / "report.html").read_text()
    sections = {
        m.group(1): m.group(2) for m in re.finditer(r'<section id="([^"]+)"[^>]*>(.*?)</section>', page, re.S)
    }
    labelled = {sid for sid, body in sections.items() if "not a quality figure" in body}
    if random_weights:
        assert "Weights are random" in page
        sweep = next(sid for sid, body in sections.items() if "Workload <q>sweep</q>" in body)
        assert {"agreement", "wl-1", "wl-2"} <= labelled and sweep not in labelled
    else:
        assert "Weights are random" not in page and not labelled
        assert (
            "1000 parameters" not in page and "0 M parameters" in page
        )  # a small real model: what its figures mean
