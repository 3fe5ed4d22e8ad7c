#!/bin/bash
# usage: benchmarks/cpu_ab.sh BEFORE_SRC CALLS ROUNDS [IN_FLIGHT]
# CPU per call and latency of routeproof's arms (benchmarks._arms) over an older tree (its src/ first on
# PYTHONPATH) against this one -- default transport under -O and with contracts on, and the README's
# plain httpx.AsyncClient() passed in -- beside direct aiohttp, httpx over aiohttp and httpx, all over one
# mock, rounds rotated (round r starts with arm r). Uses the python on PATH (activate the venv first).
# e.g. git archive main src | tar -x -C /tmp/base && benchmarks/cpu_ab.sh /tmp/base/src 1500 3
cd "$(dirname "$0")/.." || exit 1
IN_FLIGHT=${4:-1}
coproc MOCK { PYTHONPATH=$PWD/src:$PWD python -m benchmarks._mockproc; }
read -r URL <&"${MOCK[0]}"
uptime
ARMS=("routeproof -O|after" "routeproof -O|before" "routeproof|after" "routeproof|before" "routeproof-httpx|after"
      "routeproof-httpx|before" "aiohttp|after" "httpx+aiohttp|after" "httpx|after")
n=${#ARMS[@]}
for r in $(seq 0 $(($3 - 1))); do
  for i in $(seq 0 $((n - 1))); do
    a=${ARMS[$(((i + r) % n))]}; spec=${a%%|*}; side=${a#*|}
    name=${spec%% *}; flag=""; [[ "$spec" == *" -O" ]] && flag="-O"
    if [ "$side" = before ]; then PP="$1:$PWD"; else PP="$PWD/src:$PWD"; fi
    PYTHONPATH=$PP python $flag -m benchmarks._arms "$name" calls "$IN_FLIGHT" "$2" "$URL" | python3 -c "import json,sys; d=json.load(sys.stdin); print('$r %-18s %-7s cpu_ms/call=%.3f p50_ms=%.3f p99_ms=%.3f calls/s=%.0f fail=%d' % ('$spec', '$side', d['cpu_ms_per_call'], d['p50_ms'], d['p99_ms'], d['calls_per_s'], d['failures']))"
  done
done
uptime
exec {MOCK[1]}>&-
wait
