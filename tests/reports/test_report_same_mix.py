"""The H200's merged load report from hand-made runs (issue 22, "the same work for every backend"): in-process
capacity runs (a Poisson rate, a level the search added, the cache on and off), a server run over HTTP at the
same levels, and hf-cb and hf-server at the HF mix (fewer turns a session, fewer levels). Rows at one level
with the same requests sit side by side as one mix; the HF mix's sessions rows are kept apart, named, and
compared only with each other; its fixed-shape rows, the same requests, join the others'."""

from __future__ import annotations

import pytest

from llm_call_anatomy.reports.assemble import assemble
from llm_call_anatomy.reports.runs import read_runs
from llm_call_anatomy.workloads.load.report.capacity import mix_classes
from tests.reports.records import load_level, load_request, write_run
from tests.reports.test_report_capacity import level as fixed_level

TOKENS, GAP_S = 4, 0.020
HTTP = {"engine": {"base_url": "http://127.0.0.1:8000/v1"}}


def sessions_level(backend: str, c: int, ttft_ms: float, turns: int, searched: str | None = None) -> list:
    """C workers running max(C, 4) users' sessions of ``turns`` turns, each turn's prompt longer by 50
    tokens, as the planner's sessions are."""
    users, free, out = max(c, 4), [0.0] * c, []
    for u in range(users):
        for t in range(turns):
            start = free[u % c]
            times = [start + ttft_ms / 1e3 + i * GAP_S for i in range(TOKENS)]
            out.append(
                load_request(
                    backend,
                    c,
                    u,
                    start,
                    times,
                    workload="ls",
                    mode="sessions",
                    user=u,
                    turn=t + 1,
                    ttft_ms=ttft_ms,
                    decode_ms_per_token=GAP_S * 1e3,
                    e2e_ms=(times[-1] - start) * 1e3,
                    output_token_ids=[1] * TOKENS,
                    prompt_tokens=100 + 50 * t,
                    shared_prefix_tokens=0,
                )
            )
            free[u % c] = times[-1]
    facts = {"requests_planned": len(out), "requests_started": len(out), "searched_for": searched}
    return out + [load_level(backend, c, facts, workload="ls", mode="sessions")]


def a_run(tmp_path, name, backend, levels, turns=3, env=None, searched=(), rate=False):
    rows = []
    for c, ms in levels.items():
        why = "chat" if c in searched else None
        rows += sessions_level(backend, c, ms, turns, why) + fixed_level(
            backend, c, ms, facts={"searched_for": why}
        )
    if rate:  # an open-loop level only the capacity run has
        for r in fixed_level(backend, 2, 150.0):
            r.update(load_concurrency=None, load_rate_rps=8.0, case="rate=8")
            rows.append(r)
    for r in rows:
        r["run_id"] = name
    block = {**(env or {}).pop("engine_block", {})}
    return write_run(tmp_path / name, rows, {"backends": {backend: block}, **(env or {})})


@pytest.fixture
def merged_runs(tmp_path):
    """The committed H200 load report's runs in small: the capacity runs at C=1,2,4 (the search added C=3),
    the server at C=1,2,4, the HF mix at C=1,2 with two turns a session instead of three."""
    return [
        a_run(
            tmp_path, "cap-vllm", "vllm", {1: 100.0, 2: 150.0, 3: 200.0, 4: 300.0}, searched=(3,), rate=True
        ),
        a_run(
            tmp_path,
            "cap-vllm-nocache",
            "vllm",
            {1: 200.0, 2: 300.0, 4: 600.0},
            env={"prefix_caching": False},
        ),
        a_run(
            tmp_path, "serve-vllm", "vllm-server", {1: 110.0, 2: 160.0, 4: 320.0}, env={"engine_block": HTTP}
        ),
        a_run(tmp_path, "cap-hf-cb", "hf-cb", {1: 400.0, 2: 800.0}, turns=2),
        a_run(tmp_path, "serve-hf", "hf-server", {1: 420.0, 2: 850.0}, turns=2, env={"engine_block": HTTP}),
    ]


@pytest.fixture
def merged(merged_runs):
    report = assemble(read_runs(merged_runs))
    sections = {s.data["cap"]["steady"]["workload"].iloc[0]: s for s in report.sections if s.kind == "load"}
    return report, sections


VLLMS = ["vllm (cap-vllm)", "vllm (cap-vllm-nocache)", "vllm-server"]
HF = ["hf-cb", "hf-server"]


def test_the_same_requests_are_one_mix_whatever_the_runs_rates_search_or_transport(merged):
    _, sec = merged
    for w in ("ls", "lf"):
        steady = sec[w].data["cap"]["steady"]
        for case in ("C=1", "C=2", "C=4"):
            mixes = steady[(steady["case"] == case) & steady["backend"].isin(VLLMS)]["mix"]
            assert len(mixes) == 3 and mixes.nunique() == 1, (w, case)
        assert sec[w].data["cap"]["via"]["vllm-server"] == "HTTP"
    sessions = mix_classes(sec["ls"].data["cap"]["steady"])[("ls", "sessions")]
    fixed = mix_classes(sec["lf"].data["cap"]["steady"])[("lf", "S=0")]
    assert sessions == [VLLMS, HF]  # two turns a session: other requests, one group of their own
    assert fixed == [VLLMS + HF]  # the HF mix changes no fixed-shape request


def test_the_hf_mix_sessions_are_named_apart_and_compared_only_with_each_other(merged):
    from llm_call_anatomy.workloads.load.report.capacity_tables import capacity_table

    report, sec = merged
    for w, hf_variant in (("ls", "ls · sessions; other requests: hf-cb, hf-server"), ("lf", "lf · S=0")):
        cap = sec[w].data["cap"]
        rows = capacity_table(cap["capacity"], cap["via"], cap["mix_classes"]).rows
        variants = {(row[1], row[0]) for row in rows}
        assert {v for b, v in variants if b in HF} == {hf_variant}, variants
        assert {v for b, v in variants if b in VLLMS} == {hf_variant.split(";")[0]}, variants
    named = [c.text for c in report.caveats if "ran other requests" in c.text]
    assert [t.split(":")[0] for t in named] == ["ls · sessions C=1", "ls · sessions C=2"]  # none for lf
    assert named[0].startswith("ls · sessions C=1: hf-cb and hf-server (8 requests, mean prompt 125 tokens)")
    assert "than vllm (cap-vllm), vllm (cap-vllm-nocache) and vllm-server (12 requests" in named[0]
    jobs = {j.job: [b for b, _ in j.values] for j in report.jobs if j.job.startswith("Many users")}
    other = "; other requests: hf-cb, hf-server"
    for target in ("chat", "agent", "batch"):
        assert jobs[f"Many users: {target} (ls · sessions)"] == VLLMS
        assert jobs[f"Many users: {target} (ls · sessions{other})"] == HF
        assert jobs[f"Many users: {target} (lf · S=0)"] == VLLMS + HF  # the same requests: side by side
    assert set(jobs["Many users (ls · sessions)"]) == set(VLLMS)  # own peaks, each group apart
    assert set(jobs[f"Many users (ls · sessions{other})"]) == set(HF)
    # throughput at one level within each group: hf-cb against hf-server at C=2, the rest at C=4
    assert set(jobs["Many users: throughput (ls · sessions, C=4)"]) == set(VLLMS)
    assert set(jobs[f"Many users: throughput (ls · sessions, C=2{other})"]) == set(HF)
    assert set(jobs["Many users: throughput (lf · S=0, C=2)"]) == set(VLLMS + HF)


def test_a_level_cut_short_does_not_split_its_backend_from_its_mix():
    """A level one backend stopped early (``seconds``, a deadline) ran fewer requests: it says so, but the
    backend's other levels still are the others' requests; and a backend that shares a whole level with only
    one member of a group joins it (the committed h200-load: vllm-server ran only C=32, which hf-cb stopped
    early, and was put in a group of its own)."""
    import pandas as pd

    rows = [
        {"backend": b, "workload": "lf", "mode": "S=0", "case": c, "mix": mix, "partial": part, "cut": cut}
        for b, c, mix, part, cut in [
            ("hf-cb", "C=1", "a", False, False),
            ("hf-cb", "C=8", "y", True, False),  # stopped early
            ("vllm", "C=1", "a", False, False),
            ("vllm", "C=8", "b", False, False),
            ("hf-server", "C=1", "a", False, False),
            ("hf-server", "C=8", "x", False, True),  # the run stopped inside C=8
            ("vllm-server", "C=8", "b", False, False),  # only the level hf-cb and hf-server did not finish
            ("hf", "C=1", "z", False, False),  # other requests
            ("sglang", "C=1", "a", True, False),  # no whole level: nothing says it is the same
        ]
    ]
    assert mix_classes(pd.DataFrame(rows))[("lf", "S=0")] == [
        ["hf-cb", "vllm", "hf-server", "vllm-server"],
        ["hf"],
        ["sglang"],
    ]


def test_the_readme_load_table_marks_the_cells_of_another_mix(merged_runs, capsys):
    from llm_call_anatomy.workloads.load.report import load_table

    assert load_table.main([str(r) for r in merged_runs]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = {
        cells[0]: dict(zip(head[1:], cells[1:], strict=True))
        for line in lines[2:]
        if line.startswith("| ")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    for case in ("C=1", "C=2"):
        row = rows[f"ls · sessions · {case}"]
        assert all(row[b].endswith("†") for b in HF) and not any(row[b].endswith("†") for b in VLLMS), row
        assert not any(c.endswith("†") for c in rows[f"lf · S=0 · {case}"].values())  # the same requests
    assert "†: other requests than the row's unmarked cells" in out


def test_the_charts_draw_the_other_mix_in_a_panel_of_its_own(merged):
    """A line of the HF mix's sessions beside the built-in mix's would compare them: its points go to a panel
    of their own; the fixed shape's, the same requests, stay in the one panel."""
    from llm_call_anatomy.workloads.load.report.charts import CHARTS

    report, sec = merged

    def panels(spec, out):
        if isinstance(spec, dict):
            if spec.get("backend") and "variant" in spec:
                out.setdefault(spec["variant"], set()).add(spec["backend"])
            for v in spec.values():
                panels(v, out)
        elif isinstance(spec, list):
            for v in spec:
                panels(v, out)
        return out

    for key in ("throughput", "ttft", "pareto", "users"):
        sessions = panels(CHARTS[key][0](sec["ls"].data, report), {})
        assert sessions == {
            "ls · sessions": set(VLLMS),
            "ls · sessions; other requests: hf-cb, hf-server": set(HF),
        }, key
        assert panels(CHARTS[key][0](sec["lf"].data, report), {}) == {"lf · S=0": set(VLLMS + HF)}, key
