#!/usr/bin/env bash
# seedloop.sh: run the fault tests and checked-history tests again and
# again, each run with a fresh seed, and report every failure with the
# seed that replays it. Outside CI (issue 39: "CI green every time"):
# a flaky wait in the harness shows here long before it turns a CI red.
#
#   scripts/seedloop.sh [-n RUNS] [-j JOBS] [-d SECONDS] [-race] [-o DIR] [TEST ...]
#
#   -n RUNS     runs of each test (default 200)
#   -j JOBS     runs at once (default 1). The tests spend much of a run
#               waiting out faults, so 2 or 3 on 2 cores get through more
#               seeds; they also load the machine as a busy CI host would,
#               which is when a harness wait that is too tight fails
#   -d SECONDS  start no run after this many seconds (default: no limit);
#               the summary counts the runs that were made
#   -race       build with the race detector (as CI does; about 3x slower)
#   -o DIR      where the logs of failed runs go (default /tmp/seedloop-<time>)
#   TEST        package:pattern pairs; default: every fault and
#               checked-history test of internal/chaos and cluster/clustertest
#
# Runs go round the tests (run 1 of each, then run 2 of each, ...), so a
# loop cut short by -d or Ctrl-C has run every test about as often.
# Every run's seed is printed by the test itself (internal/seed); a failed
# run's log is kept as DIR/<test>-<run>.log and its replay command printed.
# The summary lists runs, failures and failing seeds per test; the exit
# status is 1 if any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=200 jobs=1 budget=0 race="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -n) runs=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    -d) budget=$2; shift 2 ;;
    -race) race=-race; shift ;;
    -o) out=$2; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "seedloop: unknown flag $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
for v in "$runs" "$jobs" "$budget"; do
  case "$v" in '' | *[!0-9]*) echo "seedloop: -n, -j and -d take whole numbers, not $v" >&2; exit 2 ;; esac
done
[ "$jobs" -ge 1 ] || { echo "seedloop: -j must be at least 1" >&2; exit 2; }
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
mkdir -p "$out/bin" "$out/results"

declare -A bins
for t in "${tests[@]}"; do
  pkg=${t%%:*}
  [ -n "${bins[$pkg]:-}" ] && continue
  bin="$out/bin/$(echo "$pkg" | tr '/.' '__').test"
  go test -c $race -o "$bin" "$pkg"
  bins[$pkg]=$bin
done

name_of() { echo "$1" | tr -d '^$'; }

# failing_seeds LOG: the seed of each failed subtest, from the replay
# line the test prints for it (a parent's earlier subtests print seeds
# too, which are not the ones that failed); else the first seeds the log
# names.
failing_seeds() {
  local log=$1 sub seeds="" seed
  for sub in $( (grep -o -- '--- FAIL: [^ ]*' "$log" || true) | awk '{print $3}' | sort -u); do
    seed=$( (grep -F -- "-run '^$sub\$'" "$log" || true) | grep -o 'ARBITER_SEED=[0-9]*' | head -n 1 | cut -d= -f2)
    [ -n "$seed" ] && seeds="$seeds$seed "
  done
  if [ -z "$seeds" ]; then
    seeds=$( (grep -o 'seed [0-9]*' "$log" || true) | head -n 5 | awk '{print $2}' | tr '\n' ' ')
  fi
  echo "$seeds"
}

# one_run TEST I: runs it once and writes "ok" or the failing seeds to
# results/<name>-<i>.
one_run() {
  local t=$1 i=$2 pkg pattern name log seeds
  pkg=${t%%:*} pattern=${t#*:}
  name=$(name_of "$pattern")
  log="$out/$name-$i.log"
  # Tests find their testdata relative to the package directory.
  # A pattern that matches no test passes in go test; here it fails.
  if (cd "$pkg" && "${bins[$pkg]}" -test.run "$pattern" -test.count 1 -test.timeout 15m -test.v) >"$log" 2>&1 &&
    ! grep -q '^testing: warning: no tests to run' "$log"; then
    rm -f "$log"
    echo ok >"$out/results/$name-$i"
  else
    seeds=$(failing_seeds "$log")
    echo "fail $seeds" >"$out/results/$name-$i"
    echo "FAIL $name run $i (seeds: $seeds) log: $log"
    grep -m 3 -E -- '--- FAIL|panic:|Error' "$log" | sed 's/^/    /' || true
  fi
}

start=$SECONDS running=0 stopped=""
for ((i = 1; i <= runs; i++)); do
  [ -z "$stopped" ] || break
  for t in "${tests[@]}"; do
    if [ "$budget" -gt 0 ] && [ $((SECONDS - start)) -ge "$budget" ]; then
      stopped="after ${budget}s"
      break
    fi
    if [ "$running" -ge "$jobs" ]; then
      wait -n || true
      running=$((running - 1))
    fi
    one_run "$t" "$i" &
    running=$((running + 1))
  done
done
wait || true

failed=0
echo "== seedloop summary ($(date -u +%Y-%m-%dT%H:%MZ), $(git rev-parse --short HEAD)${race:+, -race}, -j $jobs${stopped:+, stopped $stopped})"
for t in "${tests[@]}"; do
  name=$(name_of "${t#*:}")
  made=0 fails=0 seeds=""
  for r in "$out/results/$name"-*; do
    [ -e "$r" ] || continue
    made=$((made + 1))
    read -r verdict rest <"$r"
    if [ "$verdict" != ok ]; then
      fails=$((fails + 1)) failed=1 seeds="$seeds $rest"
    fi
  done
  echo "$name: $made runs, $fails failed${seeds:+ (seeds:$seeds)}"
done
exit $failed
