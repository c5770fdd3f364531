#!/usr/bin/env bash
# Builds the project with sanitizers into build-<name>/ and runs the test suite there.
#   scripts/sanitize.sh                      ASan + UBSan (what .ci/run runs)
#   scripts/sanitize.sh thread               TSan (not in CI: see docs/testing.md)
#   scripts/sanitize.sh address,undefined -R 'test_trainer|test_cli'   extra args go to ctest
# Needs the build dependencies: run scripts/setup-debian.sh once first. CPU-only (nvcc takes
# no sanitizer flags, and no GPU runs here). Suppressions live in tests/sanitizers/ and may
# only cover findings inside dependencies, each with a comment saying what and why.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=${1:-address,undefined}
[ $# -gt 0 ] && shift
dir="build-${sanitizers//,/-}"
# RelWithDebInfo's -g would override the sanitizer flags' -g1 (cmake/sanitizers.cmake).
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
      -DMB_WITH_CUDA=OFF -DMB_SANITIZE="$sanitizers" >/dev/null
cmake --build "$dir" -j"$(nproc)"
supp="$PWD/tests/sanitizers"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
ctest --test-dir "$dir" -j"$(nproc)" --output-on-failure "$@"
