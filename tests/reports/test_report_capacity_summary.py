"""The Load summary's throughput row (workloads/load/report/capacity_summary.py, throughput_verdict): a winner
only where the gap beats the spread within the run (the bootstrap intervals) and between engine starts,
judged by reports.stats.rank and worded by reports.stats.verdict as every ranked figure is."""

from __future__ import annotations

from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.reports.records import write_run
from tests.reports.test_report_capacity import KNEE, level


def _throughput_job(runs):
    report = assemble(read_runs(runs))
    return next(j for j in report.jobs if j.job.startswith("Many users: throughput"))


def test_a_throughput_winner_needs_its_lead_in_every_one_of_two_engine_starts(tmp_path):
    """The study's rule on the load rows: intervals apart within the run are not enough; with one engine
    start each the spread between starts is unmeasured (not decided), with two each the faster wins only
    where every start of it is ahead; a second start that swaps the order leaves it undecided."""
    fast = [r for c, ms in KNEE.items() for r in level("vllm", c, ms)]
    slow = [r for c, ms in KNEE.items() for r in level("sglang", c, ms * 3)]  # TTFT 3x: fewer tok/s
    one = _throughput_job([write_run(tmp_path / "one", fast + slow)])
    assert one.best is None
    assert "vllm leads by" in one.verdict and "not decided: one engine start of vllm, sglang" in one.verdict

    def again(rows):
        return [{**r, "engine_start": 1} for r in rows]

    two = _throughput_job([write_run(tmp_path / "two", fast + slow + again(fast) + again(slow))])
    assert two.best == "vllm" and two.verdict.startswith("by ") and "over sglang" in two.verdict
    as_slow = [r for c, ms in KNEE.items() for r in level("vllm", c, ms * 3)]  # vllm's start 1: sglang's pace
    mixed = _throughput_job([write_run(tmp_path / "mixed", fast + slow + again(as_slow) + again(slow))])
    assert mixed.best is None and mixed.verdict.startswith("within")  # vllm's slow start: no lead to name


def _row(backend, tps, lo, hi, starts):
    return {
        "backend": backend,
        "output_tps": tps,
        "output_tps_lo": lo,
        "output_tps_hi": hi,
        "per_start_tps": starts,
    }


def test_the_throughput_verdict_is_the_ranked_figures_rule_and_words():
    """Between engine starts the throughput row is judged by reports.stats.rank and worded by
    reports.stats.verdict, like every latency row: a second copy of the rule would drift from these."""
    from llm_call_anatomy.reports.stats import StartStat, rank, verdict
    from llm_call_anatomy.workloads.load.report.capacity_summary import throughput_verdict

    assert throughput_verdict(_row("a", 120, 110, 130, [120]), _row("b", 100, 90, 115, [100])) == (
        None,
        "within the intervals: not ranked",
    )
    one = throughput_verdict(_row("a", 120, 118, 122, [120]), _row("b", 100, 98, 102, [100]))
    assert one == (
        None,
        "a leads by 20% over b, beyond the intervals; not decided: one engine start of a, b, "
        "so the spread across starts is unmeasured",
    )
    # every start of a ahead, but a's starts 40% apart: the 20% gap is inside the spread between starts
    wide = throughput_verdict(_row("a", 120, 118, 122, [100, 140]), _row("b", 100, 98, 102, [99, 100]))
    assert wide[0] is None and "inside the spread between engine starts" in wide[1]
    # the starts' ranges are narrow, but one start of b is ahead of one of a's: no lead to name
    swapped = throughput_verdict(_row("a", 120, 118, 122, [101, 103]), _row("b", 100, 98, 102, [101, 102]))
    assert swapped[0] is None and "engine starts overlap" in swapped[1]
    won = throughput_verdict(_row("a", 120, 118, 122, [119, 121]), _row("b", 100, 98, 102, [99, 101]))
    as_ranked = verdict(
        rank(
            {
                "a": StartStat(120, None, 1 / 120, 2, 2, (119, 121)),
                "b": StartStat(100, None, 0.01, 2, 2, (99, 101)),
            },
            higher=True,
        ),
        "the intervals",
    )
    assert won == as_ranked and won[0] == "a" and won[1].startswith("by 20% over b")
