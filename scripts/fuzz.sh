#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan, folder build-fuzz/ unless given) and
# runs each for SECONDS (default 60) from its seeds: the shipped scenarios, topologies and models for the
# scenario loader, the measured data for the CSV and measurement readers, tests/fuzz/seeds/units for the unit
# parsers. Inputs it finds that crash are left as crash-* files in the build folder; the exit status is not 0
# then. Usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
out=${2:-$root/build-fuzz}
cmake -S "$root" -B "$out" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDLSIM_FUZZ=ON \
  > /dev/null
cmake --build "$out" -j"$(nproc)"
declare -A seeds=(
  [scenario]="$root/scenarios $root/topologies $root/models"
  [units]="$root/tests/fuzz/seeds/units"
  [csv]="$root/scenarios/measured"
  [measurements]="$root/scenarios/measured"
)
status=0
cd "$out"
for target in scenario units csv measurements; do
  mkdir -p "corpus/$target"
  echo "fuzz_$target: $seconds s"
  # shellcheck disable=SC2086  # the seed folders are a list
  if ! "./fuzz_$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 \
      "corpus/$target" ${seeds[$target]} 2>&1 | grep -E "^(stat::number_of_executed_units|stat::new_units_added|==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)"; then
    :
  fi
  if compgen -G "crash-*" > /dev/null || compgen -G "leak-*" > /dev/null || compgen -G "timeout-*" > /dev/null; then
    status=1
  fi
done
exit $status
