#!/usr/bin/env bash
# An S3-compatible server without Docker: moto (PyPI), with a `strata` bucket.
#   local-stack/s3-server.sh            # listens on 127.0.0.1:9000 (PORT=... to change)
# Then, in the broker's shell:
#   export AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ALLOW_HTTP=true \
#          AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
# moto keeps objects in memory: it is for development and tests, not data you keep.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-9000}"
if [ ! -x .venv/bin/moto_server ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check "moto[server]==5.2.5"
fi
.venv/bin/moto_server -H 127.0.0.1 -p "$PORT" &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT INT TERM
for _ in $(seq 100); do
  if curl -fsS -X PUT "http://127.0.0.1:$PORT/strata" >/dev/null 2>&1; then break; fi
  sleep 0.1
done
echo "S3 server on http://127.0.0.1:$PORT with bucket 'strata' (pid $pid); Ctrl-C stops it"
wait $pid
