"""A managed server process: free port, launch (argv, own session), readiness, log capture, teardown.

Readiness = process alive + ``health_path`` answers 200 + ``/v1/models`` lists a model (the configured
``served_model`` when set) + one real short generation. Teardown signals the whole process group
(engines fork workers): SIGTERM, wait ``stop_s``, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from specsweep.console.terminal import visible_controls
from specsweep.errors import ServerError
from specsweep.experiment.argv import base_url, build_argv, build_env, engine_of, version_argv
from specsweep.experiment.config import ServerConfig
from specsweep.servers import affinity, readiness, reap, spawn
from specsweep.servers.logpump import LogPump
from specsweep.store import redact

log = logging.getLogger(__name__)


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("0.0.0.0", "") else "127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_free(host: str, port: int) -> bool:
    """Whether nothing listens on host:port (SO_REUSEADDR: a closed socket's TIME_WAIT does not count)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def tail(path: Path, n_lines: int = 40, max_bytes: int = 16384) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-n_lines:])


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class ManagedServer:
    """One configuration's server; ``start`` may be called again after it died (a restart)."""

    def __init__(
        self,
        cfg: ServerConfig,
        log_path: Path,
        *,
        ready_timeout_s: float = 900.0,
        stop_s: float = 30.0,
        on_launch: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """``on_launch(record)`` journals each launch durably (``servers.reap``): called with its
        identity before the process starts (an error there starts nothing), and with its pid after."""
        self.cfg = cfg
        self.on_launch = on_launch
        self.log_path = log_path
        self.ready_timeout_s = cfg.spec.ready_timeout_s or ready_timeout_s
        self.stop_s = stop_s
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.port: int | None = None
        self.base_url = ""
        self.model_id: str | None = None
        self.version: str | None = None
        self.argv: list[str] | None = None
        self.launches: list[dict[str, Any]] = []
        self.cpus: frozenset[int] | None = None  # the cores it is pinned to (pinned_cpus)
        self.checks: list[dict[str, Any]] = []  # checks of the running server (orchestrate records them)
        self._pump: LogPump | None = None
        # register this config's secrets (auth-like params and env, secret flags, URL passwords),
        # so whatever echoes them is scrubbed wherever this runs (a Ray worker too)
        redact.redact_config({"servers": [cfg.spec.model_dump(mode="json")], "params": dict(cfg.params)})

    # ---- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """Launch and wait until ready; raises ServerError with the log tail (process stopped)."""
        spec = self.cfg.spec
        if spec.kind == "url":
            self.base_url = base_url(self.cfg, 0)
            self.launches.append({"started_at": now_iso(), "pid": None, "port": self.port})
        elif spec.port and not port_free(spec.host, spec.port):
            # readiness would otherwise probe (and the cells measure) whoever listens there
            raise ServerError(
                f"{self.cfg.label}: port {spec.port} on {spec.host} is already in use (another "
                "server listens there); stop it or set another 'port' (or none: a free one is picked)"
            )
        try:
            if spec.kind != "url":
                self._spawn()  # a stop signal held meanwhile is raised here: the process is stopped
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        if self.version is None:
            self.version = readiness.server_version(self.base_url) or self._version_from_command()
        self.launches[-1]["ready_at"] = now_iso()

    def pinned_cpus(self) -> frozenset[int] | None:
        """The cores the config names for its engine (``servers.affinity``), which the launch pins
        it to; None: not pinned (none named, or no affinity on this OS). Raises ServerError on a
        malformed list or cores this host lacks."""
        argv = build_argv(self.cfg, 1) or []
        try:
            cpus = affinity.engine_cpus(engine_of(self.cfg, argv), argv, build_env(self.cfg, 1))
        except ValueError as e:
            raise ServerError(f"{self.cfg.label}: {e}") from None
        if cpus is None or not affinity.supported():
            return None
        host = affinity.host_cpus()
        if not cpus <= host:
            raise ServerError(
                f"{self.cfg.label}: the engine's cores {affinity.format_cpu_list(cpus)} are not all on this "
                f"host; it has CPU(s) {affinity.format_cpu_list(host)}"
            )
        return cpus

    def _spawn(self) -> None:
        """Journal the launch, then start the process (argv, own session, log pump)."""
        spec = self.cfg.spec
        cpus = self.cpus = self.pinned_cpus()
        self.port = spec.port or free_port(spec.host)
        self.argv = build_argv(self.cfg, self.port)
        self.base_url = base_url(self.cfg, self.port)
        env = build_env(self.cfg, self.port)
        launch_id = uuid.uuid4().hex
        record = {"label": self.cfg.label, "at": now_iso(), **reap.launch_record(launch_id)}
        env[reap.MARK] = launch_id  # lets the next run recognise this launch's processes
        env[reap.OWNER] = record["owner"]  # ... once the specsweep that launched it is gone
        if self.on_launch is not None:  # on disk before there is anything to reap
            self.on_launch(record)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        header = f"\n===== specsweep: launch {len(self.launches) + 1} of {self.cfg.label} at {now_iso()}\n"
        header += f"===== argv: {redact.redact_argv(self.argv or [])}\n"
        header += f"===== env (experiment): {redact.redact_env(dict(spec.env))}\n"
        # a label or argv from the file: ESC, BEL or NUL shown escaped, never written raw
        self._log.write(visible_controls(redact.scrub_text(header)).encode())
        self._log.flush()
        read_fd, write_fd = os.pipe()
        with spawn.held_stop_signals():  # a Ctrl-C meanwhile is raised after: process recorded
            try:
                self.proc = spawn.popen(self.argv or [], stdout=write_fd, env=env, cpus=cpus)
            except (OSError, subprocess.SubprocessError) as e:  # SubprocessError: pinning failed
                os.close(read_fd)
                self._close_log()
                why = getattr(e, "strerror", None) or str(e)
                if isinstance(e, subprocess.SubprocessError) and cpus:
                    why = f"cannot pin it to CPU(s) {affinity.format_cpu_list(cpus)} here ({e})"
                raise ServerError(
                    f"{self.cfg.label}: cannot start {self.argv[0] if self.argv else '?'}: {why}"
                ) from e
            finally:
                os.close(write_fd)
            self._pump = LogPump(read_fd, self._log)
            self.launches.append(
                {"started_at": now_iso(), "pid": self.proc.pid, "port": self.port,
                 "cpus": affinity.format_cpu_list(cpus) if cpus else None,
                 **reap.identity(self.proc.pid, launch_id)}
            )  # fmt: skip
            self._journal_pid(record, self.proc.pid)

    def _journal_pid(self, record: dict[str, Any], pid: int) -> None:
        """The leader's pid (its session's id) in the journal too: best effort, the launch id is
        what counts (the process is running: a failed write must not lose it)."""
        if self.on_launch is None:
            return
        try:
            self.on_launch({**record, "pid": pid})
        except OSError as e:
            log.warning(
                "%s: could not journal the pid of launch %s: %s", self.cfg.label, record["launch_id"], e
            )

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        spec = self.cfg.spec
        stage = "health"
        last = ""
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise self._error(f"exited with code {self.proc.returncode} before it was ready")
            if time.monotonic() > deadline:
                raise self._error(f"not ready after {self.ready_timeout_s:g} s (waiting for {stage}: {last})")
            if stage == "health":
                if readiness.health_ok(self.base_url, spec.health_path):
                    stage = "models"
                else:
                    last = f"{spec.health_path} not 200 yet"
            if stage == "models":
                try:
                    models = readiness.list_models(self.base_url)
                except readiness.ProbeError as e:
                    last = str(e)
                    models = []
                if spec.served_model and models and spec.served_model not in models:
                    raise self._error(f"model {spec.served_model!r} not listed; the server lists {models}")
                if models:
                    self.model_id = spec.served_model or models[0]
                    stage = "generation"
                elif not last:
                    last = "/v1/models lists no model yet"
            if stage == "generation":
                if not spec.ready_generate:
                    return
                # a hung probe must not outlive ready_timeout_s (the deadline is checked between probes)
                left = max(1.0, min(60.0, deadline - time.monotonic()))
                why = readiness.short_generation(self.base_url, self.model_id or "", timeout=left)
                if why is None:
                    return
                last = why
            time.sleep(0.2)

    def _version_from_command(self) -> str | None:
        argv = version_argv(self.cfg)
        if not argv:
            return None
        try:
            out = subprocess.run(
                argv, capture_output=True, timeout=30, env=build_env(self.cfg, self.port or 0), check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        text = (out.stdout or out.stderr).decode("utf-8", "replace").strip()
        return text.splitlines()[-1].strip()[:200] if text and out.returncode == 0 else None

    def alive(self) -> bool:
        if self.cfg.spec.kind == "url":
            return True
        return self.proc is not None and self.proc.poll() is None

    def exited_within(self, timeout: float) -> bool:
        """True if the process has exited or exits within ``timeout`` s (False for kind 'url')."""
        if self.proc is None:
            return self.cfg.spec.kind != "url"
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc is not None else None

    def stop(self) -> None:
        """Stop the whole process group: SIGTERM, wait stop_s, SIGKILL. Safe to call twice.

        Never cut short: a Ctrl-C or SIGTERM meanwhile (an impatient second one) is held and raised
        once the group is gone (``spawn.held_stop_signals``)."""
        with spawn.held_stop_signals():
            self._stop()

    def _stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            pgid = proc.pid  # start_new_session: the leader's pid is the group id
            deadline = time.monotonic() + self.stop_s
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=self.stop_s)
            # Workers may outlive the leader: give the group the rest of the grace, then SIGKILL it.
            while _group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            if self.launches:
                self.launches[-1]["stopped_at"] = now_iso()
                self.launches[-1]["returncode"] = proc.returncode
        self._close_log()

    def _close_log(self) -> None:
        if self._pump is not None:
            self._pump.close()
            self._pump = None
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None

    def log_tail(self, n_lines: int = 40) -> str:
        if self._pump is not None:
            self._pump.flush()
        return redact.scrub_text(tail(self.log_path, n_lines))

    def _error(self, what: str) -> ServerError:
        t = self.log_tail()
        msg = f"server {self.cfg.label} {what}"
        if t:
            msg += f"\n--- last lines of {self.log_path} ---\n{t}"
        return ServerError(msg)

    def describe(self) -> dict[str, Any]:
        """For the manifest: argv (secrets redacted), URL, model, version, launches."""
        return {
            "name": self.cfg.name,
            "kind": self.cfg.spec.kind,
            "argv": redact.redact_argv(self.argv) if self.argv else None,
            "env": redact.redact_env(dict(self.cfg.spec.env)),
            "base_url": redact.redact_url(self.base_url),
            "model_id": self.model_id,
            "version": self.version,
            "log": self.log_path.name,
            "launches": list(self.launches),
            "preflight": list(self.checks),
        }


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
