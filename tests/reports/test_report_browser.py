"""The report opened in headless Chromium: no console errors, no network, every chart drawn, replies as text.

Marked ``browser``; needs Debian's ``chromium`` (``apt-get install -y chromium``). The screenshot
lands in ``test-artifacts/report.png`` (git-ignored).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_call_anatomy.reports import build
from tests.conftest import lab_example
from tests.reports.chromium import Chromium, chromium_path, problems
from tests.reports.test_report_page import SCRIPT, hostile

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed"),
]
ARTIFACTS = Path(__file__).parents[2] / "test-artifacts"
ALL_DRAWN = (
    "document.querySelectorAll('div.chart').length > 0 && document.querySelectorAll('div.chart').length === "
    "Array.from(document.querySelectorAll('div.chart')).filter(el => el.querySelector('svg, canvas')).length"
)


def test_report_in_chromium(recorded_runs, tmp_path):
    hostile(recorded_runs[0])
    page = build(recorded_runs, tmp_path / "report.html")
    with Chromium() as browser:
        browser.open_page()
        browser.navigate(page.resolve().as_uri())
        assert browser.wait_until(ALL_DRAWN, timeout=60), "a chart container has no svg or canvas"
        charts = browser.evaluate("document.querySelectorAll('div.chart').length")
        failed = browser.evaluate(
            "Array.from(document.querySelectorAll('div.chart')).filter(el => !el.dataset.rendered).length"
        )
        text = browser.evaluate("document.body.innerText")
        injected = browser.evaluate("typeof window.__injected")
        browser.screenshot(ARTIFACTS / "report.png")
        errors, requests = problems(browser.drain())
    assert charts >= 6 and failed == 0
    assert errors == []
    assert requests == [page.resolve().as_uri()]  # the page itself, nothing else
    assert SCRIPT in text and injected == "undefined"  # the reply shows as text and never ran
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


def test_driver_sees_errors_and_requests(tmp_path):
    """The checks above can fail: a page with a console error, an exception and a request is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<html><body><img src='http://127.0.0.1:9/x.png'>"
        "<script>console.error('boom'); null.x;</script></body></html>"
    )
    with Chromium() as browser:
        browser.open_page()
        browser.navigate(bad.as_uri())
        errors, requests = problems(browser.drain())
    assert any("boom" in e for e in errors) and any("TypeError" in e for e in errors)
    assert "http://127.0.0.1:9/x.png" in requests


OVERFLOW = "document.documentElement.scrollWidth - window.innerWidth"
ORDER = (
    "['summary', 'wl-1', 'claims', 'agreement', 'caveats', 'environment']"
    ".map(id => document.getElementById(id).getBoundingClientRect().top + window.scrollY)"
)


def test_layout_results_first_and_no_sideways_scroll(tmp_path):
    """The committed H200 study (four backends): no page-wide sideways scroll at 1,400 or 800 px; results
    above the environment."""
    h200 = lab_example("h200-qwen3-8b-shape")
    copy_gbps = json.loads((h200 / "bandwidth-h200.json").read_text())["copy_gbps_median"]
    runs = [h200 / n for n in ("h200-hf", "h200-vllm", "h200-sglang", "h200-hf-graphs")]
    page = build(runs, tmp_path / "report.html", copy_gbps=copy_gbps)
    with Chromium(width=1400) as browser:
        browser.open_page()
        browser.navigate(page.resolve().as_uri())
        assert browser.wait_until(ALL_DRAWN, timeout=90)
        tops = browser.evaluate(ORDER)
        wide = browser.evaluate(OVERFLOW)
        browser.screenshot(ARTIFACTS / "report-h200-1400.png", max_height=4000)
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 800, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
        )
        browser.wait_until("window.innerWidth === 800", timeout=10)
        narrow = browser.evaluate(OVERFLOW)
        clipped = browser.evaluate(
            "Array.from(document.querySelectorAll('table')).filter(t => !t.closest('.scroll')).length"
        )
    assert (
        tops == sorted(tops) and tops[-1] > tops[0]
    )  # summary, workloads, claims, agreement, caveats, then environment
    assert wide <= 0, f"the page scrolls sideways at 1,400 px by {wide} px"
    assert narrow <= 0, f"the page scrolls sideways at 800 px by {narrow} px"
    assert clipped == 0  # every table wraps or scrolls inside its own box
