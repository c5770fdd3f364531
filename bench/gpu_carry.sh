#!/usr/bin/env bash
# Prepares the GPU check on a machine WITHOUT a GPU: builds mirrorbench here (CUDA required,
# no GUI) and assembles a carry folder for a GPU machine that has CUDA 13, cuDNN 9 and NCCL
# only as Python wheels and no Qt, spdlog, oneDNN or MPI (the project's GPU check machine):
#   bin/          mirrorbench-cli, test_cuda and cuda_lab (the kernel lab), stripped
#   libs.tar.xz   lib/: every non-CUDA shared library they need (ldd), except the C/C++
#                 runtime, which the GPU machine's newer glibc/libstdc++ provide (Debian 12
#                 builds run on them); ompi/: Open MPI's mpirun, orted, plug-ins, PMIx and help
#                 files, relocated with OPAL_PREFIX, for the `mpirun -np 1 ... --devices
#                 cuda:local` part of the check. Compressed: oneDNN and ICU alone are 70 MB.
#                 bench/gpu_check.sh unpacks it with xz, or python3's lzma where xz is missing.
#   data/         Fashion-MNIST's four .gz files (30 MB; xz would save only 4 MB)
# The CUDA libraries (cudart, cuBLAS, cuDNN, NCCL) are NOT carried: bench/gpu_check.sh finds
# the wheels' copies on the GPU machine. The whole folder must stay under 64 MiB (the
# working tree that travels); the script prints the sizes and fails beyond the budget.
#
# Usage: bench/gpu_carry.sh [CARRY_DIR]      default .carry/gpu (git-ignored)
# Env:   BUILD=build folder (default build-gpu-carry), DATA=Fashion-MNIST folder
#        (default /usr/share/datasets/fashion-mnist), JOBS=parallel build jobs (default 2),
#        SKIP_BUILD=1 to reuse an existing build, BUDGET_MIB (default 60: room for the tree)
# Then, with a GPU:  bench/gpu_check.sh .carry/gpu
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
carry=${1:-.carry/gpu}
build=${BUILD:-build-gpu-carry}
data=${DATA:-/usr/share/datasets/fashion-mnist}
jobs=${JOBS:-2}
budget_mib=${BUDGET_MIB:-60}

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  launcher=()
  command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMB_WITH_GUI=OFF -DMB_WITH_CUDA=REQUIRE "${launcher[@]}"
  cmake --build "$build" -j"$jobs" --target mirrorbench-cli test_cuda cuda_lab
fi
for b in mirrorbench-cli test_cuda cuda_lab; do
  [ -x "$build/bin/$b" ] || { echo "gpu_carry.sh: $build/bin/$b was not built" >&2; exit 1; }
done
"$build/bin/mirrorbench-cli" --version | grep -q cuDNN || {
  echo "gpu_carry.sh: $build/bin/mirrorbench-cli has no CUDA backend" >&2; exit 1; }

rm -rf "$carry"
mkdir -p "$carry/bin" "$carry/data"
carry=$(cd "$carry" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/ompi"
for b in mirrorbench-cli test_cuda cuda_lab; do
  cp "$build/bin/$b" "$carry/bin/"
  strip --strip-unneeded "$carry/bin/$b"
done

# Libraries the GPU machine has itself (the C/C++ runtime and the kernel interface) or gets
# from the CUDA wheels and the driver; everything else travels.
provided='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnccl|libnvidia-[a-z-]*)\.so'
copy_deps() {  # files...: copies their ldd closure (minus $provided) into lib/
  ldd "$@" 2> /dev/null | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
    if [[ "$name" =~ $provided ]]; then continue; fi
    [ -e "$stage/lib/$name" ] || cp -L "$path" "$stage/lib/$name"
  done
}
copy_deps "$carry/bin/mirrorbench-cli" "$carry/bin/test_cuda" "$carry/bin/cuda_lab"

# Open MPI, relocated: OPAL_PREFIX=<unpacked>/ompi makes every install folder relative to it
# (ompi_info --path all: Pkglibdir is <prefix>/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 on
# Debian). PMIx (external on Debian) finds its plug-ins through PMIX_INSTALL_PREFIX.
mpi_ok=0
if command -v mpirun > /dev/null && command -v ompi_info > /dev/null; then
  prefix=$(ompi_info --path prefix --parsable | sed -n 's/^path:prefix://p')
  pkglib=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
  pkgdata=$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')
  rel_pkglib=${pkglib#"$prefix"/}
  rel_pkgdata=${pkgdata#"$prefix"/}
  o=$stage/ompi
  mkdir -p "$o/bin" "$o/$rel_pkglib" "$o/$rel_pkgdata"
  for t in orterun orted; do cp -L "$(command -v "$t")" "$o/bin/$t"; done
  ln -sf orterun "$o/bin/mpirun"
  # Every plug-in but those for hardware and APIs a one-GPU check never uses (InfiniBand,
  # OFI, UCX, PSM, OpenSHMEM): they and their libraries would only add megabytes.
  for f in "$pkglib"/*.so; do
    case $(basename "$f") in
      *ofi*|*ucx*|*psm*|*openib*|*verbs*|mca_atomic_*|mca_memheap_*|mca_scoll_*|mca_spml_*|mca_sshmem_*) ;;
      *) cp -L "$f" "$o/$rel_pkglib/" ;;
    esac
  done
  cp -rL "$pkgdata"/. "$o/$rel_pkgdata/"
  # Debian's Open MPI uses the system PMIx (libpmix2) with plug-ins of its own, relocated
  # with PMIX_INSTALL_PREFIX.
  pmix_lib=$(ldd "$pkglib"/mca_pmix_ext3x.so 2> /dev/null | awk '/libpmix\.so/ {print $3}')
  if [ -n "$pmix_lib" ]; then
    pmix_prefix=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
    mkdir -p "$o/pmix"
    cp -rL "$pmix_prefix/lib" "$o/pmix/"
    [ -d "$pmix_prefix/share" ] && cp -rL "$pmix_prefix/share" "$o/pmix/"
    rm -rf "$o/pmix/lib/pkgconfig" "$o/pmix/lib/"*.a
  fi
  copy_deps "$o/bin/orterun" "$o/bin/orted" "$o/$rel_pkglib"/*.so $(find "$o/pmix" -name '*.so*' -type f 2> /dev/null)
  echo "$rel_pkglib" > "$o/pkglibdir"
  mpi_ok=1
fi

for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  if [ -e "$data/$f.gz" ]; then cp "$data/$f.gz" "$carry/data/"
  elif [ -e "$data/$f" ]; then gzip -9c "$data/$f" > "$carry/data/$f.gz"
  else echo "gpu_carry.sh: $data/$f[.gz] is missing" >&2; exit 1; fi
done

tar -C "$stage" -cf - lib ompi | xz -9 -T"$jobs" > "$carry/libs.tar.xz"
# The GPU machine may unpack it with python3 (no xz there): the archive must read with lzma.
python3 -c "import sys, tarfile; tarfile.open(sys.argv[1], 'r:xz').getmembers()" "$carry/libs.tar.xz"

{
  echo "built $(date -u +%FT%TZ) at commit $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+changes') on $(hostname)"
  "$build/bin/mirrorbench-cli" --version
  echo "mpirun carried: $mpi_ok"
} > "$carry/BUILD_INFO"

echo "carry folder $carry:"
du -sh "$carry"/* | sed 's/^/  /'
echo "  (libs.tar.xz unpacks to $(du -sh "$stage" | cut -f1))"
total_kib=$(du -sk "$carry" | cut -f1)
echo "  total $((total_kib / 1024)) MiB (budget $budget_mib MiB)"
if [ "$total_kib" -gt $((budget_mib * 1024)) ]; then
  echo "gpu_carry.sh: the carry folder is over the budget" >&2
  exit 1
fi
echo "next, on the GPU machine: bench/gpu_check.sh ${1:-.carry/gpu}"
