"""specsweep.store.redact: what counts as a secret, and that a known one never survives scrubbing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specsweep.store import redact


@pytest.fixture(autouse=True)
def _own_registry() -> Iterator[None]:
    with redact.isolated():
        yield


SECRET_NAMES = ["HF_TOKEN", "PGPASSWORD", "GITHUB_PAT", "SESSION_COOKIE", "AUTHORIZATION", "--api-key",
                "--bearer", "--pass", "api_key", "apiKey", "accessToken", "AWS_SECRET_ACCESS_KEY", "DB_PWD"]  # fmt: skip
PLAIN_NAMES = ["--spec-tokens", "--tokenizer", "PATH", "PWD", "OLDPWD", "max_tokens", "DATABASE_URL",
               "KEYBOARD", "served_model", "health_path", "kv_cache_dtype", "--num-speculative-tokens"]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert redact.looks_secret(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_plain_names(name: str) -> None:
    assert not redact.looks_secret(name)


def test_argv_hides_flags_headers_and_url_passwords() -> None:
    argv = ["srv", "--header", "Authorization: Bearer tok-123456789", "--bearer", "b-secret-1", "--pass", "pw",
            "--db", "postgres://u:dbpw-1234@h/x", "X-Api-Key: xk-123456", "--api-key=kk-123456", "--port", "8"]  # fmt: skip
    assert redact.redact_argv(argv) == [
        "srv", "--header", "Authorization: ***", "--bearer", "***", "--pass", "***",
        "--db", "postgres://u:***@h/x", "X-Api-Key: ***", "--api-key=***", "--port", "8",
    ]  # fmt: skip
    # each value is now known: an echo elsewhere is scrubbed ("pw" is too short to search for)
    echo = "got tok-123456789 b-secret-1 dbpw-1234 xk-123456 kk-123456 on port 8"
    assert redact.scrub_text(echo) == "got *** *** *** *** *** on port 8"


def test_env_ref_values_are_written_as_the_reference() -> None:
    redact.register_env_ref("MY_REF", "ref-value-0042")
    assert redact.scrub_obj({"a": ["x ref-value-0042 y"], "n": 3}) == {"a": ["x ${MY_REF} y"], "n": 3}


def test_tree_hides_auth_like_keys_anywhere() -> None:
    tree = {"client": {"extra_request_body": {"api_key": "body-key-777", "nested": [{"token": 12345}]}},
            "grid": {"session": ["s-aaaa", "s-bbbb"]}, "plain": "ok"}  # fmt: skip
    out = redact.redact_tree(tree)
    assert out["client"]["extra_request_body"]["api_key"] == "***"
    assert out["client"]["extra_request_body"]["nested"][0]["token"] == "***"
    assert out["grid"]["session"] == ["***", "***"] and out["plain"] == "ok"
    assert "body-key-777" not in redact.scrub_text("echo body-key-777")


@settings(max_examples=200, deadline=None)
@given(
    # no "*": a secret made of the placeholder's own characters could re-form around it
    secret=st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="*"),
        min_size=redact.MIN_LEN,
    ),
    before=st.text(),
    after=st.text(),
)
def test_a_known_secret_never_survives(secret: str, before: str, after: str) -> None:
    if redact._plain_number(secret):
        return
    with redact.isolated():
        redact.register(secret)
        out = redact.scrub_text(before + secret + after)
        assert secret not in out
        assert redact.scrub_obj({"k": [before + secret + after]}) == {"k": [out]}


def test_short_values_and_result_keys_are_left_alone() -> None:
    """RAY_AUTH_MODE=token (Ray sets it) once turned every summary key ``total_output_tokens`` into
    ``total_output_***s``: short values are not searched for, and identifier keys never scrubbed."""
    redact.register_environ({"RAY_AUTH_MODE": "token", "SESSION_ID": "output_tokens"})
    row = {"total_output_tokens": 5, "label": "output_tokens x", "s(dm=output_tokens)": 1}
    assert redact.scrub_obj(row) == {"total_output_tokens": 5, "label": "*** x", "s(dm=***)": 1}


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["-e", "VLLM_API_KEY=dk-12345678"], ["-e", "VLLM_API_KEY=***"]),  # NAME=VALUE, docker style
        (["--header=X-Api-Key: hk-12345678"], ["--header=X-Api-Key: ***"]),  # --flag=value: a header
        (['--cfg={"api_key": "jk-12345678", "n": 3}'], ['--cfg={"api_key": "***", "n": 3}']),  # JSON value
        (["--cfg", "auth:\n  token: yk-12345678\n"], ["--cfg", "auth:\n  token: ***\n"]),  # YAML value
        (["--url", "http://h:1/v1;api_key=mk-12345678;x=1"], ["--url", "http://h:1/v1;api_key=***;x=***"]),
        (["-e", "PATH=/usr/bin", "--max-tokens=8"], ["-e", "PATH=/usr/bin", "--max-tokens=8"]),  # plain
    ],
)
def test_a_secret_is_found_by_what_the_value_looks_like_and_where_it_sits(
    argv: list[str], shown: list[str]
) -> None:
    """Issue 38, defect 2: a rule on shapes (NAME=VALUE, --flag=value, JSON/YAML pairs in a string,
    URL matrix parameters), not a list of flags; each value found is known from then on."""
    assert redact.redact_argv(argv) == shown
    for a in argv:
        for secret in ("dk-", "hk-", "jk-", "yk-", "mk-"):
            if secret in a:
                assert redact.scrub_text(f"echo {secret}12345678 .") == "echo *** ."


def test_json_and_yaml_inside_an_env_value_are_hidden_and_known() -> None:
    env = {
        "ENGINE_CONFIG": '{"api_key": "ek-12345678", "workers": 2}',
        "Y": "auth:\n  password: 'yp-12345678'",
    }
    assert redact.redact_env(env) == {
        "ENGINE_CONFIG": '{"api_key": "***", "workers": 2}',
        "Y": "auth:\n  password: '***'",
    }
    assert redact.scrub_text("ek-12345678 yp-12345678") == "*** ***"


def test_pairs_leave_ordinary_settings_alone() -> None:
    text = (
        "max_tokens: 5 token=None speculative_token_map=/x eos_token: </s> Authorization: Bearer abcdefghij"
    )
    assert (
        redact.scrub_text(text)
        == "max_tokens: 5 token=None speculative_token_map=/x eos_token: </s> Authorization: Bearer ***"
    )
    assert redact.scrub_text("Authorization: Basic dXNlcjpwYXNzd29yZA==") == "Authorization: Basic ***"
