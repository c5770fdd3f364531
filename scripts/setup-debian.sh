#!/usr/bin/env bash
# Installs mirrorbench's build dependencies from Debian 12 packages and builds into build/.
# Idempotent: re-running only rebuilds what changed. CUDA is used when /usr/local/cuda has
# nvcc, cuDNN and NCCL; otherwise the build is CPU-only.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config
          qt6-base-dev qt6-charts-dev libgl-dev
          libdnnl-dev libhwy-dev libspdlog-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
          dataset-fashion-mnist)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  # Through env: sudo's env_reset would drop a DEBIAN_FRONTEND set in front of it.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
