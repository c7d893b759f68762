"""The H200 sitting script still to run (lab/h200/capacity_sitting.sh, sessions a to f: what
issues #21 and #22 still owe): valid bash, each queued study's compare.py flags parse and its ``--load``
override validates on the built-in load workloads (a typo would otherwise cost the device minutes of
everything queued before it); the sessions run caching on and off for each engine, with rates and the
search, hf-cb at the HF mix the committed hf-server run used, session a serves vllm-server's whole
load before the in-process runs, session d runs vllm-server and sglang-server at the in-process capacity
runs' line, and session f runs e's engine resumes with d's servers; every queue uses the one queue library,
whose deadline bounds every study and whose poll copies what is done."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from llm_call_anatomy.harness.cli import parser
from llm_call_anatomy.workloads import overrides
from llm_call_anatomy.workloads.load.spec import parse_load
from llm_call_anatomy.workloads.reader import read_workload_file

ROOT = Path(__file__).resolve().parents[2]
SERVING = ROOT / "lab" / "examples" / "h200-serving"  # the committed server runs
HF_SERVER_RUN, SGLANG_SERVER_RUN = (
    SERVING / f"h200-serve-{b}" / "env.json" for b in ("hf-server", "sglang-server")
)
CAPACITY = ROOT / "lab" / "h200" / "capacity_sitting.sh"
# lab/capacity-sessions.md, "The HF mix"
HF_MIX = "levels=1:8:32,users=32,max_turns=2,rates=,search_levels=0"


def studies(script: Path) -> list[tuple[str, str, list[str]]]:
    """(name, backend, flags) of each ``study TIMEOUT NAME BACKEND FLAGS`` line (continuation lines
    joined)."""
    return studies_in(script.read_text())


def studies_in(text: str) -> list[tuple[str, str, list[str]]]:
    text = text.replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        words = shlex.split(line.strip(), comments=True)
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # OVERHEAD=1, LCA_HF_CB=...: its variables
            words = words[1:]
        words = words[:-1] if words[-1:] in ([";;"], [";&"]) else words  # a case branch's last line
        if words[:1] == ["study"] and len(words) > 3 and words[1].isdigit():
            out.append((words[2], words[3], words[4:]))
    return out


def _queue_lines(script: Path) -> list[str]:
    body = script.read_text().replace("\\\n", " ").split("queue() {", 1)[1].split("\n}", 1)[0]
    return [line.strip() for line in body.splitlines() if line.strip()]


SERVERS = {"vllm-server": "/tmp/py-vllm", "sglang-server": "/tmp/py-sgl"}  # their interpreters (install.sh)


def test_the_capacity_sittings_cover_each_engine_with_caching_on_and_off() -> None:
    """Every study line parses and its --load validates; the capacity runs (``h200-cap-*``) are each engine in
    process with caching on and off and the two servers with it on; a server runs under its bundle's
    interpreter."""
    subprocess.run(["bash", "-n", str(CAPACITY)], check=True)
    found = studies(CAPACITY)
    builtin = read_workload_file(ROOT / "workloads" / "load" / "builtin.yaml")
    for name, backend, flags in found:
        args = parser("compare.py").parse_args(["--backend", backend, *flags])
        assert args.workloads == "load" and args.load, name
        specs = overrides.apply_fields(builtin, "--load", parse_load(args.load))
        if backend in SERVERS:
            assert args.python == [f"{backend}={SERVERS[backend]}"], name
        if not name.startswith("h200-cap-"):  # session a's vllm-server, the built-in levels: tested below
            continue
        if backend == "hf-cb":  # the HF mix, as the committed hf-server run's: their rows compare
            assert args.load == HF_MIX, name
            assert all(s.search_levels == 0 and not s.rates for s in specs), name
        else:
            assert all(s.search_levels > 0 and s.rates for s in specs), name
    runs = {
        (backend, "--no-prefix-caching" in flags)
        for name, backend, flags in found
        if name.startswith("h200-cap-")
    }
    assert runs == {(b, off) for b in ("vllm", "sglang", "hf-cb") for off in (False, True)} | {
        (b, False) for b in SERVERS
    }
    for session in "abcdefg":  # a run's name once a session (session e resumes b's runs under their names)
        names = [name for name, _, _ in studies_in(_session(session))]
        assert len(set(names)) == len(names), session
    hf_server = json.loads(HF_SERVER_RUN.read_text())["argv"]
    assert hf_server[hf_server.index("--load") + 1] == HF_MIX


def _branch(name: str) -> str:
    """The queue's branch for session ``name`` as written (continuation lines joined)."""
    return CAPACITY.read_text().replace("\\\n", " ").split(f"    {name})", 1)[1].split(";;", 1)[0]


def _functions() -> dict[str, str]:
    """The run functions queue() defines (``  name() {`` ... ``  }``), each body as written."""
    text = CAPACITY.read_text().replace("\\\n", " ")
    return dict(re.findall(r"^  (\w+)\(\) \{(.*?)^  \}", text, flags=re.M | re.S))


def _session(name: str) -> str:
    """The queue's branch for session ``name`` with each call of a queue function replaced by its body, one
    statement a line, so that its study lines read in the order they run."""
    functions = _functions()
    words = re.split(r"(\w+)", _branch(name).replace(";", "\n"))
    return "".join(functions[w] + "\n" if w in functions else w for w in words)


def test_session_d_runs_the_servers_at_the_in_process_capacity_runs_line() -> None:
    """Session d: vllm-server, then (once SGLang's install, started in parallel, is done) sglang-server, each
    with the flags of its engine's in-process capacity run with caching on (session a), so that every level
    both run is the same requests (tests/workloads/test_load_same_mix.py), plus its bundle's interpreter."""
    d, a = (studies_in(_session(x)) for x in ("d", "a"))
    assert [(name, backend) for name, backend, _ in d] == [
        ("h200-cap-vllm-server", "vllm-server"),
        ("h200-cap-sglang-server", "sglang-server"),
    ]
    in_process = {backend: flags for _, backend, flags in a}
    for _, backend, flags in d:
        engine = backend.removesuffix("-server")
        python = ["--python", f"{backend}={SERVERS[backend]}"]
        assert flags == in_process[engine] + python, backend
        args = parser("compare.py").parse_args(["--backend", backend, *flags])
        assert "--no-prefix-caching" not in flags and args.load == "rates=8:32,search_levels=1"
    body = _session("d")
    assert (
        body.index("h200-cap-vllm-server")
        < body.index("sglang.installed")
        < body.index("h200-cap-sglang-server")
    )
    text = CAPACITY.read_text()
    assert 'if [ "$SESSION" != c ]; then  # SGLang installs' in text  # session d installs both bundles
    usage = subprocess.run(["bash", str(CAPACITY), "start", "h"], capture_output=True, text=True, cwd=ROOT)
    assert usage.returncode == 2 and "start a|b|c|d|e|f|g" in usage.stdout


def test_sessions_c_and_e_resume_the_committed_cut_runs_with_their_own_lines() -> None:
    """Session c's hf-cb run (caching off) and session b's three runs were cut by their deadlines: the queue
    puts each committed run back (``from_example``) and resumes it. ``--resume`` refuses other settings, so
    each resuming line must be the run's own, and the folder it names must be committed."""
    text = CAPACITY.read_text()
    examples = re.findall(r"from_example (\S+)", text)
    assert len(examples) == 4, "sessions c and e no longer resume the committed runs"
    resumed = {name: (backend, flags) for name, backend, flags in studies(CAPACITY) if "--resume" in flags}
    assert sorted(resumed) == sorted(Path(e).name for e in examples)
    for example in examples:
        run = ROOT / "lab" / "examples" / example
        assert (run / "run.json").is_file() and (run / "records.jsonl.gz").is_file(), example
        backend, flags = resumed[run.name]
        argv = json.loads((run / "env.json").read_text())["argv"]
        # what study.sh's caller gave (study.sh adds the rest); a run resumed once records its --resume
        committed = [f for f in argv[argv.index("--workloads") :] if f != "--resume"]
        assert [f for f in flags if f != "--resume"] == committed, example
        assert argv[argv.index("--backend") + 1] == backend, example
    e = _session("e")  # b's runs in b's order, each put back before its resume, then c's line
    order = ["h200-cap-vllm-nocache", "h200-cap-sglang-nocache", "h200-cap-hf-cb"]
    assert [name for name, _, _ in studies_in(e)] == order + ["h200-cap-hf-cb-nocache"]
    assert _branch("e").rstrip().endswith("session_c")
    assert _branch("b").rstrip().endswith("session_c") and _branch("c").strip() == "session_c"
    _put_back_before_resumed(e, order)


def test_session_f_runs_es_engine_resumes_with_ds_servers_in_one_sitting() -> None:
    """Session f: vLLM's resume (caching off), then vllm-server (its compile cache warm from the resume),
    then, once SGLang is installed, sglang-server and SGLang's resume, then hf-cb's two resumes (the ones a
    deadline cuts, resumed by e's line later): each run with the very line of the session it comes from, and
    every run of d and e in it once."""
    f, d, e = (studies_in(_session(x)) for x in ("f", "d", "e"))
    assert [name for name, _, _ in f] == [
        "h200-cap-vllm-nocache",
        "h200-cap-vllm-server",
        "h200-cap-sglang-server",
        "h200-cap-sglang-nocache",
        "h200-cap-hf-cb",
        "h200-cap-hf-cb-nocache",
    ]
    assert sorted(f) == sorted(d + e)
    body = _session("f")
    assert body.index("h200-cap-vllm-server") < body.index("sglang.installed") < body.index("h200-cap-sglang")
    _put_back_before_resumed(body, ["h200-cap-vllm-nocache", "h200-cap-sglang-nocache", "h200-cap-hf-cb"])


def test_session_g_runs_what_f_left_hf_cb_first_then_sglang_and_a_third_server_start() -> None:
    """Session g: the runs f left (hf-cb's two resumes, SGLang's resume with caching off), each with the line
    of the session it comes from and put back before it; hf-cb first (it needs no SGLang, so it runs while
    SGLang's parts are staged), SGLang's runs only once SGLang is installed; then sglang-server's C = 128
    levels at its capacity run's line but for the levels (the same requests at C = 128), under a name the
    poll copies."""
    g, e, d = (studies_in(_session(x)) for x in ("g", "e", "d"))
    assert [name for name, _, _ in g] == [
        "h200-cap-hf-cb",
        "h200-cap-hf-cb-nocache",
        "h200-cap-sglang-nocache",
        "h200-starts-sglang-server",
    ]
    assert sorted(g[:3]) == sorted(run for run in e if run[0] != "h200-cap-vllm-nocache")  # f made it whole
    body = _session("g")
    hf_cb, installed = body.index("h200-cap-hf-cb-nocache "), body.index("sglang.installed")
    assert hf_cb < installed < body.index("h200-cap-sglang")
    _put_back_before_resumed(body, ["h200-cap-hf-cb", "h200-cap-hf-cb-nocache", "h200-cap-sglang-nocache"])
    third, server = g[3], next(run for run in d if run[1] == "sglang-server")
    assert third[1] == server[1] == "sglang-server"
    load = dict(kv.split("=", 1) for kv in third[2][third[2].index("--load") + 1].split(","))
    line = dict(kv.split("=", 1) for kv in server[2][server[2].index("--load") + 1].split(","))
    assert load == {"levels": "128", "rates": "", "search_levels": "0"} and "levels" not in line
    assert _without_load(third[2]) == _without_load(server[2])
    assert "h200-starts-*.tgz" in CAPACITY.read_text()  # the poll copies its archive


def _without_load(flags: list[str]) -> list[str]:
    """``flags`` with the value of ``--load`` left out."""
    return [f for i, f in enumerate(flags) if i == 0 or flags[i - 1] != "--load"]


def _put_back_before_resumed(body: str, names: list[str]) -> None:
    """Each of ``names`` is put back from its committed example before the study line that resumes it."""
    for name in names:
        put_back = re.search(rf"from_example h200-capacity/{name}\s", body)
        study_at = re.search(rf"study \d+ {name} ", body)
        assert put_back and study_at and put_back.start() < study_at.start(), name


SITTINGS = ("anatomy_sitting.sh", "brackets_sitting.sh", "capacity_sitting.sh", "trace_sitting.sh")
# two_gpus_sitting.sh (#25, blocked) and serving_proof.sh predate the library
QUEUE_LIB = ROOT / "lab" / "h200" / "queue_lib.sh"


@pytest.mark.parametrize("script", SITTINGS)
def test_every_queue_uses_the_one_queue_library(script: str) -> None:
    """The helpers every sitting needs are written once (lab/h200/queue_lib.sh), not per script, the start
    and poll arguments' handling too (``sitting_args``; what each script queues: test_sitting_queues.py)."""
    text = (ROOT / "lab" / "h200" / script).read_text()
    assert "source lab/h200/queue_lib.sh" in text
    assert not re.search(r"^\s*(nparts|staged|install_bundle|study|sitting_\w+)\(\) \{", text, re.M)
    assert re.search(rf"^sitting_args {script} ", text, re.M)
    assert '"$mode"' not in text and "usage:" not in text.split("sitting_args", 1)[1]


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


def test_session_a_serves_vllm_server_whole_before_the_in_process_runs() -> None:
    """Session a: the vLLM install, then vllm-server's whole built-in load (the planned levels only, as the
    committed sglang-server run's: search off), benchmark 4 once SGLang's install is done too, then vLLM and
    SGLang in process."""
    from benchmarks import load_client

    subprocess.run(["bash", "-n", str(CAPACITY)], check=True)
    body = _session("a")
    names = [name for name, _, _ in studies_in(body)]
    assert names == ["h200-serve-vllm-server", "h200-cap-vllm", "h200-cap-sglang"]
    server = studies_in(body)[0][2]
    args = parser("compare.py").parse_args(["--backend", "vllm-server", *server])
    builtin = read_workload_file(ROOT / "workloads" / "load" / "builtin.yaml")
    specs = overrides.apply_fields(builtin, "--load", parse_load(args.load))
    assert all(s.search_levels == 0 for s in specs) and args.python == ["vllm-server=/tmp/py-vllm"]
    sglang_run = json.loads(SGLANG_SERVER_RUN.read_text())["argv"]
    assert sglang_run[sglang_run.index("--load") + 1] == args.load  # the servers' rows are the same requests
    # benchmark 4 once both installs are done (alone on the host's CPUs), before the in-process runs
    order = [body.index(k) for k in ("h200-serve-vllm-server", "sglang.installed", "benchmarks.load_client")]
    assert order == sorted(order) and order[-1] < body.index("h200-cap-vllm ")
    bench = shlex.split(next(line for line in body.splitlines() if "benchmarks.load_client" in line))
    args4 = load_client.parse_args(bench[bench.index("benchmarks.load_client") + 1 : bench.index("|")])
    assert min(args4.levels) <= 384 and max(args4.levels) >= 512 and args4.server_procs == 8
    assert "bounded" in bench[: bench.index("benchmarks.load_client")]


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


def test_a_poll_on_a_machine_without_the_queue_says_so_at_once(tmp_path: Path) -> None:
    """A call that comes more than 30 s after the one before gets a fresh machine: the queue and its results
    went with the old one. The poll says so and returns 3 at once instead of waiting its S seconds (session
    g's second poll waited 540 s of device time on a bare machine)."""
    results, out = tmp_path / "results", tmp_path / "out"
    results.mkdir()
    started = time.monotonic()
    lost = _bash('sitting_poll 60 "h200-cap-*.tgz"', R=str(results), OUT=str(out))
    assert lost.returncode == 3 and "no queue on this machine" in lost.stdout
    assert time.monotonic() - started < 30 and not out.exists()
    script = subprocess.run(
        ["bash", str(CAPACITY), "poll", "60"], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "R": str(results), "OUT": str(out)},
    )  # fmt: skip
    assert script.returncode == 3 and "no queue on this machine" in script.stdout
