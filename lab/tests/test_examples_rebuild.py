"""The byte-identity guard: each committed example report rebuilds from its committed runs unchanged.

Every page under ``lab/examples/`` is rebuilt with the command its README gives (the same
``python compare.py report`` arguments, in the committed column order) and compared with the committed
``report.html`` byte for byte, except for the one thing that varies with the time of the build:
the ``built <ISO time>`` stamp in the page's sub-heading, replaced by a placeholder on both sides.
A refactor that changes a figure, a label, a chart spec or the page's order fails here.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from llm_call_anatomy.reports.__main__ import main as reports_main

ROOT = Path(__file__).parents[2]
EXAMPLES = ROOT / "lab" / "examples"

# example folder -> (run folders in the committed column order, extra arguments); as each README says
BUILDS = {
    "h200-qwen3-8b-shape": (
        ["h200-hf", "h200-vllm", "h200-sglang", "h200-hf-graphs"],
        ["--copy-gbps", "lab/examples/h200-qwen3-8b-shape/bandwidth-h200.json"],
    ),
    "h200-smollm2": (
        ["h200-smollm2-hf", "h200-smollm2-vllm", "h200-smollm2-sglang", "h200-smollm2-hf-graphs"],
        ["--copy-gbps", "lab/examples/h200-smollm2/bandwidth-h200x2.json"],
    ),
    "h200-load": (
        [
            "h200-load-hf",
            "h200-load-hf-cb",
            "h200-load-vllm",
            "h200-load-sglang",
            "h200-load-vllm-server",
            "h200-load-sglang-server",
        ],
        [],
    ),
    "h200-serving": (["h200-serve-vllm-server", "h200-serve-sglang-server", "h200-serve-hf-server"], []),
    "h200-capacity": (  # the in-process runs, the servers' capacity runs, and the serving example's hf-server
        [f"h200-cap-{b}{c}" for c in ("", "-nocache") for b in ("vllm", "sglang", "hf-cb")]
        + ["h200-cap-vllm-server", "h200-cap-sglang-server", "../h200-serving/h200-serve-hf-server"],
        [],
    ),
    "h100-anatomy": (  # one call taken apart, the KV cache to 32k: vLLM in process and vllm-server, one H100
        [f"../../results/anatomy-h100-2026-12-07/h100-a42-{b}" for b in ("vllm", "vllm-server")],
        [],
    ),
    "h100-think": (  # users who think, a bracket: three vllm-server starts on an H100 (issue 40's answer)
        [f"../../results/brackets-h100-2026-12-07b/h100-b39-think-f-{s}" for s in "abc"],
        ["--merge-starts", "--slo", "mychat:ttft_p90_ms=1000,tpot_p90_ms=40"]
        + ["--size", "users=10000,think_s=30,slo=mychat", "--gpu-hour-usd", "3.5"],
    ),
    "h200-think": (  # users who think, three vllm-server starts (issue 40's sizing answer, first screen)
        [f"../../results/brackets-h200-2026-12-04b/h200-b39-think3-s-{s}" for s in "abc"],
        ["--merge-starts", "--slo", "mychat:ttft_p90_ms=1000,tpot_p90_ms=40"]
        + ["--size", "users=10000,think_s=30,slo=mychat", "--gpu-hour-usd", "3.5"],
    ),
}
# examples whose committed page is being replaced on main (new runs, rebuilt there): not compared meanwhile
BUILT_STAMP = re.compile(r" · built \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d</p>")


def without_stamp(html: str) -> str:
    """The page with its build time replaced; exactly one stamp, or the page's shape changed."""
    out, count = BUILT_STAMP.subn(" · built <time></p>", html)
    assert count == 1, f"expected one 'built <time>' stamp, found {count}"
    return out


def test_every_example_is_guarded():
    committed = {p.parent.name for p in EXAMPLES.glob("*/report.html")}
    assert committed == set(BUILDS), "a committed example report without a rebuild entry here (or one gone)"


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(BUILDS))
def test_committed_report_rebuilds_identically(example, tmp_path, monkeypatch, capsys):
    runs, extra = BUILDS[example]
    monkeypatch.chdir(ROOT)  # the --copy-gbps path is relative to the repository, as in the README
    out = tmp_path / "report.html"
    rc = reports_main([str(EXAMPLES / example / r) for r in runs] + extra + ["-o", str(out)])
    assert rc == 0, capsys.readouterr().err
    rebuilt = without_stamp(out.read_text(encoding="utf-8"))
    committed = without_stamp((EXAMPLES / example / "report.html").read_text(encoding="utf-8"))
    if rebuilt != committed:
        diff = difflib.unified_diff(
            committed.replace(">", ">\n").splitlines(),
            rebuilt.replace(">", ">\n").splitlines(),
            "committed",
            "rebuilt",
            n=1,
            lineterm="",
        )
        pytest.fail(f"{example}/report.html no longer rebuilds identically:\n" + "\n".join(list(diff)[:40]))


def test_stamp_is_the_only_thing_ignored():
    page = '<p class="sub">Model m · runs a · backends hf · built 2026-11-30T15:22:58+00:00</p><p>x</p>'
    assert without_stamp(page) == '<p class="sub">Model m · runs a · backends hf · built <time></p><p>x</p>'
    assert without_stamp(page) != without_stamp(page.replace("<p>x</p>", "<p>y</p>"))
    with pytest.raises(AssertionError):
        without_stamp(page.replace(" · built", " · made"))
