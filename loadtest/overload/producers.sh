#!/usr/bin/env bash
# loadtest/overload/producers.sh [URL]: the issue's first reproduction. A 4-partition topic
# `load`, then `wrk -t2 -c1000 -d15s` posting a JSON batch of 100 x 1 KiB base64 values
# (about 139 KB) with wrk's 2 s timeout. Prints the statuses (every 503 must carry
# Retry-After), socket errors (resets are wrk's "read" errors) and latency; give the server's
# PID as WHARF_PID to print its peak RSS (VmHWM). Needs wrk (apt-get install wrk).
# Loopback only; stops by itself after 15 s.
set -euo pipefail
URL=${1:-http://127.0.0.1:8080}
DIR=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 - "$WORK/batch.json" <<'PY'
import base64, json, os, sys
messages = [{"value_base64": base64.b64encode(os.urandom(1024)).decode()} for _ in range(100)]
open(sys.argv[1], "w").write(json.dumps({"messages": messages}))
PY
curl -s -o /dev/null -X POST "$URL/v1/topics" -H 'content-type: application/json' \
  -d '{"name":"load","partitions":4}' || true
BATCH="$WORK/batch.json" wrk -t2 -c1000 -d15s --timeout 2s -s "$DIR/produce.lua" "$URL/v1/topics/load/messages"
if [[ -n "${WHARF_PID:-}" ]]; then
  grep -E 'VmHWM|VmRSS' "/proc/$WHARF_PID/status"
fi
