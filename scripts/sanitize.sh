#!/usr/bin/env bash
# Builds ddlsim with AddressSanitizer and UndefinedBehaviorSanitizer (folder build-asan/ unless given) and runs
# the whole test suite under them: any invalid access, leak or undefined behaviour fails its test. The MPI
# kernel tests run with leak detection off (Open MPI keeps allocations of its own and of the components it
# loads to the end of the process, which LeakSanitizer would report against every MPI program; memory errors
# are still checked) and one at a time (two mpirun start-ups slowed by the sanitizers have failed to start
# side by side). Warnings are errors, as in the normal build (but for GCC's maybe-uninitialized, which ASan
# makes it report falsely inside std::regex). Usage: scripts/sanitize.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build-asan}
cmake -S "$root" -B "$out" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDLSIM_SANITIZE=ON -DDDLSIM_WERROR=ON > /dev/null
cmake --build "$out" -j"$(nproc)"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$out" -j"$(nproc)" -E '^kernels_' --output-on-failure
ASAN_OPTIONS=detect_leaks=0 ctest --test-dir "$out" -j1 -R '^kernels_' --output-on-failure
