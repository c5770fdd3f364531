#!/usr/bin/env bash
# Builds the Debian package mirrorbench_<version>_amd64.deb (both programs, desktop entry,
# icon; Depends from the binaries) into the project folder. CPU-only: cuDNN and NCCL are not
# Debian packages, so a CUDA build's dependencies could not be expressed (see README).
# Needs the build dependencies: run scripts/setup-debian.sh once first.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-deb -G Ninja -DCMAKE_BUILD_TYPE=Release -DMB_WITH_CUDA=OFF -DMB_WITH_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX=/usr "$@"
cmake --build build-deb -j"$(nproc)"
(cd build-deb && cpack -G DEB)
mv -f build-deb/mirrorbench_*.deb .
ls -l mirrorbench_*.deb
