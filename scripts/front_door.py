"""CI's first stage: the front door, as a user walks through it (issue 24).

    python3 scripts/front_door.py [--keep]

1. A fresh virtual environment with nothing but what the README's main command installs
   (`python3 -m pip install -e .`, no extras), and that command run verbatim, as the README shows it.
2. Its run dir must hold report.md and report.html that name every compared config and state
   verdicts.
3. In the same environment, every other command a user meets first must exit 0 and write its output:
   `report` in every kind and format, `import` of a real-format sglang and vLLM file, `plan` on
   examples/traffic-small.yaml (reference results) and examples/traffic-quickstart.yaml (the
   quickstart's run), `preflight examples/quickstart.yaml`, `sim predict`, and
   `check-lossless` against two simulated servers.

Only the standard library is used here: this script runs before anything is installed. Exit 0 when
every check passed; otherwise 1, naming each failed check with the command and its output's tail.
`--keep` leaves the environment and outputs in place (their folder is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def readme_main_command() -> str:
    """The README's main command: the first ```bash block under "## Quick start"."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    m = re.search(r"```bash\n(.+?)\n```", section, re.S)
    if not m:
        raise SystemExit("front door: README.md has no ```bash block under '## Quick start'")
    return m.group(1).strip()


class FrontDoor:
    def __init__(self, work: Path, venv: Path | None = None) -> None:
        self.work = work
        self.venv = venv.resolve() if venv else work / "venv"
        self.failures: list[str] = []
        self.timings: list[tuple[str, float]] = []
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env["PYTHONUNBUFFERED"] = "1"
        self.env = env

    # ---- running and checking ---------------------------------------------------------------
    def run(self, name: str, argv: Sequence[str], *, timeout: float = 600, stdout_file: Path | None = None,
            shell: bool = False) -> subprocess.CompletedProcess[str] | None:  # fmt: skip
        t0 = time.monotonic()
        print(f"front door: {name}: {argv if shell else ' '.join(map(str, argv))}", flush=True)
        try:
            p = subprocess.run(
                ["bash", "-c", str(argv)] if shell else [str(a) for a in argv],
                cwd=REPO, env=self.env, capture_output=True, text=True, timeout=timeout, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            self.fail(name, f"did not finish within {timeout:.0f} s")
            return None
        self.timings.append((name, time.monotonic() - t0))
        if stdout_file is not None:
            stdout_file.write_text(p.stdout, encoding="utf-8")
        if p.returncode != 0:
            self.fail(name, f"exit {p.returncode}\n--- stderr (tail) ---\n{p.stderr[-3000:]}\n"
                            f"--- stdout (tail) ---\n{p.stdout[-1500:]}")  # fmt: skip
            return None
        if "Traceback (most recent call last)" in p.stderr:
            self.fail(name, f"printed a traceback:\n{p.stderr[-3000:]}")
        return p

    def fail(self, name: str, why: str) -> None:
        print(f"front door: FAILED {name}: {why}", flush=True)
        self.failures.append(f"{name}: {why}")

    def check(self, name: str, ok: bool, why: str) -> None:
        if not ok:
            self.fail(name, why)

    def wrote(self, name: str, path: Path) -> None:
        self.check(name, path.is_file() and path.stat().st_size > 0, f"wrote no output to {path}")

    # ---- the stages ----------------------------------------------------------------------------
    def main_command(self) -> Path | None:
        """The README's main command in a venv with no extras; returns the run dir it made."""
        t0 = time.monotonic()
        if self.venv.exists():
            shutil.rmtree(self.venv)
        subprocess.run([sys.executable, "-m", "venv", str(self.venv)], check=True)
        self.timings.append(("venv", time.monotonic() - t0))
        results = REPO / "results"
        before = set(results.iterdir()) if results.is_dir() else set()
        p = self.run("README main command", readme_main_command(), timeout=900, shell=True)
        after = set(results.iterdir()) if results.is_dir() else set()
        new = sorted(d for d in after - before if d.is_dir())
        if p is None:
            return new[-1] if new else None
        if len(new) != 1:
            self.fail("README main command", f"expected one new run dir in {results}, found {new}")
            return new[-1] if new else None
        extras = self.run("no extras installed", [self.venv / "bin" / "python", "-m", "pip", "list",
                                                  "--format", "json"])  # fmt: skip
        if extras is not None:
            names = {d["name"].lower() for d in json.loads(extras.stdout)}
            test_only = {"pytest", "hypothesis", "ray", "tokenizers", "psutil", "deptry"} & names
            self.check("no extras installed", not test_only, f"the venv has test/extra packages: {test_only}")
        return new[0]

    def reports(self, run_dir: Path) -> None:
        manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
        labels = list((manifest.get("servers") or {}).keys()) or [
            c["label"] for c in manifest.get("configs", []) if isinstance(c, dict) and "label" in c
        ]
        self.check("run dir", bool(labels), f"no config labels in {run_dir / 'manifest.json'}")
        for fmt in ("md", "html"):
            path = run_dir / f"report.{fmt}"
            self.wrote(f"report.{fmt}", path)
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                missing = [lab for lab in labels if lab not in text and lab.replace("&", "&amp;") not in text]
                self.check(f"report.{fmt}", not missing, f"does not name the compared config(s) {missing}")
        out = self.work / "out"
        out.mkdir(exist_ok=True)
        view_json = out / "compare.json"
        if self.run("report json", ["specsweep", "report", run_dir, "--kind", "compare", "--format", "json",
                                    "-o", view_json]) and view_json.is_file():  # fmt: skip
            verdicts = find_verdicts(json.loads(view_json.read_text(encoding="utf-8")))
            self.check("verdicts", bool(verdicts), "the compare report states no verdict")
            bad = [v for v in verdicts if v.get("verdict") not in ("a", "b", "tie")]
            self.check("verdicts", not bad, f"verdicts without a/b/tie: {bad[:3]}")
            md = (
                (run_dir / "report.md").read_text(encoding="utf-8")
                if (run_dir / "report.md").is_file()
                else ""
            )
            self.check("verdicts", "tie" in md.lower() or "win" in md.lower(), "report.md states no verdict")
        for kind in ("compare", "sweep"):
            for fmt in ("md", "html", "json", "table"):
                for lang in ("en", "zh") if (kind, fmt) == ("compare", "html") else ("en",):
                    dest = out / f"{kind}.{lang}.{fmt}"
                    extra = ["--method", "dspark"] if kind == "sweep" else []
                    name = f"report --kind {kind} --format {fmt} --lang {lang}"
                    argv = [
                        "specsweep",
                        "report",
                        run_dir,
                        "--kind",
                        kind,
                        "--format",
                        fmt,
                        "--lang",
                        lang,
                        *extra,
                    ]
                    if fmt == "table":  # the terminal format: to stdout
                        if self.run(name, argv, stdout_file=dest):
                            self.wrote(name, dest)
                    elif self.run(name, [*argv, "-o", dest]):
                        self.wrote(name, dest)

    def imports(self) -> list[Path]:
        """Real-format result files of sglang.bench_serving and vllm bench serve (key sets as the
        clients write them: tests/importers/realformats.py), imported into run dirs."""
        sys.path.insert(0, str(REPO / "tests" / "importers"))
        import realformats  # type: ignore[import-not-found]

        files = self.work / "imports"
        files.mkdir(exist_ok=True)
        sg = files / "sglang.jsonl"
        sg.write_text("".join(json.dumps({**realformats.SG_2025, "tag": f"t{i}"}) + "\n" for i in range(2)))
        vl = files / "vllm.json"
        vl.write_text(json.dumps(realformats.VLLM_2024))
        made = []
        dest = files / "results"
        for tool, path, label, extra in (
            ("sglang", sg, "DSpark(st=3)", ["--method", "dspark", "--param", "spec_tokens=3"]),
            ("vllm", vl, "vLLM-ngram", ["--method", "ngram", "--scenario", "rnd"]),
        ):
            if self.run(
                f"import {tool}", ["specsweep", "import", tool, path, "--label", label, *extra, "-o", dest]
            ):
                runs = [d for d in dest.iterdir() if (d / "summary.jsonl").is_file()] if dest.is_dir() else []
                self.check(f"import {tool}", len(runs) > len(made), f"made no run dir in {dest}")
                made = runs
        return made

    def others(self, run_dir: Path) -> None:
        out = self.work / "out"
        # the quickstart's own run plans with examples/traffic-quickstart.yaml (docs/planning.md)
        qplan = out / "plan-quickstart.md"
        if self.run("plan (quickstart)", ["specsweep", "plan", run_dir, "--traffic", "examples/traffic-quickstart.yaml",
                                          "-o", qplan]):  # fmt: skip
            self.wrote("plan (quickstart)", qplan)
        # examples/traffic-small.yaml plans from the reference results, as docs/planning.md shows
        # (scripts/plan_reference.py writes them and plans on traffic-reference.yaml)
        ref = self.work / "reference"
        if self.run("plan (reference)", [self.venv / "bin" / "python", "scripts/plan_reference.py", ref]):
            self.wrote("plan (reference)", ref / "plan.json")
            plan = out / "plan.md"
            if self.run("plan", ["specsweep", "plan", ref / "results", "--traffic", "examples/traffic-small.yaml",
                                 "--gpus", "16", "-o", plan]):  # fmt: skip
                self.wrote("plan", plan)
        pre = out / "preflight.txt"
        if self.run("preflight", ["specsweep", "preflight", "examples/quickstart.yaml"], stdout_file=pre):
            self.wrote("preflight", pre)
        pred = out / "predict.txt"
        if self.run("sim predict", ["specsweep", "sim", "predict", "--profile", "v4flash-dspark-st3",
                                    "--scenario", "chat_short", "--concurrency", "1,16"], stdout_file=pred):  # fmt: skip
            self.wrote("sim predict", pred)
        self.lossless(out / "lossless.json")

    def lossless(self, dest: Path) -> None:
        ports = [free_port(), free_port()]
        servers = [
            subprocess.Popen(
                ["specsweep", "sim", "serve", "--profile", prof, "--port", str(port), "--time-scale", "20"],
                env=self.env,
                cwd=REPO,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for prof, port in zip(("v4flash-dspark-st3", "v4flash-nospec"), ports, strict=True)
        ]
        try:
            for port in ports:
                if not wait_ready(port, 60):
                    self.fail("check-lossless", f"the sim server on port {port} was not ready in 60 s")
                    return
            urls = [f"http://127.0.0.1:{p}" for p in ports]
            if self.run("check-lossless", ["specsweep", "check-lossless", "--base-url", urls[0], "--base-url",
                                           urls[1], "--num-prompts", "4", "--max-tokens", "16", "-o", dest]):  # fmt: skip
                self.wrote("check-lossless", dest)
        finally:
            for s in servers:
                s.terminate()
            for s in servers:
                try:
                    s.wait(10)
                except subprocess.TimeoutExpired:
                    s.kill()
                    s.wait()


def find_verdicts(obj: object) -> list[dict]:
    """Every dict with a 'verdict' key and the two sides ('a', 'b') anywhere in the report's JSON."""
    found: list[dict] = []
    if isinstance(obj, dict):
        if "verdict" in obj and "a" in obj and "b" in obj:
            found.append(obj)
        for v in obj.values():
            found += find_verdicts(v)
    elif isinstance(obj, list):
        for v in obj:
            found += find_verdicts(v)
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="keep the venv and outputs (the folder is printed)")
    ap.add_argument("--venv", type=Path, help="build the clean environment here and keep it (CI hands it "
                    "to the suite's clean-install tests as SPECSWEEP_CLEAN_VENV)")  # fmt: skip
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="specsweep-front-door-"))
    t0 = time.monotonic()
    fd = FrontDoor(work, args.venv)
    try:
        run_dir = fd.main_command()
        if run_dir is not None:
            fd.reports(run_dir)
            fd.imports()
            fd.others(run_dir)
    finally:
        total = time.monotonic() - t0
        print("\nfront door: timings")
        for name, s in fd.timings:
            print(f"  {s:7.1f} s  {name}")
        print(f"  {total:7.1f} s  in all")
        if args.keep:
            print(f"front door: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if fd.failures:
        print(f"\nfront door: {len(fd.failures)} check(s) FAILED:", file=sys.stderr)
        for f in fd.failures:
            print(f"  - {f.splitlines()[0]}", file=sys.stderr)
        return 1
    print("front door: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
