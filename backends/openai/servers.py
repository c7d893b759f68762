"""``vllm-server`` / ``sglang-server`` (and, in ``hf_server.py``, ``hf-server``): the harness
launches the engine's own OpenAI server and measures through it with the ``openai`` backend (the
serving view of the in-process engines).

:meth:`start` picks a free port on 127.0.0.1, starts the server with this interpreter (so
``--python vllm-server=PATH`` selects the engine's environment), writes its output to
``RUN_DIR/logs/<backend>.log``, waits for ``GET /health`` (``LCA_SERVER_START_TIMEOUT``
seconds, default 900) and then connects like ``--backend openai``. The server is stopped by
its process group in :meth:`close` (the child process calls it in a ``finally``), at exit,
on SIGTERM, and when the harness process dies (see process.py). A server that exits mid-run
turns that request and every later one into a short error naming its exit code and log.

The commands (``--enforce-eager`` on a CPU only; ``--load-format dummy`` with random weights)::

    python -m vllm.entrypoints.openai.api_server --host 127.0.0.1 --port P --model DIR \\
        --dtype D --max-model-len N --tensor-parallel-size TP --enable-prefix-caching \\
        --enable-prompt-tokens-details \\
        --structured-outputs-config '{"backend": "xgrammar", "disable_any_whitespace": true}' \\
        --disable-uvicorn-access-log
    python -m sglang.launch_server --model-path DIR --host 127.0.0.1 --port P --dtype D \\
        --context-length N --tp-size TP --grammar-backend xgrammar \\
        --constrained-json-disable-any-whitespace --enable-cache-report --enable-metrics

On a CPU the server gets the run's dtype (``--dtype auto``: float32, as the engines in the harness's
process), not the model's own (config.json's ``dtype``, often bfloat16): the columns then compute alike, and a
CPU without bfloat16 instructions is not slowed by it. Where the two differ the start says so in one line,
also kept in env.json's ``notes`` (:meth:`LaunchedServerBackend.dtype_note`), with the flag that serves the
model's own.

With ``--dp N`` (docs/guides/two-gpus.md): vLLM adds ``--data-parallel-size N`` (one API server, its internal
balancer); SGLang adds ``--dp-size N``, and with ``--router cache_aware|round_robin`` runs
``python -m sglang_router.launch_server`` instead (``backends/openai/sglang_router.py``).

``--served-model-name NAME`` and each ``--engine-arg BACKEND:KEY=VALUE`` of this backend (as ``--key
value``, :func:`engine_arg_flags`) follow; a later flag wins in both servers' parsers, so an engine
argument overrides the harness's own. vLLM runs with ``VLLM_SERVER_DEV_MODE=1`` so that
``POST /reset_prefix_cache`` exists; SGLang has ``POST /flush_cache``. The API key (``--api-key-env``) is not
given to the servers: they listen on 127.0.0.1 only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from llm_call_anatomy.backends.base import BackendUnavailable
from llm_call_anatomy.backends.openai import server_facts, sglang_router
from llm_call_anatomy.backends.openai.backend import OpenAIBackend
from llm_call_anatomy.backends.openai.process import (
    ServerFailed,
    ServerProcess,
    describe_exit,
    exit_on_sigterm,
    free_port,
)
from llm_call_anatomy.backends.openai.replicas import replicas
from llm_call_anatomy.backends.parallel import SGLANG_ROUTER_MODULE, replica_record, uses_sglang_router
from llm_call_anatomy.backends.vllm import config as vllm_config
from llm_call_anatomy.contract.docs import doc

DEFAULT_START_TIMEOUT_S = 900.0  # a large model's first load (and CUDA graph capture) takes minutes


def engine_arg_flags(engine_args: dict[str, Any]) -> list[str]:
    """Engine arguments as a server's command-line flags: ``key=v`` -> ``--key v``; True -> ``--key``;
    False -> ``--no-key``; None -> nothing; lists and dicts as JSON."""
    argv: list[str] = []
    for key, value in engine_args.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False:
            argv.append("--no-" + key.replace("_", "-"))
        elif isinstance(value, (dict, list)):
            argv += [flag, json.dumps(value)]
        elif value is not None:
            argv += [flag, str(value)]
    return argv


def own_dtype(model_path: str) -> str | None:
    """The dtype the model's config.json names (``dtype``, or ``torch_dtype`` in older configs); None where
    there is no config or it names none."""
    try:
        config = json.loads((Path(model_path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    found = config.get("dtype") or config.get("torch_dtype") if isinstance(config, dict) else None
    return str(found).removeprefix("torch.") if found else None


class ServerExited(RuntimeError):
    """The launched server is gone: this request and every later one fail fast with this."""


class LaunchedServerBackend(OpenAIBackend):
    """Start the engine's server, measure through it, stop it."""

    engine_module = ""  # what must be importable in this interpreter
    health_path = "/health"
    forced_env: tuple[str, ...] = ()  # variables set even when the user's environment has them

    def __init__(self, settings) -> None:
        super().__init__(settings)
        self.server: ServerProcess | None = None
        self.port: int | None = None
        self.command: list[str] = []
        self.env_set: dict[str, str] = {}  # only what the harness set, never the whole environment

    # -- what each engine defines --------------------------------------------------------
    def server_argv(self, port: int) -> list[str]:
        raise NotImplementedError

    def launch_argv(self, port: int) -> list[str]:
        """The whole command: the engine's, the served name, then each ``--engine-arg`` (a later flag
        wins)."""
        return self.server_argv(port) + self.served_name_flags() + engine_arg_flags(self.settings.engine_args)

    def served_name_flags(self) -> list[str]:
        """``--served-model-name NAME`` where the user named one (the server then lists it)."""
        name = self.settings.served_model_name
        return ["--served-model-name", name] if name and self.name != "hf-server" else []

    def server_env(self) -> dict[str, str]:
        """Variables to set for the server."""
        env: dict[str, str] = {}
        if Path(self.settings.model_path).is_dir():
            env["HF_HUB_OFFLINE"] = "1"
        return env

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Launch the server on a free port with the harness's variables, wait until it is healthy, then
        connect as the ``openai`` backend does; a server that fails to come up is stopped."""
        if importlib.util.find_spec(self.engine_module) is None:
            raise BackendUnavailable(
                f"{self.engine_module} is not installed in {sys.executable}: pass --python {self.name}=PATH "
                f"(an interpreter of the engine's environment) or use docker/{self.engine_module}"
            )
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.command = self.launch_argv(self.port)
        note = self.dtype_note()
        if note:
            self.notes.append(note)
            print(f"{self.name}: {note}", flush=True)
        wanted = self.server_env()  # the user's own values win, except for what the harness relies on
        self.env_set = {k: v for k, v in wanted.items() if k in self.forced_env or k not in os.environ}
        env = {**os.environ, **self.env_set}
        self.server = ServerProcess(self.name, self.command, env, self._log_path())
        exit_on_sigterm()
        self.server.start()
        try:
            self.server.wait_healthy(f"http://127.0.0.1:{self.port}{self.health_path}", self._start_timeout())
            self._connect()
        except BaseException:
            self.server.stop()
            raise

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.server is not None:
                self.server.stop()

    def dtype_note(self) -> str | None:
        """Why a server launched on a CPU does not run in the model's own dtype (None: it does, or on a
        GPU)."""
        s = self.settings
        own = own_dtype(s.model_path)
        if s.device != "cpu" or own is None or own == s.dtype or "dtype" in s.engine_args:
            return None
        return (
            f"served in {s.dtype}, the run's dtype on a CPU (the in-process columns' too, so they compute "
            f"alike), not the model's own {own}: pass --dtype {own} to serve it in its own"
        )

    def _log_path(self) -> Path:
        run_dir = self.settings.run_dir or tempfile.mkdtemp(prefix="lca-server-")
        return Path(run_dir) / "logs" / f"{self.settings.column or self.name}.log"  # one log per column

    def _start_timeout(self) -> float:
        value = self.options.server_start_timeout_s or os.environ.get("LCA_SERVER_START_TIMEOUT")
        return float(value) if value else DEFAULT_START_TIMEOUT_S

    def _check_server(self, wait_s: float = 0.0) -> None:
        code = self.server.exit_code(wait_s) if self.server is not None else None
        if code is not None:
            raise ServerExited(
                f"{self.name}: the server exited with {describe_exit(code)}; see {self._log_name()}"
            )

    def _log_name(self) -> str:
        if self.server is None:
            return "its log"
        run_dir = self.settings.run_dir
        path = self.server.log_path
        return str(path.relative_to(run_dir)) if run_dir and path.is_relative_to(run_dir) else str(path)

    def environment(self) -> dict[str, Any]:
        return {
            **super().environment(),
            "server_command": shlex.join(self.command),
            "engine_defaults": self.settings.engine_defaults,
            "server_env": self.env_set,
            "server_pid": self.server.pid if self.server else None,
            "server_port": self.port,
            "server_log": self._log_name(),
            "parallel": replica_record(self.settings, self.name, self._engine_policy()),
            **({"replicas": self._replicas()} if self.settings.dp > 1 else {}),
        }

    def _engine_policy(self) -> str | None:
        return None

    def _replicas(self) -> dict[str, dict[str, float]] | str:
        """Each replica's KV capacity and prefix-cache counters, from /metrics (at the end: the run's
        totals)."""
        text = server_facts.metrics_page(self.metrics)
        return (
            (replicas(text) or "the server's /metrics has no per-replica series") if text else "no /metrics"
        )


class VLLMServerBackend(LaunchedServerBackend):
    name = "vllm-server"
    flavor = "vllm"
    engine_module = "vllm"
    forced_env = ("VLLM_SERVER_DEV_MODE",)  # POST /reset_prefix_cache exists only in dev mode

    def server_argv(self, port: int) -> list[str]:
        """``vllm serve``'s command line, with the in-process engine's settings (``backends.vllm.config``)."""
        s = self.settings
        argv = [
            sys.executable, "-m", "vllm.entrypoints.openai.api_server",
            "--host", "127.0.0.1", "--port", str(port),
            "--model", s.model_path,
            "--dtype", s.dtype,
            "--max-model-len", str(s.max_model_len),
            "--tensor-parallel-size", str(s.tp),
            "--enable-prefix-caching" if s.prefix_caching else "--no-enable-prefix-caching",
            "--enable-prompt-tokens-details",
            "--structured-outputs-config",
            json.dumps({"backend": "xgrammar", "disable_any_whitespace": True}),
            "--disable-uvicorn-access-log",
            *vllm_config.scheduler_flags(s),  # the in-process engine's own (--engine-defaults matched)
        ]  # fmt: skip
        if s.dp > 1:
            argv += [
                "--data-parallel-size",
                str(s.dp),
            ]  # one API server, its internal balancer over the engines
        if s.device == "cpu":
            argv.append("--enforce-eager")  # torch.compile costs a minute on a CPU and buys nothing here
        if s.random_weights:
            argv += ["--load-format", "dummy"]
        return argv

    def max_running(self) -> tuple[int | None, str]:
        """``max_num_seqs`` as this server was launched with it (the matched scheduler's, or an
        ``--engine-arg``), each data-parallel engine its own; None with vLLM's own defaults (``own``)."""
        launched = {**vllm_config.scheduler_kwargs(self.settings), **self.settings.engine_args}
        found = launched.get("max_num_seqs")
        if isinstance(found, int) and not isinstance(found, bool) and found > 0:
            return found * self.settings.dp, "max_num_seqs"
        return super().max_running()

    def server_env(self) -> dict[str, str]:
        env = {
            **super().server_env(),
            "VLLM_SERVER_DEV_MODE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        if self.settings.device == "cpu":
            env.update(VLLM_CPU_KVCACHE_SPACE="1", OMP_NUM_THREADS="1")
        return env


class SGLangServerBackend(LaunchedServerBackend):
    name = "sglang-server"
    flavor = "sglang"
    engine_module = "sglang"

    router_ports: tuple[int, int] | None = (
        None  # SGLang's router: its Prometheus port, the workers' base port
    )
    worker_pgids: tuple[int, ...] = ()  # the router's worker processes, each its own process group

    def start(self) -> None:
        if uses_sglang_router(self.settings) and importlib.util.find_spec(SGLANG_ROUTER_MODULE) is None:
            raise BackendUnavailable(
                f"--router {self.settings.router}: sglang-router is not installed in {sys.executable} "
                f"(pip install sglang-router; on the H200 its wheel: {doc('guides/two-gpus.md')})"
            )
        super().start()
        if uses_sglang_router(self.settings) and self.server is not None and self.server.pid:
            self.worker_pgids = tuple(sglang_router.child_pids(self.server.pid))

    def close(self) -> None:
        try:
            super().close()
        finally:
            sglang_router.stop_worker_groups(
                list(self.worker_pgids)
            )  # those the router's own clean-up missed

    def _worker_texts(self) -> dict[str, str]:
        log = sglang_router.read_log(self.server.log_path if self.server else None)
        return sglang_router.worker_texts(sglang_router.worker_ports(log), self._headers)

    def _worker_figures(self) -> dict[str, dict[str, float]]:
        return sglang_router.worker_figures(self._worker_texts())

    def latency_snapshot(self):
        """Behind SGLang's router: the workers' latency histograms, added up."""
        if not uses_sglang_router(self.settings):
            return super().latency_snapshot()
        return sglang_router.merged_buckets(list(self._worker_texts().values()))

    def load_stats(self) -> dict[str, float]:
        """Behind SGLang's router: the workers' own /metrics (summed, and each as ``replica{R}_*``)."""
        if not uses_sglang_router(self.settings):
            return super().load_stats()
        return sglang_router.load_figures(self._worker_figures())

    def _replicas(self) -> dict[str, dict[str, float]] | str:
        if not uses_sglang_router(self.settings):
            return super()._replicas()
        return self._worker_figures() or "no worker's /metrics answered (ports from the router's log)"

    def _engine_policy(self) -> str | None:
        """SGLang's controller's ``load_balance_method`` as the server reports it (/get_server_info)."""
        if uses_sglang_router(self.settings) or self.settings.dp <= 1 or self.server is None:
            return None
        return self.http.server_info().get("load_balance_method")

    def server_argv(self, port: int) -> list[str]:
        """SGLang's server command line (behind SGLang's router with ``--router``), set as the in-process
        engine is."""
        s = self.settings
        module = "sglang_router.launch_server" if uses_sglang_router(s) else "sglang.launch_server"
        argv = [
            sys.executable, "-m", module,
            "--model-path", s.model_path,
            "--host", "127.0.0.1", "--port", str(port),
            "--dtype", s.dtype,
            "--context-length", str(s.max_model_len),
            "--tp-size", str(s.tp),
            "--grammar-backend", "xgrammar",
            "--constrained-json-disable-any-whitespace",
            "--enable-cache-report",
            "--enable-metrics",
        ]  # fmt: skip
        if s.dp > 1:
            argv += [
                "--dp-size",
                str(s.dp),
            ]  # replicas: SGLang's controller, or one worker each behind the router
        if uses_sglang_router(s):
            self.router_ports = self.router_ports or sglang_router.free_ports()
            argv += sglang_router.router_flags(s.router, *self.router_ports)
        if not s.prefix_caching:
            argv.append("--disable-radix-cache")
        if s.device == "cpu":
            argv += ["--device", "cpu"]
        if s.random_weights:
            argv += ["--load-format", "dummy"]
        return argv


__all__ = [
    "LaunchedServerBackend",
    "SGLangServerBackend",
    "ServerExited",
    "ServerFailed",
    "VLLMServerBackend",
]
