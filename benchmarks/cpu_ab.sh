#!/bin/bash
# usage: benchmarks/cpu_ab.sh BEFORE_SRC CALLS ROUNDS
# CPU per routed call (benchmarks._arms routeproof, 1 in flight), an older tree (its src/ first on
# PYTHONPATH) against this one, contracts on and under -O, plus direct httpx, rounds rotated, one mock.
# e.g. git archive main | tar -x -C /tmp/base && benchmarks/cpu_ab.sh /tmp/base/src 1500 3
cd "$(dirname "$0")/.." || exit 1
coproc MOCK { .venv/bin/python -m benchmarks._mockproc; }
read -r URL <&"${MOCK[0]}"
uptime
for r in $(seq 1 $3); do
  for flag in "" "-O"; do
    for side in before after; do
      if [ $side = before ]; then PP="$1:$PWD"; else PP="$PWD/src:$PWD"; fi
      PYTHONPATH=$PP .venv/bin/python $flag -m benchmarks._arms routeproof calls 1 $2 "$URL" | python3 -c "import json,sys; d=json.load(sys.stdin); print('$r', '$side', '${flag:-on}', 'cpu_ms/call=%.3f p50_ms=%.3f fail=%d' % (d['cpu_ms_per_call'], d['p50_ms'], d['failures']))"
    done
  done
  PYTHONPATH=$PWD .venv/bin/python -O -m benchmarks._arms httpx calls 1 $2 "$URL" | python3 -c "import json,sys; d=json.load(sys.stdin); print('$r', 'httpx', '-O', 'cpu_ms/call=%.3f p50_ms=%.3f fail=%d' % (d['cpu_ms_per_call'], d['p50_ms'], d['failures']))"
done
uptime
exec {MOCK[1]}>&-
wait
