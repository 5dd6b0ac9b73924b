#!/usr/bin/env bash
# Issue 25's client measurements on a bigger host in one bounded call (the lent 16-core device
# machine: Python 3.12, no network), run from the repository root:
#   bash benchmarks/device_client.sh
# Wheels: packages the benchmarks import that the host lacks (httptools, orjson) travel in .whl/
# (cp312 manylinux x86_64) and go to $SITE; .whl/fallback/ holds aiohttp and its dependencies at
# the versions the project is tested with, installed only if the host's own fail the import check
# or the smoke run (or DEVICE_FALLBACK=1).
# Steps, each under `timeout` and all inside one budget (DEVICE_BUDGET_S, default 330 s, so the
# whole script ends inside 6 minutes whatever hangs):
#   env.txt                     nproc, CPU, Python, package versions, the import check, a 1 s
#                               smoke run of benchmarks/client_ingest.py on each transport
#   scaling_{aiohttp,httptools}_48.txt  benchmarks/client_scaling.py, 48 events per write
#   read_floor.txt              benchmarks/read_floor.py, c64 and c256, one event per write
#   scaling_{aiohttp,httptools}_1.txt   client_scaling.py, one event per write
#   summary.txt                 every benchmark's machine-readable last lines
# Outputs go to $OUT (the device tool's folder; default /tmp/device_client). Local dry run:
#   DEVICE_QUICK=1 PY=.venv/bin/python OUT=/tmp/devout bash benchmarks/device_client.sh
set -u
cd "$(dirname "$0")/.."
PY=${PY:-python3}
OUT=${OUT:-/tmp/device_client}
SITE=${SITE:-/tmp/site}
QUICK=${DEVICE_QUICK:-0}
BUDGET=${DEVICE_BUDGET_S:-330}
MAXW=${DEVICE_MAX_WORKERS:-8}
SECS=4          # seconds per scaling row (48 events: ~24 request rounds per row)
FLOOR_SECS=4    # read_floor seconds per measurement
ROUNDS=2        # read_floor rounds (floor and each transport alternated)
PERW1=64        # streams per worker at one event per write (16 at 48: too little offered load)
if [ "$QUICK" = 1 ]; then
  MAXW=${DEVICE_MAX_WORKERS:-1}; SECS=1; FLOOR_SECS=1; ROUNDS=1; PERW1=16; BUDGET=${DEVICE_BUDGET_S:-150}
fi
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
START=$(date +%s)
TOKEN="dc$$_$START"  # marks the processes each step starts, so leftovers can be ended by id

elapsed() { echo $(( $(date +%s) - START )); }

reap() {  # end what a step left running (the SSE servers start their own sessions) by pid
  local e pid
  for e in /proc/[0-9]*/environ; do
    pid=${e#/proc/}; pid=${pid%/environ}
    if grep -qzx "DEVICE_CLIENT_RUN=$TOKEN" "$e" 2>/dev/null; then
      echo "  reaping leftover pid $pid: $(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)"
      kill -9 "$pid" 2>/dev/null
    fi
  done
}

step() {  # step NAME MAX_S CMD...: run under timeout (SIGINT first: Python's finally blocks run)
  local name=$1 want=$2; shift 2
  local left=$(( BUDGET - $(elapsed) ))
  local t=$(( want < left ? want : left ))
  if [ "$t" -lt 10 ]; then
    echo "+ [$(elapsed)s] SKIP $name: ${left}s of the ${BUDGET}s budget left" | tee -a "$OUT/summary.txt"
    return
  fi
  echo "+ [$(elapsed)s] $name (timeout ${t}s): $*" | tee "$OUT/$name.txt"
  env DEVICE_CLIENT_RUN="$TOKEN" timeout -s INT -k 10 "$t" "$@" 2>&1 | tee -a "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  reap
  echo "+ [$(elapsed)s] $name rc=$rc$( [ "$rc" = 124 ] && echo ' (timed out)')" | tee -a "$OUT/$name.txt"
  { echo "== $name rc=$rc"; grep -E '^(client_scaling|read_floor) |median of' "$OUT/$name.txt"; } \
    >>"$OUT/summary.txt"
}

# --- environment and wheels -------------------------------------------------------------------
{
  echo "+ [$(elapsed)s] env"
  echo "nproc=$(nproc) cpu_count=$($PY -c 'import os; print(os.cpu_count())') uname=$(uname -srm)"
  grep -m1 'model name' /proc/cpuinfo
  free -g 2>/dev/null | head -2
  echo "python: $(command -v "$PY") $($PY -V 2>&1)"
  pyver=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$pyver" = 3.12 ] && ls .whl/*.whl >/dev/null 2>&1; then
    echo "+ pip install --target $SITE .whl/*.whl"
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$SITE" .whl/*.whl || echo "WHEEL INSTALL FAILED rc=$?"
  else
    echo "wheels: skipped (python $pyver; .whl/ is for the 3.12 host)"
  fi
} 2>&1 | tee "$OUT/env.txt"
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"

check() {
  $PY - <<'EOF'
import importlib.metadata as md, sys
for n in ["aiohttp", "httptools", "orjson", "uvloop", "yarl", "multidict", "numpy", "propcache",
          "frozenlist", "aiosignal", "aiohappyeyeballs", "attrs", "idna", "typing_extensions"]:
    try:
        print(f"  {n} {md.version(n)}")
    except md.PackageNotFoundError:
        print(f"  {n} MISSING")
import aiohttp
v = tuple(int(x) for x in aiohttp.__version__.split(".")[:2])
assert v >= (3, 10), f"aiohttp {aiohttp.__version__} < 3.10"
import harness.client.arrival, harness.client.h1_stream, harness.client.streaming  # noqa
import harness.client.workers, harness.client.closed_loop, harness.testing.fast_sse_server  # noqa
import httptools, orjson, uvloop, numpy  # noqa
print("import check: ok", sys.version.split()[0])
EOF
}
smoke() {  # one second of the real client on each transport: a host aiohttp that imports
  local tr   # but misbehaves also sends us to the fallback wheels
  for tr in aiohttp httptools; do
    timeout -s INT -k 5 40 "$PY" benchmarks/client_ingest.py --seconds 1 --concurrency 8 \
      --transport "$tr" || { echo "smoke $tr failed"; return 1; }
  done
}
{
  if [ "${DEVICE_FALLBACK:-0}" = 1 ] || ! { check && smoke; }; then
    echo "import check or smoke failed: installing .whl/fallback/ (aiohttp and its dependencies)"
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "$SITE" .whl/fallback/*.whl && check && smoke || echo "IMPORT CHECK STILL FAILING"
  fi
  echo "+ [$(elapsed)s] env done"
} 2>&1 | tee -a "$OUT/env.txt"

# --- measurements -----------------------------------------------------------------------------
: >"$OUT/summary.txt"
scaling_t=${DEVICE_SCALING_T:-$(( QUICK == 1 ? 40 : 75 ))}
for tr in aiohttp httptools; do
  step "scaling_${tr}_48" "$scaling_t" "$PY" benchmarks/client_scaling.py --max-workers "$MAXW" \
    --per-worker 16 --seconds "$SECS" --events-per-tick 48 --transport "$tr"
done
step read_floor $(( QUICK == 1 ? 60 : 100 )) "$PY" benchmarks/read_floor.py --streams 64 256 \
  --seconds "$FLOOR_SECS" --rounds "$ROUNDS" --transports aiohttp httptools
for tr in httptools aiohttp; do  # max-tokens 1000: 2 s requests, a few rounds per row
  step "scaling_${tr}_1" "$scaling_t" "$PY" benchmarks/client_scaling.py --max-workers "$MAXW" \
    --per-worker "$PERW1" --seconds "$SECS" --events-per-tick 1 --max-tokens 1000 --transport "$tr"
done
echo "=== summary ($(elapsed)s)"
cat "$OUT/summary.txt"
