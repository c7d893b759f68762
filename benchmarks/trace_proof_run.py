"""The trace proof's replays (``python -m benchmarks.trace_proof run``): one vLLM OpenAI server, started once
with the harness's own flags (``VLLMServerBackend.server_argv``, as ``--backend vllm-server`` starts it), and
the window replayed three times against it, in this order:

1. ``vllm-bench-1``: ``vllm bench serve --dataset-name timed_trace`` on ``DIR/trace.jsonl`` (its own timing:
   ``--self-timed``, the default for that dataset; ``--ready-check-timeout-sec 0``, so its one-prompt test
   run does not put the first prompt into the prefix cache; greedy, EOS ignored as the dataset sets it);
2. ``harness``: ``compare.py --backend openai --base-url ... --workload-file DIR/workload.yaml`` (the trace
   kind's open loop, its lean client, its /metrics sampling, as a study runs it);
3. ``vllm-bench-2``: the bench again — the two bench runs' difference is the noise the harness is judged by.

Before each replay the server's prefix cache is reset (``POST /reset_prefix_cache``; the server runs with
``VLLM_SERVER_DEV_MODE=1``), and its ``/metrics`` page is kept before and after (``metrics-*.txt.gz``: the
prefix-cache hits, the tokens and the server's own TTFT over the replay). One untimed request with a prompt
of its own warms the server up before the first replay. Each client runs as a child process: its CPU time
(user + system, its children included: ``resource.getrusage(RUSAGE_CHILDREN)`` around it) and, every
0.25 s, the CPU seconds of its process tree and of the server's (``psutil``), so the table can take both over
the replay's own window (first submit to last token, on the monotonic clock both clients stamp with).
Caches go to a private temporary folder (``VLLM_CACHE_ROOT``, ``XDG_CACHE_HOME``, ``TORCHINDUCTOR_CACHE_DIR``,
``TMPDIR``); the server and the bench run with ``PYTHONHASHSEED`` fixed (the bench's prompts depend on it).

Each replay's folder (``DIR/<replay>/``) holds ``replay.json`` (the command, exit code, wall and CPU times,
the samples, the load average at its start) and the client's output: the bench's ``result.json``
(``--save-result --save-detailed``), or the harness's run (``run/``: ``records.jsonl.gz``, ``env.json``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.trace_proof import HASH_SEED, Request, bench_dataset_args

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_EVERY_S = 0.25


def add_run_args(p: argparse.ArgumentParser) -> None:
    """``run``'s own options: the server's, and the diagnostic replays' sampling (``--harness-sampling``)."""
    p.add_argument("--port", type=int, default=0, help="the server's port (0: a free one)")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--dtype", default=None, help="default: float32 on cpu, bfloat16 on cuda")
    p.add_argument("--start-timeout-s", type=float, default=600.0)
    p.add_argument(
        "--harness-sampling",
        type=float,
        nargs="*",
        default=[],
        metavar="S",
        help="after the three replays, the harness again with its load loop pausing S seconds after each "
        "/metrics sample (backends.load_level.EVERY_S, instead of the product's rule: sample_pause_s), one "
        "replay per S: the cost of it (0.1: the product's pause before the rule; 1000: one sample at the "
        "level's start and one at its end)",
    )


# --- the server --------------------------------------------------------------------------------------
def server_launch(args: argparse.Namespace, model: Any, port: int) -> tuple[list[str], dict[str, str]]:
    """The server's command and variables, as ``--backend vllm-server`` would launch it."""
    from llm_call_anatomy.backends.openai.servers import VLLMServerBackend
    from llm_call_anatomy.contract.adapter import BackendSettings

    settings = BackendSettings(
        model_path=model.path,
        model_label=model.label,
        dtype=args.dtype or ("float32" if args.device == "cpu" else "bfloat16"),
        device=args.device,
        random_weights=args.random_weights or not model.has_weights,
        max_model_len=args.max_model_len,
    )
    backend = VLLMServerBackend(settings)
    argv = backend.server_argv(port)
    argv[0] = args.python
    return argv, backend.server_env()


def private_env(tmp: Path) -> dict[str, str]:
    """Caches and sockets in ``tmp``, the hash seed fixed, this checkout importable."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {
        **os.environ,
        "VLLM_CACHE_ROOT": str(tmp / "vllm"),
        "XDG_CACHE_HOME": str(tmp / "xdg"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp / "inductor"),
        "TMPDIR": str(tmp),
        "PYTHONHASHSEED": HASH_SEED,
        "PYTHONPATH": path,
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
    }


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"trace_proof: the server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"trace_proof: the server was not healthy within {timeout_s:g} s")


def post(url: str, body: dict[str, Any] | None = None, timeout_s: float = 60) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return resp.read()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as resp:
        return resp.read().decode("utf-8", "replace")


# --- the CPU of a process tree -------------------------------------------------------------------------
def tree_cpu_s(pid: int | None) -> float | None:
    """User + system CPU seconds of ``pid`` and its live descendants, the children they waited for
    included (None: gone)."""
    import psutil

    if pid is None:
        return None
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def run_client(argv: list[str], env: dict[str, str], log: Path, server_pid: int) -> dict[str, Any]:
    """Run one client to its end: exit code, wall, CPU (rusage of the waited child and its descendants) and
    the samples ``[perf_counter, client CPU s, server CPU s]`` every :data:`SAMPLE_EVERY_S`, and one when it
    has exited (its CPU from rusage: a client may exit within a period of its last token, and the table's
    window ends there)."""
    samples: list[list[float | None]] = []
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                samples.append([time.perf_counter(), tree_cpu_s(proc.pid), tree_cpu_s(server_pid)])
                done.wait(SAMPLE_EVERY_S)

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        code = proc.wait()
        done.set()
        thread.join()
    r1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - t0
    user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    samples.append([t0 + wall, user + system, tree_cpu_s(server_pid)])
    return {
        "exit_code": code,
        "wall_s": round(wall, 3),
        "cpu_user_s": round(user, 3),
        "cpu_system_s": round(system, 3),
        "cpu_s": round(user + system, 3),
        "samples": [[round(x, 4) if x is not None else None for x in s] for s in samples],
    }


# --- the replays ---------------------------------------------------------------------------------------
def bench_argv(
    args: argparse.Namespace, model: Any, base: str, folder: Path, requests: list[Request]
) -> list[str]:
    return [
        args.python, "-m", "benchmarks.trace_proof", "bench",
        "--backend", "vllm", "--base-url", base, "--endpoint", "/v1/completions",
        "--model", model.path, "--tokenizer", model.path,
        *bench_dataset_args(Path(args.out), requests),
        "--temperature", "0", "--ready-check-timeout-sec", "0",
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
        "--save-result", "--save-detailed", "--result-dir", str(folder), "--result-filename", "result.json",
        "--disable-tqdm",
    ]  # fmt: skip


def harness_argv(
    args: argparse.Namespace, base: str, folder: Path, every_s: float | None = None
) -> list[str]:
    """``compare.py`` on the window's workload file; with ``every_s``, its backend's child process under
    :func:`sampling_python` (the load loop's /metrics sampling period set to ``every_s``)."""
    argv = [
        sys.executable, "compare.py", "--backend", "openai", "--base-url", base + "/v1",
        "--model", args.model, "--max-model-len", str(args.max_model_len), "--device", args.device,
        "--workload-file", str(Path(args.out) / "workload.yaml"), "--out", str(folder / "run"), "--no-report",
    ]  # fmt: skip
    if every_s is not None:
        argv += ["--python", f"openai={sampling_python(folder, every_s)}"]
    return [*argv, "--random-weights"] if args.random_weights else argv


def sampling_python(folder: Path, every_s: float) -> Path:
    """An interpreter for ``--python openai=``: the harness's backend child (``python -m
    llm_call_anatomy.harness.child ...``) with ``backends.load_level.EVERY_S`` set to ``every_s`` (the pause
    after each sample, whatever the product's rule), anything else run as it is. A diagnostic of this proof
    only: the product's rule is not changed."""
    folder.mkdir(parents=True, exist_ok=True)
    code = (
        "import runpy, sys; import llm_call_anatomy.backends.load_level as loop; "
        "loop.EVERY_S = float(sys.argv.pop(1)); "
        "runpy.run_module('llm_call_anatomy.harness.child', run_name='__main__', alter_sys=True)"
    )
    path = folder / "python"
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = -m ] && [ "$2" = llm_call_anatomy.harness.child ]; then shift 2; '
        f'exec {sys.executable} -c "{code}" {every_s!r} "$@"; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    path.chmod(0o755)
    return path


def replay(name: str, argv: list[str], env: dict[str, str], base: str, folder: Path, server_pid: int) -> None:
    """One replay: the prefix cache reset, /metrics before, the client, /metrics after; ``replay.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    post(base + "/reset_prefix_cache")
    time.sleep(2)  # the server idle before the replay starts
    (folder / "metrics-before.txt.gz").write_bytes(gzip.compress(scrape(base).encode()))
    load = os.getloadavg()
    print(f"trace_proof: {name} (load average {load[0]:.2f}) ...", flush=True)
    facts = run_client(argv, env, folder / "client.log", server_pid)
    time.sleep(1)  # the server counts a request in its histograms after its last chunk went out
    (folder / "metrics-after.txt.gz").write_bytes(gzip.compress(scrape(base).encode()))
    facts.update(replay=name, argv=argv, load_average_at_start=[round(x, 2) for x in load])
    (folder / "replay.json").write_text(json.dumps(facts, indent=1))
    if facts["exit_code"] != 0:
        print((folder / "client.log").read_text()[-3000:], file=sys.stderr)
        raise SystemExit(
            f"trace_proof: {name} exited with {facts['exit_code']} (its log: {folder / 'client.log'})"
        )
    run = folder / "run"
    if run.is_dir():  # the harness's run: the records gzip'd, the plan (every prompt's ids) left out
        records = run / "records.jsonl"
        (run / "records.jsonl.gz").write_bytes(gzip.compress(records.read_bytes()))
        records.unlink()
        (run / "plan.json").unlink(missing_ok=True)


def warm_up(base: str, model: Any, max_model_len: int) -> None:
    """One untimed request with a prompt no replay sends (token ids from 100 on, up to 512), 16 tokens."""
    ids = list(range(100, 100 + min(512, max_model_len // 2)))
    post(
        base + "/v1/completions",
        {"model": model.path, "prompt": ids, "max_tokens": 16, "ignore_eos": True},
        300,
    )


def run_proof(args: argparse.Namespace, model: Any, requests: list[Request]) -> int:
    """Start the server, replay the window three times, stop it, write ``DIR/proof.json`` and print the
    table."""
    from benchmarks import trace_proof_markdown, trace_proof_table
    from llm_call_anatomy.backends.openai.process import free_port

    out = Path(args.out)
    port = args.port or free_port()
    base = f"http://127.0.0.1:{port}"
    tmp = Path(tempfile.mkdtemp(prefix="trace-proof-"))
    env = private_env(tmp)
    argv, server_env = server_launch(args, model, port)
    (out / "server_command.txt").write_text(
        " ".join(f"{k}={v}" for k, v in server_env.items()) + " " + " ".join(argv)
    )
    meta: dict[str, Any] = {
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the server stopped on SIGTERM too (finally)
    with open(out / "server.log", "w") as log:
        server = subprocess.Popen(
            argv, env={**env, **server_env}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        t0 = time.monotonic()
        wait_healthy(base, server, args.start_timeout_s)
        meta["server_start_s"] = round(time.monotonic() - t0, 1)
        warm_up(base, model, args.max_model_len)
        commands = {
            "vllm-bench-1": bench_argv(args, model, base, out / "vllm-bench-1", requests),
            "harness": harness_argv(args, base, out / "harness"),
            "vllm-bench-2": bench_argv(args, model, base, out / "vllm-bench-2", requests),
        }
        for every_s in args.harness_sampling:  # the diagnostic replays, after the proof's three
            name = f"harness-sample-{every_s:g}s"
            commands[name] = harness_argv(args, base, out / name, every_s)
        for name, argv in commands.items():
            replay(name, argv, env, base, out / name, server.pid)
        meta["scrape_cost"] = scrape_cost(base, server.pid)
    finally:
        stop(server)
        shutil.rmtree(tmp, ignore_errors=True)
        log_path = out / "server.log"
        (out / "server.log.gz").write_bytes(gzip.compress(log_path.read_bytes()))
        log_path.unlink()
    meta["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    result = trace_proof_table.collect(out)
    (out / "proof.json").write_text(json.dumps(result, indent=1))
    print(trace_proof_markdown.markdown(result))
    return 0


def scrape_cost(base: str, server_pid: int, calls: int = 50) -> dict[str, float]:
    """What one of the harness's /metrics samples costs against this server, the replays done: the client's
    CPU and wall per ``backends.openai.metrics.load_values`` call (a scrape and its parse: what the load
    loop's sampler runs, ``backends.load_level.sample_pause_s`` apart) and the server's CPU per scrape (its
    process tree's, less its idle rate measured for 2 s before)."""
    from llm_call_anatomy.backends.openai.metrics import load_values

    url = base + "/metrics"
    load_values(url, {})
    s0, t0 = tree_cpu_s(server_pid) or 0.0, time.perf_counter()
    time.sleep(2)
    idle = ((tree_cpu_s(server_pid) or 0.0) - s0) / (time.perf_counter() - t0)
    s0, c0, t0 = tree_cpu_s(server_pid) or 0.0, time.process_time(), time.perf_counter()
    for _ in range(calls):
        load_values(url, {})
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    server = (tree_cpu_s(server_pid) or 0.0) - s0 - idle * wall
    return {
        "calls": calls,
        "client_cpu_ms": round(cpu / calls * 1e3, 2),
        "wall_ms": round(wall / calls * 1e3, 2),
        "server_cpu_ms": round(server / calls * 1e3, 2),
    }


def stop(server: subprocess.Popen) -> None:
    """SIGTERM to the server's process group, then SIGKILL after 20 s."""
    if server.poll() is not None:
        return
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
