"""The report opened in headless Chromium: no console errors, no network, every chart drawn, replies as text.

Marked ``browser``; needs Debian's ``chromium`` (``apt-get install -y chromium``). The screenshot
lands in ``test-artifacts/report.png`` (git-ignored).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reports import build
from tests.reports.chromium import Chromium, chromium_path, problems
from tests.reports.test_report_page import SCRIPT, hostile

pytestmark = [pytest.mark.browser, pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed")]
ARTIFACTS = Path(__file__).parents[2] / "test-artifacts"
ALL_DRAWN = ("document.querySelectorAll('div.chart').length > 0 && document.querySelectorAll('div.chart').length === "
             "Array.from(document.querySelectorAll('div.chart')).filter(el => el.querySelector('svg, canvas')).length")


def test_report_in_chromium(recorded_runs, tmp_path):
    hostile(recorded_runs[0])
    page = build(recorded_runs, tmp_path / "report.html")
    with Chromium() as browser:
        browser.open_page()
        browser.navigate(page.resolve().as_uri())
        assert browser.wait_until(ALL_DRAWN, timeout=60), "a chart container has no svg or canvas"
        charts = browser.evaluate("document.querySelectorAll('div.chart').length")
        failed = browser.evaluate("Array.from(document.querySelectorAll('div.chart')).filter(el => !el.dataset.rendered).length")
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
    bad.write_text("<html><body><img src='http://127.0.0.1:9/x.png'><script>console.error('boom'); null.x;</script></body></html>")
    with Chromium() as browser:
        browser.open_page()
        browser.navigate(bad.as_uri())
        errors, requests = problems(browser.drain())
    assert any("boom" in e for e in errors) and any("TypeError" in e for e in errors)
    assert "http://127.0.0.1:9/x.png" in requests
