#!/usr/bin/env bash
# Fills this machine's ccache for CI's two builds (.ci/run: Release, then ASan + UBSan) of the
# committed HEAD, from a clean clone: the libraries and applications, which hit from any clone
# (paths are relative to the clone). The tests are left out: their definitions carry the
# clone's own paths (MB_TEST_DATA_DIR, MB_CLI_PATH), so another clone cannot hit them.
# Usage: scripts/warm-ci-cache.sh [CLONE_DIR]   (default /tmp/mirrorbench-ci-warm; needs ccache)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v ccache > /dev/null || { echo "warm-ci-cache: ccache is not installed (scripts/setup-debian.sh)" >&2; exit 2; }
clone=${1:-/tmp/mirrorbench-ci-warm}
rm -rf "$clone"
git clone -q . "$clone"
cd "$clone"
start=$(date +%s)
cmake -S . -B build-address-undefined -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DMB_WITH_CUDA=OFF -DMB_SANITIZE=address,undefined > /dev/null
cmake --build build-address-undefined -j"$(nproc)" --target mirrorbench mirrorbench-cli
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)" --target mirrorbench mirrorbench-cli
echo "warm-ci-cache: $(git rev-parse --short HEAD) in $(( $(date +%s) - start )) s"
ccache -s | grep -Ei "hits|misses|cache size" || true
