"""The regression gate and failed requests (issue 44, items 4 and 12): the error rate is a gated figure
(any rise fails), a candidate with failed requests cannot pass, and the gate's input is checked (a
non-finite threshold, a null, string or NaN figure: exit 2 or "not comparable", never a traceback or a
pass)."""

from __future__ import annotations

import json
import math

import pytest

from llm_call_anatomy.reports.__main__ import main
from llm_call_anatomy.reports.analysis.figures import LOWER, Figure
from llm_call_anatomy.reports.gate import FAILURES, NOT_COMPARABLE, REGRESSED, compare, failed
from tests.reports.test_report_gate import gate, run


def with_failures(run_dir, every: int = 3) -> None:
    """Every ``every``-th load request of the run answered 429 (fast failures: the window shrinks, tok/s
    among the served ones looks no worse)."""
    path = run_dir / "records.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    n = 0
    for r in rows:
        if r.get("kind") == "load" and r.get("rep") is not None:
            n += 1
            if n % every == 0:
                r.update(error="HTTP 429: Too Many Requests", output_token_ids=None, output_tokens=None)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_candidate_with_failed_requests_fails_the_gate(tmp_path, capsys):
    base = run(tmp_path, "base")
    cand = run(tmp_path, "cand")
    with_failures(cand)
    code, out = gate(capsys, "--baseline", base, "--candidate", cand)
    assert code == 1, out
    lines = [line for line in out.splitlines() if line.startswith(REGRESSED.upper())]
    assert any("failed requests" in line for line in lines), out
    assert out.rstrip().splitlines()[-1].startswith("FAIL")


def test_failed_runs_cannot_pass_even_against_themselves(tmp_path, capsys):
    base = run(tmp_path, "base")
    with_failures(base)
    code, out = gate(capsys, "--baseline", base, "--candidate", base)
    assert code == 1 and FAILURES.upper() in out, out
    assert main([str(base), "--format", "json"]) == 0  # a summary.json side carries its failures too
    capsys.readouterr()
    assert gate(capsys, "--baseline", base / "summary.json", "--candidate", base / "summary.json")[0] == 1


def test_an_error_rate_rise_regresses_whatever_the_threshold():
    base = Figure("Errors", "failed requests", "hf", 0.0, "%", LOWER, n=8)
    cand = Figure("Errors", "failed requests", "hf", 12.5, "%", LOWER, n=8)
    (d,) = compare([base], [cand], 0.9)
    assert d.verdict == REGRESSED and failed([d])


@pytest.mark.parametrize("threshold", ["nan", "inf", "1e400", "-1"])
def test_a_threshold_that_is_not_a_finite_percentage_is_refused(tmp_path, capsys, threshold):
    base = run(tmp_path, "base")
    with pytest.raises(SystemExit) as exit_:
        main(["--baseline", str(base), "--candidate", str(base), "--threshold-pct", threshold])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and "--threshold-pct" in err[-1], err


@pytest.mark.parametrize("value", [None, "12", True])
def test_a_figure_that_is_not_a_number_is_bad_input(tmp_path, capsys, value):
    base = run(tmp_path, "base")
    assert main([str(base), "--format", "json"]) == 0
    capsys.readouterr()
    doc = json.loads((base / "summary.json").read_text())
    doc["figures"][0]["value"] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    code = main(["--baseline", str(bad), "--candidate", str(base)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "not a number" in err[0], err


def test_a_nan_figure_is_not_comparable_and_fails():
    base = Figure("job", "TTFT", "hf", 100.0, "ms", LOWER, n=10)
    for cand in (Figure("job", "TTFT", "hf", math.nan, "ms", LOWER, n=10),):
        (d,) = compare([base], [cand], 0.05)
        assert d.verdict == NOT_COMPARABLE and failed([d]) and not failed([d], ignore_missing=True)
    (d,) = compare([cand], [base], 0.05)
    assert d.verdict == NOT_COMPARABLE
