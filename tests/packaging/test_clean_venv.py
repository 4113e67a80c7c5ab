"""specsweep as a user installs it: a virtual environment with nothing but `pip install -e .` (no
extras). Every module imports there, and each optional extra that is missing gives one error that
names the extra and the pip command (exit 2, no traceback). CI's front-door stage
(scripts/front_door.py) builds such an environment first and passes it in SPECSWEEP_CLEAN_VENV;
without it, this module builds its own (about 40 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("SPECSWEEP_CLEAN_VENV")
    if given and (Path(given) / "bin" / "specsweep").is_file():
        return Path(given)
    v = tmp_path_factory.mktemp("clean") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(v)], check=True)
    subprocess.run([str(v / "bin" / "python"), "-m", "pip", "install", "-q", "-e", str(REPO)],
                   check=True, capture_output=True)  # fmt: skip
    return v


def _run(
    venv: Path, *args: str, cwd: Path | None = None, path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``args`` run from the venv's bin/, with nothing of this environment on the path but ``path``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True,
                          env=env, cwd=cwd or REPO, timeout=120, check=False)  # fmt: skip


def test_the_environment_has_no_extras(venv: Path) -> None:
    p = _run(venv, "python", "-c", "import importlib.util as u; print([m for m in "
             "('pytest', 'hypothesis', 'ray', 'tokenizers', 'jinja2', 'datasets') if u.find_spec(m)])")  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]", f"the clean environment is not clean: {p.stdout}"


def test_every_module_imports_without_extras(venv: Path) -> None:
    code = (
        "import importlib, pkgutil, specsweep\n"
        "bad = []\n"
        "for m in pkgutil.walk_packages(specsweep.__path__, 'specsweep.'):\n"
        "    if m.name.endswith('__main__'):\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except BaseException as e:\n"
        "        bad.append(f'{m.name}: {e!r}')\n"
        "print('\\n'.join(bad))\n"
    )
    p = _run(venv, "python", "-c", code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "", f"modules that need more than the plain install:\n{p.stdout}"


def test_missing_extras_give_one_error_naming_the_extra(venv: Path, tmp_path: Path) -> None:
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "tokenizer.json").write_text("{}")
    ds = tmp_path / "saved"
    ds.mkdir()
    (ds / "state.json").write_text("{}")  # a datasets.save_to_disk folder, as far as the loader can tell
    cases = {
        "ray": ("specsweep", "run", "examples/quickstart.yaml", "--executor", "ray", "--results-dir",
                str(tmp_path / "results")),
        "hf": ("specsweep", "bench", "--base-url", "http://127.0.0.1:9", "--scenario", "chat_short",
               "--num-prompts", "1", "--tokenizer", str(tok)),
        "datasets": ("specsweep", "sim", "predict", "--profile", "toy", "--scenario", "chat_short",
                     "--concurrency", "1", "--dataset", "hf", "--dataset-path", str(ds)),
    }  # fmt: skip
    for extra, argv in cases.items():
        p = _run(venv, *argv)
        assert p.returncode == 2, (extra, p.returncode, p.stderr[-2000:])
        assert f"pip install 'specsweep[{extra}]'" in p.stderr, (extra, p.stderr[-2000:])
        assert "Traceback" not in p.stderr, (extra, p.stderr[-2000:])
        errors = [line for line in p.stderr.splitlines() if "error" in line.lower()]
        assert len(errors) == 1, (extra, errors)


def test_chat_templates_without_jinja2_name_the_extra(venv: Path, tmp_path: Path) -> None:
    """Both of the `hf` extra's modules are checked: with `tokenizers` alone beside the plain
    install (a user who installed it by hand), a chat template needs jinja2, and says which extra
    brings it, before any request is sent."""
    tokenizers = pytest.importorskip("tokenizers")
    from specsweep.workload.tokenizer import export_hf_tokenizer

    only = tmp_path / "only"
    only.mkdir()
    (only / "tokenizers").symlink_to(Path(tokenizers.__file__).parent)
    tok = export_hf_tokenizer(tmp_path / "tok")
    cfg = json.loads((tok / "tokenizer_config.json").read_text())
    cfg["chat_template"] = "{% for m in messages %}{{ m.content }}{% endfor %}"
    (tok / "tokenizer_config.json").write_text(json.dumps(cfg))
    scenarios = tmp_path / "scenarios.yaml"
    scenarios.write_text(yaml.safe_dump({"scenarios": [{
        "name": "g", "input_len": 256, "output_len": 8, "dataset": "gsm8k", "chat_template": True,
        "dataset_path": str(REPO / "tests" / "workload" / "data" / "gsm8k_test.jsonl")}]}))  # fmt: skip
    probe = _run(
        venv,
        "python",
        "-c",
        "import tokenizers, importlib.util as u; print(u.find_spec('jinja2'))",
        path=only,
    )
    assert probe.returncode == 0 and probe.stdout.strip() == "None", (probe.stdout, probe.stderr)
    p = _run(venv, "specsweep", "bench", "--base-url", "http://127.0.0.1:9", "--scenario", "g", "--scenario-file",
             str(scenarios), "--num-prompts", "1", "--tokenizer", str(tok), path=only)  # fmt: skip
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "chat templates" in p.stderr and "pip install 'specsweep[hf]'" in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
