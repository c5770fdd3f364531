#!/usr/bin/env bash
# The same Fashion-MNIST images as a folder of PNGs (Keras's layout) and as a NumPy .npz:
# mirrorbench's decode rate beside Pillow's for the same files, and both trained alike
# (issue 28's targets: validation accuracy within 1 point; epochs within 1.2x once decoded).
#   bench/image_folder_bench.sh [EPOCHS] [DEVICES]      (default 2 cpu:2)
# Needs Debian's python3-numpy and python3-pil (/usr/bin/python3) and dataset-fashion-mnist.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/bench_env.sh
epochs=${1:-2}
devices=${2:-cpu:2}
idx=${MIRRORBENCH_DATA:-/usr/share/datasets/fashion-mnist}
echo "# $(date -u +%FT%TZ) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) ($(nproc) cores)"
/usr/bin/python3 bench/image_folder_export.py "$idx" "$out"
# Twice each, alternating: the first run after writing 70,000 files may meet the disk's writeback.
for data in "$out/same.npz" "$out/png" "$out/same.npz" "$out/png"; do
  echo "== --data ${data#$out/}"
  "$cli" train --data "$data" --devices "$devices" --epochs "$epochs" --json "$out/run.json" | grep -E "^data|^epoch|^mean"
done
