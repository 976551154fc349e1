#!/usr/bin/env bash
# A real peer for the Anthropic Messages and OpenAI Responses wire formats: the LiteLLM proxy
# (PyPI `litellm[proxy]`, pinned below) in front of the local llama.cpp server, which itself
# serves only OpenAI Chat Completions. The proxy translates `/v1/messages` and `/v1/responses`
# requests into chat completions for the model `local`, and the answers back.
#
# Why this version and this backend (found on this machine, see examples/README.md):
#  - LiteLLM 1.90.0: a pure-Python wheel (later ones ship a native extension). 1.82.6 answers
#    Anthropic's `tool_choice: {"type": "none"}` with HTTP 500 ("Incompatible tool choice");
#    1.90.0 maps it to "none". The releases 1.82.7, 1.82.8 and 1.107.0 were compromised on
#    PyPI: never move the pin to those.
#  - backend `custom_openai/local`: with `openai/` or `hosted_vllm/`, LiteLLM forwards
#    `/v1/responses` (and, for `openai/`, even `/v1/messages`) to the backend's own Responses
#    endpoint, which llama.cpp 0.3.16 does not have (404); `custom_openai/` goes through chat
#    completions for both.
#
# Usage:
#   scripts/peer-proxy.sh install            create the venv (cached) and install the pinned proxy
#   scripts/peer-proxy.sh start [PORT]       start it on 127.0.0.1 in front of $TOOLS_LLAMA_URL
#                                            (or the running llama-server.sh server); prints the URL
#   scripts/peer-proxy.sh stop               stop the proxy started by `start`
#
# Environment: TOOLS_CACHE_DIR (as llama-server.sh), TOOLS_PEER_PYTHON (a Python whose
# environment already has the proxy installed; default: the venv made by `install`),
# TOOLS_LLAMA_URL (the backend), TOOLS_PEER_PORT (default 4000).
set -euo pipefail

LITELLM_VERSION="1.90.0"
CACHE_DIR="${TOOLS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tool-calling}"
VENV="$CACHE_DIR/peer-venv"
RUN_DIR="$CACHE_DIR/run"
PID_FILE="$RUN_DIR/peer-proxy.pid"
LOG_FILE="$RUN_DIR/peer-proxy.log"
CONFIG_FILE="$RUN_DIR/peer-proxy.yaml"
PORT_DEFAULT="${TOOLS_PEER_PORT:-4000}"
HERE="$(cd "$(dirname "$0")" && pwd)"

log() { echo "[peer-proxy.sh] $*" >&2; }
die() { log "error: $*"; exit 1; }

python_bin() { echo "${TOOLS_PEER_PYTHON:-$VENV/bin/python}"; }

install() {
    if [[ ! -x "$VENV/bin/python" ]]; then
        python3 -m venv "$VENV" || die "python3 -m venv failed (apt: python3-venv)"
    fi
    local have
    have="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))' 2>/dev/null || true)"
    if [[ "$have" != "$LITELLM_VERSION" ]]; then
        log "installing litellm[proxy]==$LITELLM_VERSION into $VENV"
        "$VENV/bin/pip" install --quiet --upgrade pip >&2
        "$VENV/bin/pip" install --quiet "litellm[proxy]==$LITELLM_VERSION" >&2 \
            || die "could not install litellm[proxy]==$LITELLM_VERSION"
    fi
    echo "$VENV/bin/python"
}

healthy() {
    curl -fsS --max-time 2 "$1/health/liveliness" >/dev/null 2>&1
}

start() {
    command -v curl >/dev/null 2>&1 || die "curl is not installed"
    local port="${1:-$PORT_DEFAULT}" url backend python
    url="http://127.0.0.1:$port"
    backend="${TOOLS_LLAMA_URL:-$("$HERE/llama-server.sh" status || true)}"
    [[ -n "$backend" ]] || die "no backend: set TOOLS_LLAMA_URL or run scripts/llama-server.sh start"
    python="$(python_bin)"
    [[ -x "$python" ]] || die "$python is missing; run $0 install"
    "$python" -c 'import litellm.proxy.proxy_cli' 2>/dev/null || die "$python has no LiteLLM proxy; run $0 install"
    mkdir -p "$RUN_DIR"
    if healthy "$url"; then
        die "something already answers on $url; pick another port: $0 start PORT"
    fi
    cat >"$CONFIG_FILE" <<EOF
model_list:
  - model_name: local
    litellm_params:
      model: custom_openai/local
      api_base: ${backend%/}/v1
      api_key: none
litellm_settings:
  drop_params: true
  telemetry: false
EOF
    log "starting the LiteLLM proxy on $url in front of $backend (log: $LOG_FILE)"
    # No network at start-up: the price map ships with the package.
    LITELLM_LOCAL_MODEL_COST_MAP=True setsid "$python" -m litellm.proxy.proxy_cli \
        --config "$CONFIG_FILE" --host 127.0.0.1 --port "$port" >"$LOG_FILE" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    for _ in $(seq 1 240); do
        if healthy "$url"; then
            echo "$url"
            return 0
        fi
        kill -0 "$(cat "$PID_FILE")" 2>/dev/null || { tail -n 20 "$LOG_FILE" >&2; die "the proxy exited during startup"; }
        sleep 0.5
    done
    tail -n 20 "$LOG_FILE" >&2
    die "the proxy did not become healthy on $url within 120 s"
}

stop() {
    if [[ -f "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
        kill "$(cat "$PID_FILE")"
        log "stopped the proxy (pid $(cat "$PID_FILE"))"
    fi
    rm -f "$PID_FILE"
}

case "${1:-}" in
    install) install ;;
    start) start "${2:-}" ;;
    stop) stop ;;
    *) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
