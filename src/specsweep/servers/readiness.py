"""Readiness and version checks over small synchronous HTTP requests (stdlib only; short timeouts)."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from specsweep.store import redact


class ProbeError(Exception):
    pass


def http_json(url: str, *, body: dict[str, Any] | None = None, timeout: float = 5.0) -> tuple[int, Any]:
    """(status, parsed JSON or text). Connection problems raise ProbeError."""
    data = json.dumps(body).encode() if body is not None else None
    url, auth = split_userinfo(url)
    req = urllib.request.Request(url, data=data, method="POST" if body is not None else "GET")
    if auth:
        req.add_header("Authorization", auth)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise ProbeError(str(getattr(e, "reason", e))) from e
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


def split_userinfo(url: str) -> tuple[str, str | None]:
    """``http://u:pw@host/x`` -> (``http://host/x``, a Basic Authorization header): urllib cannot
    take credentials in the URL (it reads ``u:pw@host`` as the host and its port)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    cred = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
    token = base64.b64encode(cred.encode()).decode()
    redact.register(token)  # the same secret, encoded: an echo of the header is scrubbed too
    return urlunsplit(parts._replace(netloc=host)), "Basic " + token


def health_ok(base: str, path: str) -> bool:
    try:
        status, _ = http_json(base + path, timeout=3.0)
    except ProbeError:
        return False
    return status == 200


def list_models(base: str) -> list[str]:
    status, data = http_json(base + "/v1/models", timeout=5.0)
    if status != 200 or not isinstance(data, dict):
        raise ProbeError(f"/v1/models answered {status}")
    return [str(m.get("id")) for m in data.get("data") or [] if isinstance(m, dict)]


def short_generation(base: str, model: str, timeout: float) -> str | None:
    """One real 4-token completion; None when it worked, else why not."""
    body = {"model": model, "prompt": "Hello, my name is", "max_tokens": 4, "temperature": 0.0}
    try:
        status, data = http_json(base + "/v1/completions", body=body, timeout=timeout)
    except ProbeError as e:
        return f"generation request failed: {e}"
    if status != 200:
        return f"generation answered HTTP {status}: {str(data)[:300]}"
    if not isinstance(data, dict) or not data.get("choices"):
        return f"generation answer has no choices: {str(data)[:300]}"
    return None


def server_version(base: str) -> str | None:
    """Engine version from the server itself: vLLM /version, SGLang /server_info, llama.cpp /props."""
    for path, keys in (
        ("/version", ("version",)),
        ("/server_info", ("version",)),
        ("/get_server_info", ("version",)),
        ("/props", ("build_info",)),
    ):
        try:
            status, data = http_json(base + path, timeout=3.0)
        except ProbeError:
            continue
        if status == 200 and isinstance(data, dict):
            for k in keys:
                if data.get(k):
                    return str(data[k])
    return None
