"""A tiny DevTools-protocol driver for headless Chromium over ``--remote-debugging-pipe`` (stdlib only).

Chromium reads commands from fd 3 and writes replies and events to fd 4, each a JSON message
ended by a NUL byte; no websocket library and no open port are needed. Used by the report's
browser test to load the page from disk, collect console errors, exceptions and network
requests, wait for the charts, and take a full-page screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--hide-scrollbars",
    "--mute-audio",
]


def _high(fds: tuple[int, int]) -> tuple[int, int]:
    """Move a pipe's ends above fd 10, so placing them on fds 3 and 4 in the child never clobbers them."""
    out = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)
    for fd in fds:
        os.close(fd)
    return out  # type: ignore[return-value]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    def __init__(self, width: int = 1400, height: int = 1000) -> None:
        exe = chromium_path()
        if exe is None:
            raise RuntimeError("chromium is not installed (apt-get install -y chromium)")
        self.profile = tempfile.mkdtemp(prefix="lca-chromium-")
        to_chrome_r, self._to_chrome = _high(os.pipe())
        self._from_chrome, from_chrome_w = _high(os.pipe())

        def wire() -> None:  # in the child: fd 3 = commands in, fd 4 = replies out
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [
                exe,
                *FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=wire,  # needed to place the pipe ends on fds 3 and 4
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.session: str | None = None
        self._seen: list[dict[str, Any]] = []  # events already taken off the queue

    # -- transport -----------------------------------------------------------------------------
    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 20)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cond:
                        self._replies[msg["id"]] = msg
                        self._cond.notify_all()
                else:
                    self.events.put(msg)

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = True, timeout: float = 60
    ) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._next not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no reply to {method}")
                self._cond.wait(left)
            reply = self._replies.pop(self._next)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    # -- page ----------------------------------------------------------------------------------
    def open_page(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, session=False
        )["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def navigate(self, url: str, timeout: float = 60) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired", timeout)

    def wait_for(self, method: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = []
        try:
            while True:
                ev = self.events.get(timeout=max(0.01, deadline - time.monotonic()))
                seen.append(ev)
                if ev.get("method") == method:
                    return ev
        except queue.Empty:
            raise TimeoutError(f"no {method} event") from None
        finally:
            for ev in seen:  # keep everything for the caller's checks
                self._seen.append(ev)

    def drain(self) -> list[dict[str, Any]]:
        while True:
            try:
                self._seen.append(self.events.get_nowait())
            except queue.Empty:
                return list(self._seen)

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate(expression):
                return True
            time.sleep(0.2)
        return False

    def screenshot(self, path: Path, full_page: bool = True, max_height: int = 16000) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={
                    "x": 0,
                    "y": 0,
                    "width": size["width"],
                    "height": min(size["height"], max_height),
                    "scale": 1,
                },
            )
        data = self.send("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", session=False, timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def problems(events: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(console errors and exceptions, URLs requested other than the page's own file)."""
    errors, requests = [], []
    for ev in events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif m == "Runtime.exceptionThrown":
            errors.append(
                str(
                    p.get("exceptionDetails", {}).get("exception", {}).get("description")
                    or p.get("exceptionDetails")
                )
            )
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            errors.append(p["entry"].get("text", ""))
        elif m == "Network.requestWillBeSent":
            requests.append(p.get("request", {}).get("url", ""))
    return errors, requests


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.reports.chromium PAGE.html OUT.png [--height PX]``: screenshot a page
    (docs/report.png)."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("page", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--width", type=int, default=1400)
    p.add_argument(
        "--height", type=int, default=None, help="viewport only, this tall (default: the full page)"
    )
    args = p.parse_args(argv)
    with Chromium(args.width, args.height or 1000) as browser:
        browser.open_page()
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": args.width, "height": args.height or 1000, "deviceScaleFactor": 1, "mobile": False},
        )
        browser.navigate(args.page.resolve().as_uri())
        browser.wait_until(
            "Array.from(document.querySelectorAll('div.chart')).every(el => el.querySelector('svg, canvas'))"
        )
        browser.screenshot(args.out, full_page=args.height is None)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
