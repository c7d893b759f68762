"""Merging runs: labels for a backend that two runs hold, and ``drop`` for a superseded column."""

from __future__ import annotations

import pytest

from llm_call_anatomy.reports.__main__ import main
from llm_call_anatomy.reports.runs import ReportError, read_runs


def test_same_backend_in_two_runs_gets_two_labels(recorded_runs):
    ds = read_runs(recorded_runs)
    eager, sdpa = (r.name for r in recorded_runs)
    assert f"hf ({eager})" in ds.backends and f"hf ({sdpa})" in ds.backends
    assert ds.sources[f"hf ({sdpa})"] == (sdpa, "hf")


def test_drop_leaves_one_runs_backend_out(recorded_runs):
    eager, sdpa = (r.name for r in recorded_runs)
    ds = read_runs(recorded_runs, drop=[(eager, "hf")])
    assert "hf" in ds.backends and "hf-graphs" in ds.backends  # one hf left: no run suffix
    assert set(ds.records.loc[ds.records["backend"] == "hf", "run_id"]) == {sdpa}
    assert len(ds.records[ds.records["run_id"] == eager]) == 8  # hf-graphs' and sglang's rows stay


def test_drop_that_matches_nothing_is_an_error(recorded_runs, tmp_path, capsys):
    with pytest.raises(ReportError, match="no-such-run:hf"):
        read_runs(recorded_runs, drop=[("no-such-run", "hf")])
    out = str(tmp_path / "r.html")
    assert main([*map(str, recorded_runs), "-o", out, "--drop", f"{recorded_runs[0].name}:vllm"]) == 2
    assert "no such records" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(recorded_runs[0]), "--drop", "hf"])  # not RUN:BACKEND
    assert main([*map(str, recorded_runs), "-o", out, "--drop", f"{recorded_runs[0].name}:hf"]) == 0


def test_two_runs_with_one_id_are_told_apart_by_their_folders(recorded_runs, tmp_path):
    import json
    import shutil

    renamed = tmp_path / "renamed-copy"
    shutil.copytree(recorded_runs[0], renamed)  # same run_id inside env.json
    run_id = json.loads((renamed / "env.json").read_text())["run_id"]
    ds = read_runs([recorded_runs[0], renamed, recorded_runs[0]])
    assert list(ds.envs) == [run_id, "renamed-copy", f"{recorded_runs[0].name}'"]


def test_gzipped_records_read_as_the_plain_file(tmp_path):
    """A committed example's large load records travel as records.jsonl.gz: the same records come out."""
    import gzip
    import shutil

    from tests.reports.records import record, write_run

    run = write_run(
        tmp_path / "run",
        [record(backend="hf", workload="sweep", kind="sweep", case=f"N={n}", ttft_ms=n) for n in (64, 256)],
    )
    plain = read_runs([run]).records
    with (run / "records.jsonl").open("rb") as src, gzip.open(run / "records.jsonl.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (run / "records.jsonl").unlink()
    packed = read_runs([run]).records
    assert sorted(packed["ttft_ms"]) == sorted(plain["ttft_ms"]) == [64, 256]


def test_a_cut_runs_backend_block_is_read_from_its_env_folder(tmp_path):
    """A run stopped during a backend's child (a deadline's SIGTERM) has env/<backend>.json but an env.json
    without it: the report still knows the column's engine facts (here: that it was served over HTTP)."""
    import json

    from llm_call_anatomy.reports.analysis.caveats import over_http
    from tests.reports.records import record, write_run

    rows = [
        record(backend=b, workload="sweep", kind="sweep", case="N=64", ttft_ms=5) for b in ("hf-server", "hf")
    ]
    run = write_run(tmp_path / "cut", rows, env={"backends": {"hf": {"engine": {"name": "eager"}}}})
    (run / "env").mkdir()
    (run / "env" / "hf-server.json").write_text(json.dumps({"engine": {"base_url": "http://127.0.0.1:1/v1"}}))
    (run / "env" / "hf.json").write_text(json.dumps({"engine": {"name": "from the folder"}}))
    (run / "env" / "broken.json").write_text("{not json")
    ds = read_runs([run])
    assert over_http(ds.env_of("hf-server").get("engine") or {})
    assert ds.env_of("hf")["engine"]["name"] == "eager"  # env.json's own block wins
    assert "broken" not in ds.envs[run.name]["backends"]
