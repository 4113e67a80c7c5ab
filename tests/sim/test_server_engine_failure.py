"""A dead engine must not look like a slow one: `sim serve` exits non-zero with the traceback and open
streams are reset at once, so a launcher sees a failed server instead of waiting for a timeout."""

from __future__ import annotations

import http.client
import subprocess
import sys
import time
import urllib.error
import urllib.request

import orjson

from specsweep.sim.serve import ENGINE_FAILED_EXIT_CODE

# The real `sim serve` entry point, in its own process, with an engine whose first step raises.
_BROKEN = """
import sys
from specsweep.sim import engine
def step(self):
    raise RuntimeError("engine bug for the test")
engine.Engine.step = step
from specsweep.sim.serve import main
sys.exit(main(sys.argv[1:]))
"""


def test_sim_serve_exits_when_the_engine_fails() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _BROKEN, "--profile", "toy", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]
        body = orjson.dumps({"prompt": "hello there", "max_tokens": 8, "stream": True})
        req = urllib.request.Request(
            url + "/v1/completions", data=body, headers={"Content-Type": "application/json"}
        )
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                r.read()
        except (urllib.error.URLError, http.client.HTTPException, OSError):
            pass  # reset: that is the point
        assert time.monotonic() - t0 < 10, "the stream hung instead of being reset"
        rc = proc.wait(timeout=20)
        err = proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == ENGINE_FAILED_EXIT_CODE, err
    assert "the engine failed" in err and "engine bug for the test" in err
