"""Secrets: what counts as one, and keeping every known one out of what specsweep writes or prints.

Secrets are found by where a value stands, not only by how its name looks:

- a value that came from a ``${VAR}`` reference (shown as ``${VAR}``),
- the value after a secret-like flag (``--api-key X``, ``--bearer X``, ``--pass X``, ``--token=X``),
  a header-like argument (``--header "Authorization: Bearer X"``, ``-H "Cookie: X"``),
- URL userinfo (``postgres://u:PW@host``: the password), query and matrix parameters
  (``?api_key=X``, ``;api_key=X``: every value),
- a ``NAME=VALUE``, ``"name": "value"`` or ``name: value`` pair with a secret-like name, wherever
  it stands: an argv element (``-e VLLM_API_KEY=X``), the value of ``--flag=value``
  (``--header=X-Api-Key: X``), a JSON or YAML document inside an env value or a string
  (``ENGINE_CONFIG='{"api_key": "X"}'``), a line of a copied result file,
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
# "...token" words that name a tokenizer's special token, not a credential (eos_token: </s>)
_SPECIAL_TOKENS = frozenset({"pad", "eos", "bos", "unk", "sep", "cls", "mask", "stop", "start", "end"})
# Flags whose value is a header ("Name: value"): the value part is hidden whatever the name.
_HEADER_FLAGS = frozenset({"--header", "-h", "--headers", "--http-header", "--extra-header"})
# one line: a multi-line value is a document (YAML), whose pairs ``_KV`` reads one by one
_HEADER_ARG = re.compile(r"^\s*([A-Za-z0-9_-]+)[ \t]*:[ \t]*([^\n]+?)\s*$")
_CREDENTIAL = re.compile(r"\b(Bearer)\s+([A-Za-z0-9._~+/=:-]{8,})", re.I)
_TOKEN_FORMATS = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{8,}|gh[pousr]_[A-Za-z0-9]{8,}|github_pat_[A-Za-z0-9_]{8,}"
    r"|xox[abpr]-[A-Za-z0-9-]{8,}|AKIA[A-Z0-9]{12,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_.-]+)"
)
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)")
# the query of a URL (``scheme://host/path?api_key=X&sig=Y``): every value is treated as a secret
# (up to a space, a quote or a closing parenthesis: a URL in prose)
_URL_QUERY = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*\?)([^\s#\"'<>)]*)")
# matrix parameters of a URL's path (``scheme://host/v1;api_key=X;sig=Y``): every value hidden
_URL_MATRIX = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?#;\"'<>)]*)(;[^\s?#\"'<>)]*)")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# a name and its value, as text shows them: ``NAME=VALUE``, ``"name": "value"``, ``name: value``,
# ``'name': 'value'``, ``Name: Bearer X`` (the credential after an auth scheme is the value)
_KV = re.compile(
    r"""(?P<q>["']?)(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P=q)[ \t]*(?P<sep>[:=])[ \t]*"""
    r"""(?P<scheme>(?:Bearer|Basic|Token|Digest)[ \t]+)?"""
    r"""(?:"(?P<dq>(?:[^"\\\n]|\\.)*)"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s,;&{}\[\]()"'][^\s,;&}\]"']*))""",
    re.I,
)

_lock = threading.Lock()
_known: dict[str, str] = {}  # secret value -> what is written instead
_written: dict[str, str] = {}  # a string ${VAR} expansion made -> the string as written (any length)
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


def register_expansion(expanded: str, written: str) -> None:
    """A string that ``${VAR}`` references became (``desc ${NOTE}`` -> ``desc abc``): ``as_written``
    gives the form written in the file back, whatever its length, and text is scrubbed of it."""
    with _lock:
        _written[expanded] = written
    register(expanded, written)


def as_written(value: Any) -> Any:
    """A value as the experiment file wrote it: a string made by ``${VAR}`` expansion gives back its
    ``${VAR}`` form (also when the value is too short to be searched for in text); lists and mappings
    are mapped through; anything else is returned as it is."""
    if isinstance(value, str):
        return _written.get(value, value)
    if isinstance(value, Mapping):
        return {k: as_written(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_written(v) for v in value]
    return value


def known() -> dict[str, str]:
    with _lock:
        return dict(_known)


def adopt(secrets: Mapping[str, str]) -> None:
    """Register what another process knows (``known()`` there): a client worker scrubs what it
    cuts short (``clip``) of the same secrets as its parent."""
    for value, placeholder in secrets.items():
        register(value, placeholder)


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Tests: secrets registered within are forgotten after (the registry is process-wide)."""
    global _pattern
    saved, saved_written = known(), dict(_written)
    try:
        yield
    finally:
        with _lock:
            _known.clear()
            _known.update(saved)
            _written.clear()
            _written.update(saved_written)
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
    text = _URL_MATRIX.sub(lambda m: m.group(1) + _hide_matrix(m.group(2)), text)
    text = _URL_QUERY.sub(lambda m: m.group(1) + _hide_query(m.group(2)), text)
    text = _USERINFO.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    return hide_pairs(text)


def _pairs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, value) of each value under a secret-like name in ``text`` (``_KV``). A pair
    whose name is not secret-like is stepped into, not over: ``--header=X-Api-Key: V`` holds one."""
    pos = 0
    while True:
        m = _KV.search(text, pos)
        if m is None:
            return
        group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
        value = m.group(group)
        if looks_secret(m.group("name")) and _hideable(value):
            yield m.start(group), m.end(group), value
            pos = m.end()
        else:
            pos = m.start("sep") + 1


def _hideable(value: str) -> bool:
    return bool(value) and value != REDACTED and not _ENV_REF.fullmatch(value) and not _plain_number(value)


def hide_pairs(text: str) -> str:
    """``text`` with the value of every pair under a secret-like name (``_KV``) replaced."""
    if ":" not in text and "=" not in text:
        return text
    out, last = [], 0
    for start, end, _ in _pairs(text):
        out += [text[last:start], REDACTED]
        last = end
    return "".join(out) + text[last:] if out else text


def pair_secrets(text: str) -> list[str]:
    """The values under secret-like names in ``text`` (``_KV``): ``-e API_KEY=X``, ``{"token": "X"}``."""
    if ":" not in text and "=" not in text:
        return []
    return [v for _, _, v in _pairs(text)]


def _hide_query(query: str) -> str:
    """``a=1&b=X`` -> ``a=***&b=***``; an empty value stays empty, a bare word is hidden whole."""
    parts = []
    for part in query.split("&"):
        name, eq, value = part.partition("=")
        if not eq:
            parts.append(REDACTED if name and name != REDACTED else name)
        else:
            parts.append(f"{name}={REDACTED}" if value else part)
    return "&".join(parts)


def _hide_matrix(params: str) -> str:
    """``;a=1;b=X`` -> ``;a=***;b=***`` (a bare ``;word`` stays: it names, it holds no value)."""
    out = []
    for part in params.split(";"):
        name, eq, value = part.partition("=")
        out.append(f"{name}={REDACTED}" if eq and value else part)
    return ";".join(out)


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
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()) if w]
    if any(w in _SECRET_WORDS for w in words):
        return True
    # HF_TOKEN, accessToken, X_AUTH_TOKEN: a name *ending* in a token is one; speculative_token_map
    # (SGLang's draft vocabulary file), token_ids or eos_token are not
    return (
        bool(words) and words[-1].endswith("token") and not (len(words) > 1 and words[-2] in _SPECIAL_TOKENS)
    )


def url_secrets(url: str) -> list[str]:
    """The secrets a URL holds: its userinfo password (``scheme://user:PW@host``) and every query
    value (``?api_key=X``), decoded."""
    if "://" not in url:
        return []
    try:
        parts = urlsplit(url)
        out = [unquote(parts.password)] if parts.password else []
    except ValueError:
        return []
    for part in parts.query.split("&"):
        name, eq, value = part.partition("=")
        if eq and value:
            out += [value, unquote(value)]
        elif name and not eq:
            out.append(name)
    for part in parts.path.split(";")[1:]:
        name, eq, value = part.partition("=")
        if eq and value:
            out += [value, unquote(value)]
    return out


def redact_url(url: str) -> str:
    """``scheme://user:***@host/path?key=***``; the password and the query values are registered."""
    for v in url_secrets(url):
        register(v)
    return scrub_text(url)


def secret_values(argv: Iterable[str]) -> list[str]:
    """The secret values an argv holds: after a secret flag, header values, credentials, URL passwords."""
    out: list[str] = []
    args = _split_flag_values(argv)
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
        out += url_secrets(a)
        out += pair_secrets(a)
    for v in list(out):  # "Bearer X" as a whole, and X
        m = _CREDENTIAL.fullmatch(v.strip())
        if m:
            out.append(m.group(2))
    return out


def _split_flag_values(argv: Iterable[str]) -> list[str]:
    """``--flag=value`` as the two arguments ``--flag value`` (the value then stands where a
    value stands: a header, a JSON document, a URL), other arguments as they are."""
    out: list[str] = []
    for a in argv:
        if a.startswith("-") and "=" in a:
            out += a.split("=", 1)
        else:
            out.append(a)
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
        elif a.startswith("-") and "=" in a:
            flag, value = a.split("=", 1)
            out.append(flag + "=" + (REDACTED if looks_secret(flag) else _redact_header(value, flag)))
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


def redact_tree(obj: Any, *, key: str = "", secret: bool = False) -> Any:
    """A JSON-like tree with every value under an auth-like key ``***``, at any depth below it
    (``auth: {value: X}`` hides X), and secrets registered."""
    secret = secret or bool(key and looks_secret(key))
    if isinstance(obj, Mapping):
        return {k: redact_tree(v, key=str(k), secret=secret) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        if key in ("args", "argv") and not secret and all(isinstance(a, str) for a in obj):
            return redact_argv(list(obj))
        return [redact_tree(v, key=key, secret=secret) for v in obj]
    if secret and obj is not None and not isinstance(obj, bool):
        register(str(obj))
        return REDACTED
    if isinstance(obj, str):
        for v in secret_values([obj]):
            register(v)
    return obj


def redact_config(config: dict[str, Any]) -> dict[str, Any]:
    """An experiment dump for the manifest: auth-like keys, secret flags, headers and URL passwords
    hidden, ``${VAR}`` values written as ``${VAR}`` (whole strings as the file wrote them, whatever
    their length), and every other known secret scrubbed."""
    out: dict[str, Any] = as_written(dict(config))
    servers = []
    for srv in out.get("servers") or []:
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
