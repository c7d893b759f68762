"""The server's own HTTP endpoints beside the OpenAI API, at its root URL (``http://host:port``, no ``/v1``).

Which engine answers (SGLang has ``/get_server_info``, vLLM ``/version``), its version, SGLang's server
info (scheduler settings, the data-parallel policy), and dropping its prefix cache (vLLM
``/reset_prefix_cache``, SGLang ``/flush_cache``) so that a request that must not reuse a prefix can't.
Plain ``urllib`` with the client's headers (the API key); a server that does not answer gives
``(None, why)``, never an exception.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any

RESET_PATHS = {"vllm": "/reset_prefix_cache", "sglang": "/flush_cache"}
VERSION_PATHS = {"vllm": ("/version",), "sglang": ("/get_server_info", "/server_info")}


def root_url(base_url: str) -> str:
    """``http://host:port/v1`` -> ``http://host:port`` (where /health, /metrics, /version live)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class ServerHTTP:
    """The endpoints at ``root`` that are not the OpenAI API's, asked with ``headers``."""

    def __init__(self, root: str, headers: dict[str, str]) -> None:
        self.root = root
        self.headers = headers

    def call(self, method: str, path: str, timeout_s: float = 10.0) -> tuple[int | None, str]:
        """(HTTP status, body); (None, why) where the server did not answer."""
        req = urllib.request.Request(self.root + path, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                return resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return exc.code, ""
        except (OSError, ValueError) as exc:
            return None, str(exc)

    def flavor(self) -> str | None:
        """``sglang`` or ``vllm`` from the endpoints each has; None: neither answers."""
        if self.call("GET", "/get_server_info")[0] == 200:
            return "sglang"
        if self.call("GET", "/version")[0] == 200:
            return "vllm"
        return None

    def version(self, flavor: str | None) -> str | None:
        for path in VERSION_PATHS.get(flavor or "", ()):
            status, body = self.call("GET", path)
            if status == 200:
                try:
                    return str(json.loads(body)["version"])
                except (ValueError, KeyError, TypeError):
                    return None
        return None

    def server_info(self) -> dict[str, Any]:
        """SGLang's ``/get_server_info`` (its effective server arguments); {} where it does not answer one."""
        status, body = self.call("GET", "/get_server_info")
        try:
            info = json.loads(body) if status == 200 else {}
        except ValueError:
            return {}
        return info if isinstance(info, dict) else {}

    def reset_prefix_cache(self, flavor: str | None, who: str) -> bool:
        """Drop the server's prefix cache; vLLM refuses while blocks are held, so retry briefly. False: no
        such endpoint here, or it kept refusing (said on stderr, as ``who``)."""
        path = RESET_PATHS.get(flavor or "")
        if path is None:
            return False
        for _ in range(20):
            status, body = self.call("POST", path)
            if status == 200 and '"success":false' not in body.replace(" ", ""):
                return True
            if status in (None, 404, 405):
                return False
            time.sleep(0.05)
        print(f"{who}: the server did not drop its prefix cache", file=sys.stderr)
        return False
