"""Keep secrets out of everything a run writes: the API key is redacted from records, env files and the
console.

The child process registers the key it reads from ``--api-key-env`` (:func:`register`); every
record line, ``env/<backend>.json`` and error line printed goes through :func:`redact`, so a
server that echoes request headers in its error messages does not put the key into records or
the report. The parent never reads the key: it refuses one pasted where a variable's name
belongs, and a URL with a user name or password, a query string or a fragment in it (:func:`check_key_var`,
:func:`check_url`).
"""

from __future__ import annotations

import json
import re
import urllib.parse

REDACTED = "[redacted]"
VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_secrets: list[str] = []


def register(secret: str | None) -> None:
    """Redact ``secret`` (and its JSON-escaped form) from all text this process writes; short values are
    ignored."""
    if secret and len(secret) >= 4:
        for form in (secret, json.dumps(secret)[1:-1]):
            if form not in _secrets:
                _secrets.append(form)
        _secrets.sort(key=len, reverse=True)


def redact(text: str) -> str:
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def check_key_var(name: str) -> str | None:
    """Why ``--api-key-env`` is unusable (without repeating it: it may be the key itself), or None."""
    if not VAR_NAME.match(name):
        return (
            "--api-key-env takes the name of an environment variable holding the key (e.g. OPENAI_API_KEY), "
            "not the key itself; the value given is not a variable name and was not stored"
        )
    return None


def check_url(url: str) -> str | None:
    """Why ``--base-url`` is unusable because it carries credentials (without repeating them), or None."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is not None or parts.password is not None:
        return (
            "--base-url holds a user name or password (user:key@host); pass the URL without it and the key "
            "through --api-key-env VAR, so it is written nowhere"
        )
    if parts.query or parts.fragment or url.rstrip().endswith(("?", "#")):
        # ?api_key=sk-... would be stored in clear in run.json, env.json, the records and the report
        return (
            "--base-url holds a query string or fragment (?... or #..., where keys are often passed); "
            "a base URL has neither: pass it without them and a key through --api-key-env VAR, "
            "so it is written nowhere"
        )
    return None
