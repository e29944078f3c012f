#!/usr/bin/env bash
# seedloop.sh: run the fault tests and checked-history tests again and
# again, each run with a fresh seed, and report every failure with the
# seed that replays it. Outside CI (issue 39: "CI green every time"):
# a flaky wait in the harness shows here long before it turns a CI red.
#
#   scripts/seedloop.sh [-n RUNS] [-race] [-o DIR] [TEST ...]
#
#   -n RUNS   runs of each test (default 200)
#   -race     build with the race detector (as CI does; about 3x slower)
#   -o DIR    where the logs of failed runs go (default /tmp/seedloop-<time>)
#   TEST      package:pattern pairs; default: every fault and
#             checked-history test of internal/chaos and cluster/clustertest
#
# Every run's seed is printed by the test itself (internal/seed); a failed
# run's log is kept as DIR/<test>-<run>.log and its replay command printed.
# The summary lists runs, failures and failing seeds per test; the exit
# status is 1 if any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=200 race="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n) runs=$2; shift 2 ;;
    -race) race=-race; shift ;;
    -o) out=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "seedloop: unknown flag $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(
    "./internal/chaos:^TestFaults\$"
    "./internal/chaos:^TestFaultsFiveNodes\$"
    "./internal/chaos:^TestFaultsTCP\$"
    "./internal/chaos:^TestCheckedHistories\$"
    "./cluster/clustertest:^TestFaultsKeepAUserModelLinearizable\$"
  )
fi
out=${out:-/tmp/seedloop-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out/bin"

declare -A bins
for t in "${tests[@]}"; do
  pkg=${t%%:*}
  [ -n "${bins[$pkg]:-}" ] && continue
  bin="$out/bin/$(echo "$pkg" | tr '/.' '__').test"
  go test -c $race -o "$bin" "$pkg"
  bins[$pkg]=$bin
done

failed=0
summary=()
for t in "${tests[@]}"; do
  pkg=${t%%:*} pattern=${t#*:}
  name=$(echo "$pattern" | tr -d '^$')
  fails=0 seeds=""
  for ((i = 1; i <= runs; i++)); do
    log="$out/$name-$i.log"
    # Tests find their testdata relative to the package directory.
    if (cd "$pkg" && "${bins[$pkg]}" -test.run "$pattern" -test.count 1 -test.timeout 15m -test.v) >"$log" 2>&1; then
      rm -f "$log"
    else
      fails=$((fails + 1)) failed=1
      s=$(grep -o 'seed [0-9]*' "$log" | head -n 5 | awk '{print $2}' | tr '\n' ' ')
      seeds="$seeds $s"
      echo "FAIL $name run $i (seeds: $s) log: $log"
      grep -m 3 -E -- '--- FAIL|panic:|Error' "$log" | sed 's/^/    /' || true
    fi
    printf '%s run %d/%d: %d failed\r' "$name" "$i" "$runs" "$fails" >&2
  done
  echo >&2
  summary+=("$name: $runs runs, $fails failed${seeds:+ (seeds:$seeds)}")
done
echo "== seedloop summary ($(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD)${race:+, -race})"
printf '%s\n' "${summary[@]}"
exit $failed
