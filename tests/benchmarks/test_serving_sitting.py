"""The H200 sitting scripts still to run (benchmarks/h200/serving_sitting3.sh for issue #21,
capacity_sitting.sh for #22): valid bash, each queued study's compare.py flags parse and its ``--load``
override validates on the built-in load workloads (a typo would otherwise cost the device minutes of
everything queued before it); the serving queue runs in its priority order and its benchmark 4 line
parses; the capacity sittings run caching on and off for each engine, with rates and the search, and hf-
cb at the HF mix hf-server runs too; every queue uses the one queue library, whose deadline bounds every
study and whose poll copies what is done."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.cli import parser
from workloads import overrides
from workloads.load.spec import parse_load
from workloads.reader import read_workload_file

ROOT = Path(__file__).resolve().parents[2]
SCRIPT3 = ROOT / "benchmarks" / "h200" / "serving_sitting3.sh"
CAPACITY = ROOT / "benchmarks" / "h200" / "capacity_sitting.sh"
# docs/capacity.md, "The HF mix"
HF_MIX = "levels=1:8:32,users=32,max_turns=2,rates=,search_levels=0"


def studies(script: Path) -> list[tuple[str, str, list[str]]]:
    """(name, backend, flags) of each ``study TIMEOUT NAME BACKEND FLAGS`` line (continuation lines
    joined)."""
    text = script.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        words = shlex.split(line.strip(), comments=True)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # OVERHEAD=1, LCA_HF_CB=...: its variables
            words = words[1:]
        if words[:1] == ["study"] and len(words) > 3 and words[1].isdigit():
            out.append((words[2], words[3], words[4:]))
    return out


def _queue_lines(script: Path) -> list[str]:
    body = script.read_text().replace("\\\n", " ").split("queue() {", 1)[1].split("\n}", 1)[0]
    return [line.strip() for line in body.splitlines() if line.strip()]


def test_the_capacity_sittings_cover_each_engine_with_caching_on_and_off() -> None:
    subprocess.run(["bash", "-n", str(CAPACITY)], check=True)
    found = studies(CAPACITY)
    runs = {(backend, "--no-prefix-caching" in flags) for _, backend, flags in found}
    assert runs == {(b, off) for b in ("vllm", "sglang", "hf-cb") for off in (False, True)}
    builtin = read_workload_file(ROOT / "workloads" / "builtin" / "load.yaml")
    for name, backend, flags in found:
        args = parser("compare.py").parse_args(["--backend", backend, *flags])
        assert args.workloads == "load" and args.load, name
        specs = overrides.apply_fields(builtin, "--load", parse_load(args.load))
        if backend == "hf-cb":  # the HF mix, as hf-server's line in serving_sitting3.sh: their rows compare
            assert args.load == HF_MIX, name
            assert all(s.search_levels == 0 and not s.rates for s in specs), name
        else:
            assert all(s.search_levels > 0 and s.rates for s in specs), name
    assert len({name for name, _, _ in found}) == len(found)
    hf_server = [flags for _, backend, flags in studies(SCRIPT3) if backend == "hf-server"][0]
    assert hf_server[hf_server.index("--load") + 1] == HF_MIX


SITTINGS = ("serving_sitting3.sh", "capacity_sitting.sh")
QUEUE_LIB = ROOT / "benchmarks" / "h200" / "queue_lib.sh"


@pytest.mark.parametrize("script", SITTINGS)
def test_every_queue_uses_the_one_queue_library(script: str) -> None:
    """The helpers every sitting needs are written once (benchmarks/h200/queue_lib.sh), not per script."""
    text = (ROOT / "benchmarks" / "h200" / script).read_text()
    assert "source benchmarks/h200/queue_lib.sh" in text
    assert not re.search(r"^\s*(nparts|staged|install_bundle|study)\(\) \{", text, re.M)


def test_a_queue_waits_until_every_part_is_staged() -> None:
    """``staged`` (as ``stage.sh`` leaves the parts: ``cNN.done`` for a bundle, ``mNN.done`` for a model)
    is true only once every part is there: a vLLM bundle counts its parts from ``c01/NPARTS``, an SGLang
    one from its SHA256SUMS' part lines, a model from the count it is given. A version of it waited on
    ``c01.done`` for the model, which ``stage.sh`` never writes for ``m01``."""
    functions = QUEUE_LIB.read_text()
    tag = f"lca-test-{os.getpid()}"
    stages = {name: Path(f"/tmp/stage-{tag}-{name}") for name in ("vllm", "sglang", "model")}
    try:
        for d in stages.values():
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
        (stages["vllm"] / "c01").mkdir()
        (stages["vllm"] / "c01" / "NPARTS").write_text("2\n")
        (stages["sglang"] / "c01").mkdir()
        (stages["sglang"] / "c01" / "SHA256SUMS").write_text(
            "part aa c01/x\npart bb c02/y\npart cc c03/z\ncore x\n"
        )

        def staged(name: str, *parts: str, count: str = "") -> bool:
            for p in parts:
                (stages[name] / f"{p}.done").touch()
            call = f"staged {tag}-{name} {count}".strip()
            return subprocess.run(["bash", "-c", functions + "\n" + call]).returncode == 0

        assert not staged("vllm", "c02") and staged("vllm", "c01")  # 2 of NPARTS=2, c01 among them
        assert not staged("sglang", "c01", "c02") and staged("sglang", "c03")  # 3 part lines
        assert not staged("model", count="1") and staged("model", "m01", count="1")
    finally:
        for d in stages.values():
            shutil.rmtree(d, ignore_errors=True)


def test_the_third_sitting_serves_every_server_in_its_order_within_the_deadline() -> None:
    from benchmarks import load_client

    subprocess.run(["bash", "-n", str(SCRIPT3)], check=True)
    found = studies(SCRIPT3)
    assert [backend for _, backend, _ in found] == ["sglang-server", "hf-server"]
    builtin = read_workload_file(ROOT / "workloads" / "builtin" / "load.yaml")
    for name, backend, flags in found:
        args = parser("compare.py").parse_args(["--backend", backend, *flags])
        assert args.workloads == "load" and args.load, name
        specs = overrides.apply_fields(builtin, "--load", parse_load(args.load))
        assert all(s.search_levels == 0 for s in specs), name  # the planned levels only: the search is #22's
    assert found[1][2][found[1][2].index("--load") + 1] == HF_MIX  # hf-server at the mix hf-cb runs
    lines = _queue_lines(SCRIPT3)
    keys = ("install_bundle vllm", "sglang.installed ]", "serving_proof.sh run sglang")
    keys += ("h200-serve-sglang-server", "benchmarks.load_client", "h200-serve-hf-server")
    order = [next(i for i, line in enumerate(lines) if key in line) for key in keys]
    assert order == sorted(order)
    proof = next(line for line in lines if "serving_proof.sh run sglang" in line)
    assert proof.startswith("bounded ")  # the proof too ends before the deadline (or does not start)
    bench = shlex.split(next(line for line in lines if "benchmarks.load_client" in line).split("|")[0])
    args = load_client.parse_args(bench[bench.index("benchmarks.load_client") + 1 :])
    assert min(args.levels) <= 128 and max(args.levels) >= 512


def _bash(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"source {QUEUE_LIB}\n{script}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
    )


def test_bound_and_study_keep_every_study_inside_the_deadline(tmp_path: Path) -> None:
    """A study's limit is its own or what is left before the sitting's deadline (less 30 s for its archive);
    one that would have under 90 s is not started (it would leave no archive: the machine goes first)."""
    now = "$(date +%s)"
    assert int(_bash("bound 500").stdout) == 500  # no deadline: the study's own limit
    left = int(_bash(f"DEADLINE=$(( {now} + 200 )); bound 500").stdout)
    assert 165 <= left <= 170
    assert int(_bash(f"DEADLINE=$(( {now} + 900 )); bound 500").stdout) == 500
    skipped = _bash(f"DEADLINE=$(( {now} + 100 )); study 500 h200-x vllm --workloads load")
    assert "h200-x not started" in skipped.stdout and "commit:" not in skipped.stdout
    # a command bounded the same way (the proof, benchmark 4): run under what is left, or not started
    ran = _bash(f'DEADLINE=$(( {now} + 200 )); bounded 500 probe bash -c "echo ran"')
    assert ran.returncode == 0 and ran.stdout.strip() == "ran"
    late = _bash(f'DEADLINE=$(( {now} + 100 )); bounded 500 probe bash -c "echo ran"')
    assert late.returncode == 0 and "probe not started:" in late.stdout
    assert "ran" not in late.stdout.splitlines()  # the command did not run


def test_a_poll_copies_what_is_done_and_the_queue_log(tmp_path: Path) -> None:
    results, out = tmp_path / "results", tmp_path / "out"
    results.mkdir()
    for name in ("queue.log", "queue.done", "h200-cap-vllm.tgz", "proof-vllm.tgz", "other.txt"):
        (results / name).write_text("== 14:00:00 vllm installed\n" if name == "queue.log" else "x")
    done = _bash('sitting_poll 60 "h200-cap-*.tgz" "proof-*.tgz"', R=str(results), OUT=str(out))
    assert done.returncode == 0 and "vllm installed" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == ["h200-cap-vllm.tgz", "proof-vllm.tgz", "queue.log"]
