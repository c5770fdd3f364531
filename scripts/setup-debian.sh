#!/usr/bin/env bash
# Installs mirrorbench's build dependencies from Debian 12 packages and builds into build/.
# Idempotent: re-running only rebuilds what changed. CUDA is used when /usr/local/cuda has
# nvcc, cuDNN and NCCL; otherwise the build is CPU-only.
set -euo pipefail
cd "$(dirname "$0")/.."

# Some -dev packages need what Debian only recommends (installed here without recommends):
# oneDNN's CMake config needs the OpenCL headers and loader, Qt6Charts needs Qt6OpenGL.
packages=(cmake ninja-build g++ pkg-config file dpkg-dev
          qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl-dev
          libdnnl-dev ocl-icd-opencl-dev libhwy-dev libspdlog-dev libfmt-dev nlohmann-json3-dev zlib1g-dev libzip-dev libcli11-dev
          libpng-dev libturbojpeg0-dev
          libopenmpi-dev openmpi-bin
          fonts-dejavu-core dataset-fashion-mnist
          # The root-only tests (labels hosts, slurm): two emulated hosts (ip netns, veth, tc)
          # and a one-node Slurm; its PMIx plugin (srun --mpi=pmix) is in slurm-wlm-basic-plugins.
          iproute2 slurm-wlm slurm-wlm-basic-plugins munge
          # CI's function-size check (scripts/function-size.sh)
          clang-tidy
          # A compiler cache (CMakeLists.txt): a rebuild or another clone compiles only what changed
          ccache)
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
