"""What each H200 sitting script queues, pinned: anatomy_sitting.sh, brackets_sitting.sh and
trace_sitting.sh run with every session number, on an H200 and on an H100, with the machine stubbed, and
their queues' commands, their start and poll arguments' answers (usage, a poll's copies) compared line for
line with ``sitting_queues.txt``; capacity_sitting.sh's sessions as far as their launch (its queue as
defined, hashed).

The scripts run as on the device, from a copy of lab/h200 where study.sh, install.sh and unpack_model.sh
only write down how they were called; what touches the machine is a shell function of ``BASH_ENV`` (read by
the script and by the queue's setsid shell before anything else): ``nvidia-smi`` names the GPU, ``tar``,
``cp`` and ``mkdir`` leave /tmp/lca-repo and /tmp/shared alone, ``cd /tmp/lca-repo`` goes to the copy,
``setsid`` runs the queue where it is, the script's ``sleep`` waits for the queue's end and the queue's
returns at once, and ``staged`` is true. A change to the scripts' shared halves (queue_lib.sh) that changed
a queued command fails here; a change meant to change one rewrites the file (``LCA_WRITE_SITTING_QUEUES=1``)
and shows the difference in its commit."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "lab" / "h200"
EXPECTED = Path(__file__).with_name("sitting_queues.txt")
SCRIPTS = {"anatomy_sitting.sh": "123", "brackets_sitting.sh": "123456789", "trace_sitting.sh": "1234"}
# capacity_sitting.sh's queue waits on files only its machine writes (/tmp/sglang.installed, lab/examples
# put back in /tmp/runs): it is not run, its launch is (the session, the deadline, its queue() as defined)
LAUNCHED = {"capacity_sitting.sh": "abcdefg"}
GPUS = {"h200": "NVIDIA H200", "h100": "NVIDIA H100 80GB HBM3"}

# Read first by the script and by its queue's shell: the machine, stubbed (see the module's docstring).
STUBS = r"""
log() { printf '%s\n' "$*" >> "$CAPTURE_LOG"; }
nvidia-smi() { log "nvidia-smi $*"; echo "$CAPTURE_GPU"; }
tar() { [ "$1" = xf ] && cat > /dev/null; log "tar $*"; }  # the reading end logs after the writing one
cp() { log "cp $*"; local a; for a in "${@:1:$#-1}"; do [ -e "$a" ] || return 1; done; }
mkdir() {
  log "mkdir $*"; local a keep=()
  for a in "$@"; do [[ $a == /tmp/lca-repo* || $a == /tmp/shared* ]] || keep+=("$a"); done
  [[ " ${keep[*]} " == *" /"* ]] || return 0
  command mkdir "${keep[@]}"
}
cd() { if [ "$1" = /tmp/lca-repo ]; then log "cd $*"; builtin cd "$CAPTURE_REPO"; else builtin cd "$@"; fi; }
setsid() {
  local left=$(( (DEADLINE - $(date +%s) + 5) / 10 * 10 ))
  log "setsid SESSION=${SESSION:-} DEADLINE=now+$left OUT=$OUT PWD=$PWD"
  if [ -n "${CAPTURE_LAUNCH_ONLY:-}" ]; then
    log "queue $(declare -f queue | sha256sum)"; touch "$R/queue.done"; return
  fi
  CAPTURE_QUEUE=1 "$@"
}
sleep() {  # the script waits for its queue (the call's three seconds), the queue for nothing
  local i; [ -n "${CAPTURE_QUEUE:-}" ] && return 0
  for i in $(seq 600); do [ -f "$R/queue.done" ] && return 0; command sleep 0.05; done
}
staged() { log "staged $*"; }
"""
# lab/h200's commands the queues call: each writes down its arguments (study.sh its bound too), nothing more
CALLED = r"""#!/usr/bin/env bash
printf '%s' "$(basename "$0")" >> "$CAPTURE_LOG"
[ "$(basename "$0")" = study.sh ] &&
  printf ' STUDY_TIMEOUT=%s OVERHEAD=%s' "$STUDY_TIMEOUT" "$OVERHEAD" >> "$CAPTURE_LOG"
printf ' %q' "$@" >> "$CAPTURE_LOG"; echo >> "$CAPTURE_LOG"
"""


def _sandbox(tmp: Path) -> Path:
    """A copy of the scripts as the device's checkout has them, its study/install/unpack commands stubbed, the
    trace carried (trace_sitting.sh's first call carries .gpu/traces/t01)."""
    repo = tmp / "repo"
    (repo / "lab" / "h200").mkdir(parents=True)
    for path in H200.glob("*.sh"):
        shutil.copy(path, repo / "lab" / "h200" / path.name)
    for name in ("study.sh", "install.sh", "unpack_model.sh"):
        (repo / "lab" / "h200" / name).write_text(CALLED)
    (repo / ".gpu" / "traces" / "t01").mkdir(parents=True)
    (repo / ".gpu" / "traces" / "t01" / "mooncake-conversation.jsonl.gz").write_bytes(b"")
    (tmp / "stubs.sh").write_text(STUBS)
    return repo


def _run(
    tmp: Path, repo: Path, script: str, args: list[str], gpu: str, results: Path, run: bool = True
) -> str:
    """One call of ``script`` with ``args``: its exit status, its output where it says why it stopped, and
    what it (and the queue it launched, waited for) called, each line as written, the temporary paths named
    ``<tmp>``; ``run`` False: the queue's launch only."""
    log = tmp / "calls.log"
    log.write_text("")
    env = {
        **os.environ,
        "BASH_ENV": str(tmp / "stubs.sh"),
        "CAPTURE_LOG": str(log),
        "CAPTURE_REPO": str(repo),
        "CAPTURE_GPU": GPUS[gpu],
        "R": str(results),
        "OUT": str(tmp / "out"),
        **({} if run else {"CAPTURE_LAUNCH_ONLY": "1"}),
    }
    env.pop("SESSION", None)
    env.pop("DEADLINE", None)
    proc = subprocess.run(
        ["bash", f"lab/h200/{script}", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60
    )
    said = "" if proc.returncode == 0 else proc.stdout + re.sub(r"^\S+: line \d+: ", "", proc.stderr)
    text = f"$ {script} {' '.join(args)} [{gpu}]\nexit {proc.returncode}\n{said}{log.read_text()}"
    return text.replace(str(tmp), "<tmp>")


def _poll(tmp: Path, repo: Path, script: str) -> str:
    """A poll on a machine whose queue is done: the files it copies (its archives' names and the log)."""
    results, out = tmp / "polled", tmp / "out"
    shutil.rmtree(results, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    results.mkdir()
    names = ["queue.log", "queue.done", "other.tgz", "h200-a42-vllm.tgz", "h100-b39-think-f-a.tgz"]
    names += ["h200-b39-closed-a.tgz", "h200-t41-vllm-server-a.tgz", "h100-t41-sglang-server-b.tgz"]
    names += ["h200-cap-vllm.tgz", "h200-serve-vllm-server.tgz", "h200-starts-sglang-server.tgz"]
    names += ["load_client-h200-lean.json", "load_client-h200-lean.txt"]
    for name in names:
        (results / name).write_text("x")
    env = {**os.environ, "R": str(results), "OUT": str(out)}
    proc = subprocess.run(
        ["bash", f"lab/h200/{script}", "poll", "0"], cwd=repo, env=env, capture_output=True, text=True
    )
    copied = sorted(p.name for p in out.iterdir()) if out.exists() else []
    return f"$ {script} poll 0 (a queue done)\nexit {proc.returncode}\ncopied {' '.join(copied)}\n"


def sitting_queues(tmp: Path) -> str:
    """Every call's answer and what it queued, as ``sitting_queues.txt`` holds them."""
    repo = _sandbox(tmp)
    out = []
    for script, sessions in {**SCRIPTS, **LAUNCHED}.items():
        run = script in SCRIPTS
        calls = [(["start", s], gpu) for s in sessions for gpu in (GPUS if run else ["h200"])]
        calls += [(["start", sessions[0], "900"], "h200")]
        calls += [([], "h200"), (["start"], "h200"), (["start", "0"], "h200"), (["start", "10"], "h200")]
        calls += [(["start", "1|2"], "h200"), (["run", "1"], "h200"), (["poll"], "h200")]
        if script == "brackets_sitting.sh":  # sessions 7-9's engine starts named: the rest of a cut sitting
            calls += [(["start", "8", "900", "c"], "h100"), (["start", "9", "900", "b c"], "h200")]
            calls += [(["start", "8", "900", "c,d"], "h100"), (["start", "7", "900", ""], "h100")]
            calls += [(["start", "4", "900", "a b"], "h200")]  # session 4's starts are fixed
        for i, (args, gpu) in enumerate(calls):
            results = tmp / f"results-{script}-{i}"
            results.mkdir()
            out.append(_run(tmp, repo, script, args, gpu, results, run))
        out.append(_poll(tmp, repo, script))
    carried = repo / ".gpu" / "traces" / "t01" / "mooncake-conversation.jsonl.gz"
    carried.unlink()  # trace_sitting.sh's first call without the trace
    (tmp / "results-untraced").mkdir()
    out.append(_run(tmp, repo, "trace_sitting.sh", ["start", "1"], "h200", tmp / "results-untraced"))
    return "\n".join(out)


def test_each_sitting_queues_what_it_queued(tmp_path: Path) -> None:
    found = sitting_queues(tmp_path)
    if os.environ.get("LCA_WRITE_SITTING_QUEUES") == "1":
        EXPECTED.write_text(found)
    assert found == EXPECTED.read_text()
