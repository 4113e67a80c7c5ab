"""Secrets: what counts as one, and keeping every known one out of what specsweep writes or prints.

Secrets are found by where a value stands, not only by how its name looks:

- a value that came from a ``${VAR}`` reference (shown as ``${VAR}``),
- the value after a secret-like flag (``--api-key X``, ``--bearer X``, ``--pass X``, ``--token=X``),
  a header-like argument (``--header "Authorization: Bearer X"``, ``-H "Cookie: X"``),
- URL userinfo (``postgres://u:PW@host``: the password),
- any value under an auth-like key (env ``PGPASSWORD``, ``GITHUB_PAT``, ``SESSION_COOKIE``,
  ``params.api_key``, ``client.extra_request_body.api_key``, ...),
- a ``Bearer``/``Basic`` credential or a well-known token format (``sk-``, ``hf_``, ``ghp_``, ...)
  anywhere.

Every secret found is registered (process-wide) and ``scrub_text``/``scrub_obj`` replace each
known value wherever it appears, so text that merely *contains* one (a server echoing the bearer
token in an error body, a log tail, a URL) is cleaned at every sink: the run dir's manifest,
summary, records and logs, and the terminal. Values shorter than ``MIN_LEN`` are hidden where they
stand but not searched for in free text (a short "secret" would erase ordinary words).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit

REDACTED = "***"
# Shorter values are hidden where they stand but not searched for in other text: a short value
# ("token", the RAY_AUTH_MODE Ray sets) would erase ordinary words and even result keys.
MIN_LEN = 8
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Substrings that make a name secret wherever they appear (PGPASSWORD, X_AUTH_TOKEN, SESSION_COOKIE).
_SECRET_PARTS = ("password", "passwd", "secret", "auth", "cookie", "credential", "apikey",
                 "bearer", "privatekey", "signature", "passphrase")  # fmt: skip
# Whole words only (API_KEY, --pass, GITHUB_PAT; not KEYBOARD, PASSES, PATH).
_SECRET_WORDS = frozenset({"key", "pass", "pwd", "pat", "session", "sid", "dsn", "sig", "jwt", "otp"})
_NOT_SECRET = frozenset({"pwd", "oldpwd"})  # the shell's working directories
# Flags whose value is a header ("Name: value"): the value part is hidden whatever the name.
_HEADER_FLAGS = frozenset({"--header", "-h", "--headers", "--http-header", "--extra-header"})
_HEADER_ARG = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*:\s*(.+)$", re.S)
_CREDENTIAL = re.compile(r"\b(Bearer)\s+([A-Za-z0-9._~+/=:-]{8,})", re.I)
_TOKEN_FORMATS = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,}"
    r"|xox[abpr]-[A-Za-z0-9-]{8,}|AKIA[A-Z0-9]{12,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_.-]+)"
)
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_lock = threading.Lock()
_known: dict[str, str] = {}  # secret value -> what is written instead
_pattern: re.Pattern[str] | None = None


# ---- the registry ------------------------------------------------------------------------------
def register(value: Any, placeholder: str = REDACTED) -> None:
    """Remember a secret value: from now on ``scrub_*`` replaces it with ``placeholder``. Its
    percent-encoded form (as in a URL) is registered too. Short or numeric values are skipped."""
    global _pattern
    if not isinstance(value, str) or len(value) < MIN_LEN or _plain_number(value):
        return
    with _lock:
        changed = False
        for v in {value, quote(value, safe=""), unquote(value)}:
            if len(v) >= MIN_LEN and v not in _known:
                _known[v] = placeholder
                changed = True
        if changed:
            _pattern = None


def register_env_ref(var: str, value: str) -> None:
    """A value that came from ``${VAR}``: written as ``${VAR}``."""
    register(value, "${" + var + "}")


def register_environ(environ: Mapping[str, str] | None = None) -> None:
    """Secrets of specsweep's own environment (OPENAI_API_KEY, the client's bearer token; HF_TOKEN
    the servers inherit; URL passwords): a server may print or echo them."""
    import os

    for v in env_secrets(os.environ if environ is None else environ):
        register(v)


def known() -> dict[str, str]:
    with _lock:
        return dict(_known)


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Tests: secrets registered within are forgotten after (the registry is process-wide)."""
    global _pattern
    saved = known()
    try:
        yield
    finally:
        with _lock:
            _known.clear()
            _known.update(saved)
            _pattern = None


def _plain_number(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return v.lower() in ("true", "false", "yes", "no", "null", "none")
    return True


def _compiled() -> re.Pattern[str] | None:
    global _pattern
    with _lock:
        if _pattern is None and _known:
            # longest first: a secret that contains another is replaced whole
            alts = sorted(_known, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(a) for a in alts))
        return _pattern


# ---- scrubbing ---------------------------------------------------------------------------------
def scrub_text(text: str) -> str:
    """``text`` with every known secret, credential (``Bearer X``), token-shaped string and URL
    password replaced."""
    if not text:
        return text
    pat = _compiled()
    if pat is not None:
        table = _known
        text = pat.sub(lambda m: table.get(m.group(0), REDACTED), text)
    text = _CREDENTIAL.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _TOKEN_FORMATS.sub(REDACTED, text)
    return _USERINFO.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)


def scrub_obj(obj: Any) -> Any:
    """A copy of a JSON-like value with every string scrubbed; other values as they are. Keys are
    scrubbed too (a label keys the manifest's servers) unless they are identifiers: a result's
    schema (``total_output_tokens``) is never rewritten."""
    if isinstance(obj, str):
        return scrub_text(obj)
    if isinstance(obj, Mapping):
        return {_scrub_key(k): scrub_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub_obj(v) for v in obj]
    return obj


# ---- finding secrets by where they stand -------------------------------------------------------
def _scrub_key(k: Any) -> Any:
    return scrub_text(k) if isinstance(k, str) and not _IDENTIFIER.fullmatch(k) else k


def looks_secret(name: str) -> bool:
    """PGPASSWORD, GITHUB_PAT, --api-key, SESSION_COOKIE, AUTHORIZATION: yes; --spec-tokens: no."""
    low = name.lower().lstrip("-")
    if low in _NOT_SECRET:
        return False
    if any(p in re.sub(r"[^a-z0-9]+", "", low) for p in _SECRET_PARTS):
        return True
    words = re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower())
    return any(w in _SECRET_WORDS or w.endswith("token") for w in words)


def url_secret(url: str) -> str | None:
    """The password of a URL's userinfo (``scheme://user:PW@host``), if any."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return unquote(parts.password) if parts.password else None


def redact_url(url: str) -> str:
    """``scheme://user:***@host/...``; the password is registered."""
    pw = url_secret(url)
    if pw:
        register(pw)
    return scrub_text(url)


def secret_values(argv: Iterable[str]) -> list[str]:
    """The secret values an argv holds: after a secret flag, header values, credentials, URL passwords."""
    out: list[str] = []
    args = list(argv)
    for i, a in enumerate(args):
        prev = args[i - 1] if i else ""
        if _secret_flag(prev):
            out.append(a)
        elif prev.lower() in _HEADER_FLAGS or (_HEADER_ARG.match(a) and looks_secret(a.split(":", 1)[0])):
            m = _HEADER_ARG.match(a)
            if m:
                out.append(m.group(2).strip())
        if a.startswith("-") and "=" in a and looks_secret(a.split("=", 1)[0]):
            out.append(a.split("=", 1)[1])
        out += [m.group(2) for m in _CREDENTIAL.finditer(a)]
        pw = url_secret(a)
        if pw:
            out.append(pw)
    for v in list(out):  # "Bearer X" as a whole, and X
        m = _CREDENTIAL.fullmatch(v.strip())
        if m:
            out.append(m.group(2))
    return out


def _secret_flag(a: str) -> bool:
    """``--api-key`` (whose value is the next argument), not ``--api-key=X`` or a value."""
    return a.startswith("-") and "=" not in a and looks_secret(a)


def redact_argv(argv: list[str]) -> list[str]:
    """argv to write or print: every secret value replaced (and registered for later scrubbing)."""
    hide = {i for i in range(1, len(argv)) if _secret_flag(argv[i - 1])}
    for v in secret_values(argv):
        register(v)
    out = []
    for i, a in enumerate(argv):
        if i in hide:
            out.append(REDACTED)
        elif a.startswith("-") and "=" in a and looks_secret(a.split("=", 1)[0]):
            out.append(a.split("=", 1)[0] + "=" + REDACTED)
        else:
            out.append(_redact_header(a, argv[i - 1] if i else ""))
    return out


def _redact_header(a: str, prev: str) -> str:
    m = _HEADER_ARG.match(a)
    if m and (prev.lower() in _HEADER_FLAGS or looks_secret(m.group(1))):
        return f"{m.group(1)}: {REDACTED}"
    return scrub_text(a)


def env_secrets(env: Mapping[str, str]) -> list[str]:
    """Secret values of an environment: under secret-like names, URL passwords, credentials."""
    out = []
    for k, v in env.items():
        if looks_secret(k):
            out.append(v)
        out += secret_values([v])
    return out


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """Env to write or print: secret-named values ``***``, others scrubbed (``${VAR}`` kept as text)."""
    for v in env_secrets(env):
        if not _ENV_REF.fullmatch(v):
            register(v)
    return {k: (REDACTED if looks_secret(k) else scrub_text(v)) for k, v in env.items()}


def redact_tree(obj: Any, *, key: str = "") -> Any:
    """A JSON-like tree with every value under an auth-like key ``***`` and secrets registered."""
    if isinstance(obj, Mapping):
        return {k: redact_tree(v, key=str(k)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if key in ("args", "argv") and all(isinstance(a, str) for a in obj):
            return redact_argv(list(obj))
        return [redact_tree(v, key=key) for v in obj]
    if key and looks_secret(key) and obj is not None and not isinstance(obj, bool):
        register(str(obj))
        return REDACTED
    if isinstance(obj, str):
        for v in secret_values([obj]):
            register(v)
    return obj


def redact_config(config: dict[str, Any]) -> dict[str, Any]:
    """An experiment dump for the manifest: auth-like keys, secret flags, headers and URL passwords
    hidden, ``${VAR}`` values written as ``${VAR}``, and every other known secret scrubbed."""
    out = dict(config)
    servers = []
    for srv in config.get("servers") or []:
        srv = dict(srv)
        if isinstance(srv.get("env"), dict):
            srv["env"] = redact_env({str(k): str(v) for k, v in srv["env"].items()})
        servers.append(srv)
    out["servers"] = servers
    return scrub_obj(redact_tree(out))


def digest(values: Iterable[str], salt: str) -> str:
    """A salted, slow hash of a set of secret values: tells a change without keeping them."""
    joined = "\0".join(sorted(set(values))).encode()
    return hashlib.pbkdf2_hmac("sha256", joined, salt.encode(), 50_000).hex()[:16]


def secrets_in(obj: Any) -> list[str]:
    """The known secret values that occur in a JSON-like value (for ``digest``)."""
    pat = _compiled()
    if pat is None:
        return []
    found: set[str] = set()

    def walk(o: Any) -> None:
        if isinstance(o, str):
            found.update(pat.findall(o))
        elif isinstance(o, Mapping):
            for k, v in o.items():
                walk(k)
                walk(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)
        elif isinstance(o, (int, float)) and not isinstance(o, bool):
            found.update(pat.findall(str(o)))

    walk(obj)
    return sorted(found)
