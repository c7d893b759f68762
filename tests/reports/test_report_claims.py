"""The claims machinery (registry, verdicts) and the seed's claims checked on the committed H200 runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_call_anatomy.reports import fmt, model
from llm_call_anatomy.reports.analysis import claims
from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from tests.conftest import lab_example

RUNS = ("h200-hf", "h200-vllm", "h200-sglang", "h200-hf-graphs")  # the committed page's columns, in its order


@pytest.fixture(scope="module")
def h200_dir() -> Path:
    return lab_example("h200-qwen3-8b-shape")


@pytest.fixture(scope="module")
def h200(h200_dir):
    copy_gbps = json.loads((h200_dir / "bandwidth-h200.json").read_text())["copy_gbps_median"]
    return assemble(read_runs([h200_dir / n for n in RUNS]), copy_gbps=copy_gbps)


def test_verdicts_are_a_closed_set():
    assert claims.holds("x").word == "holds"
    assert claims.not_measurable("x").word == "not measurable here"
    with pytest.raises(ValueError, match="unknown verdict"):
        model.Verdict("probably", "x")


def test_registering_a_claim(h200, monkeypatch):
    monkeypatch.setattr(claims, "_CHECKS", list(claims._CHECKS))

    @claims.claim
    def always(report):
        return model.Claim("test", "a claim", "1", claims.holds("because"), {"hf": "1"})

    @claims.claim
    def silent(report):
        return None

    out = claims.check_all(h200)
    assert out[-1].statement == "a claim" and all(c.statement != "silent" for c in out)
    assert len(out) == len(h200.claims) + 1


def test_every_seed_claim_is_listed_with_a_verdict(h200):
    seed = [c for c in h200.claims if c.source == "seed article"]
    assert (
        len(seed) == 14
    )  # every seed claim, the three token figures too (the runs' env.json has the tokenizer facts)
    assert all(c.verdict.word in model.VERDICTS and c.verdict.reason for c in seed)
    by = {c.statement: c for c in seed}
    # random weights: attention cannot be judged; the mask held on every backend (n as recorded)
    attention = next(c for c in seed if "special tokens" in c.statement)
    assert attention.verdict.word == "not measurable here" and "random" in attention.verdict.reason
    mask = next(c for c in seed if "grammar mask" in c.statement)
    assert mask.verdict.word == "holds" and mask.here["hf"] == "10 of 10" and mask.here["vllm"] == "80 of 80"
    assert len(by) == len(seed)


def test_our_figures_come_from_the_runs(h200):
    lengths = next(s for s in h200.sections if s.kind == "sweep").data["lengths"]
    ratio = next(c for c in h200.claims if "494" in c.statement)
    for backend in ("hf", "vllm", "sglang", "hf-graphs"):
        row = lengths[(lengths.backend == backend) & (lengths.N == 1024)].iloc[0]
        assert ratio.here[backend] == fmt.times(row.tps_ratio)
    one_step = next(c for c in h200.claims if "one decode step" in c.statement)
    assert one_step.verdict.word == "setup-specific" and "hf" in one_step.verdict.reason.split(";")[0]


def test_hf_graphs_is_flagged_by_what_differs_in_env_json(h200, h200_dir):
    """hf-graphs ran alone, hours after the others, from another commit: the first screen says what differs
    (env.json's day, machine and commit, read here from the runs) and nothing that does not."""
    envs = {n: json.loads((h200_dir / n / "env.json").read_text()) for n in RUNS}
    hosts = {
        n: {s["gpu_host"]["hostname"] for b in e["backends"].values() for s in b["starts"]}
        for n, e in envs.items()
    }
    commit = envs["h200-hf-graphs"]["git_commit"]
    assert {envs[n]["git_commit"] for n in RUNS[:3]} == {envs["h200-hf"]["git_commit"]} != {commit}
    assert (
        len({e["started"][:10] for e in envs.values()}) == 1 and len(set.union(*hosts.values())) == 1
    )  # same day, same host
    ranked = [j for j in h200.jobs if j.latency and "hf-graphs" in dict(j.values)]
    assert ranked
    for job in ranked:
        assert f"from another run than the rest: hf-graphs (commit {commit[:12]})" in job.caution
        assert (
            "day " not in job.caution
            and "machine " not in job.caution
            and "shared the GPU host" not in job.caution
        )
    alone = envs["h200-hf-graphs"]["backends"]["hf-graphs"]["starts"][0]["gpu_host"]
    assert (
        alone["other_processes"] == 0
        and alone["declared"] is None
        and all(p["ours"] for p in alone["gpu_processes"])
    )


def test_a_backend_without_a_prefix_cache_is_left_out_of_the_reuse_claims(h200):
    skipped = h200.ds.records.query(
        "backend == 'hf-graphs' and workload == 'conversation' and mode == 'cached'"
    )
    assert len(skipped) == 1 and skipped.skipped.notna().all()
    for start in ("Prefix reuse cuts", "Summed TTFT over the conversation"):
        claim = next(c for c in h200.claims if c.statement.startswith(start))
        assert set(claim.here) == {"hf", "vllm", "sglang"}
    flat = next(c for c in h200.claims if "flat in the prompt length" in c.statement)
    assert set(flat.here) == {"hf", "vllm", "sglang", "hf-graphs"}


def test_reuse_runs_to_the_end_where_the_template_extends_every_prompt():
    smollm2 = lab_example("h200-smollm2")
    report = assemble(read_runs([smollm2 / "h200-smollm2-hf", smollm2 / "h200-smollm2-vllm"]))
    claim = next(c for c in claims.check_all(report) if c.statement.startswith("Prefix reuse stops"))
    assert claim.verdict.word == "setup-specific" and "extension of the previous one" in claim.verdict.reason
    assert claim.here == {"hf": "0 tokens lost on every turn", "vllm": "0 tokens lost on every turn"}
