#!/usr/bin/env bash
# The MPI link's all-reduce of the model's gradient (121,930 floats) against Open MPI's own
# MPI_Allreduce of the same buffer, on each transport a run across processes uses: shared
# memory (btl vader), TCP on loopback, and TCP between two hosts (the emulated hosts of
# scripts/two-hosts.sh, one CPU each; root only, skipped otherwise). One build/bin/allreduce_bench
# run per transport; inside it the variants alternate, median of ITERS, plus the late-arrival
# variant (the last rank LATE_MS late). Every sum is checked exactly.
# Usage: bench/allreduce_mpi_bench.sh [ITERS] [LATE_MS] [--diagnose]
# Loopback, shared memory and the test's own veth pair only.
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-200}
late=${2:-5}
extra=${3:-}
bench=${MIRRORBENCH_ALLREDUCE_BENCH:-build/bin/allreduce_bench}
one_host=(mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core --mca oob_tcp_if_include lo)

echo "== shared memory (btl self,vader), one host, each rank on its own core"
"${one_host[@]}" --mca btl self,vader "$bench" --iters "$iters" --late-ms "$late" $extra
echo
echo "== TCP on loopback (btl self,tcp over lo), one host"
"${one_host[@]}" --mca btl self,tcp --mca btl_tcp_if_include lo "$bench" --iters "$iters" --late-ms "$late" $extra
echo
hosts=$(mktemp -d)
trap 'scripts/two-hosts.sh down "$hosts" > /dev/null; rm -rf "$hosts"' EXIT
if scripts/two-hosts.sh up "$hosts" > /dev/null; then
  echo "== TCP between two hosts (hostA, hostB: network namespaces joined by a veth pair, one CPU each)"
  set -a; . "$hosts/mpi.env"; set +a
  scripts/two-hosts.sh run "$hosts" hostA mpirun --hostfile "$hosts/hostfile" -np 2 \
    "$bench" --iters "$iters" --late-ms "$late" $extra
else
  echo "== TCP between two hosts: skipped ($(cat "$hosts/skip-reason" 2>/dev/null || echo 'the hosts could not be made'))"
fi
echo
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
