#!/usr/bin/env bash
# Two hosts against one, and the scaling predictor against both, side by side in ONE run, on
# the emulated hosts of scripts/two-hosts.sh (network namespaces joined by a veth pair, one
# CPU each; root only). REPEATS rounds, each training the reference CNN (Fashion-MNIST, global
# batch 128, cpu:1 per process) in every configuration in turn:
#   one host      mpirun -np 2 over shared memory, each process on its own core
#   two hosts     mpirun --hostfile over TCP on the veth: unshaped, 10 Gbit/s, 1 Gbit/s
#                 (netem where the kernel has it, else tbf: scripts/two-hosts.sh shape), and the
#                 shaped links again with Open MPI's TCP progress thread (btl_tcp_progress_thread)
# Each run's steady-state epoch (median of epochs 2..EPOCHS), then the median over the rounds.
# The predictor: one calibration of this machine, then `mirrorbench-cli scaling --calibration
# ... --machines 2 --link-gbps G --link-latency-us L`, L measured on the veth (a one-float
# MPI_Allreduce) and, for the unshaped link, G its measured rate (a gradient-sized one).
# Usage: bench/two_hosts_bench.sh [EPOCHS] [REPEATS]   (EPOCHS >= 3)
# Loopback, shared memory and the test's own veth pair only.
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-3}
repeats=${2:-3}
cli=${MIRRORBENCH_CLI:-build/bin/mirrorbench-cli}
bench=${MIRRORBENCH_ALLREDUCE_BENCH:-build/bin/allreduce_bench}
out=$(mktemp -d)
hosts=$out/hosts
trap 'scripts/two-hosts.sh down "$hosts" > /dev/null 2>&1 || true; rm -rf "$out"' EXIT
if ! scripts/two-hosts.sh up "$hosts" > /dev/null; then
  echo "two_hosts_bench: skipped: $(cat "$hosts/skip-reason" 2>/dev/null || echo 'the hosts could not be made')"
  exit 77
fi
set -a; . "$hosts/mpi.env"; set +a
in_a() { scripts/two-hosts.sh run "$hosts" hostA "$@"; }
across=(mpirun --hostfile "$hosts/hostfile" -np 2 --bind-to none)
one_host=(mpirun --allow-run-as-root --mca btl self,vader --mca oob_tcp_if_include lo -np 2 --bind-to core)
train=("$cli" train --devices cpu:1 --epochs "$epochs" --batch 128)

# The link as the predictor needs it: latency per message, and the unshaped rate.
lat_us=$(in_a "${across[@]}" "$bench" --count 1 --iters 300 --late-ms 0 | awk '/^MPI_Allreduce \(Open MPI\)/ {print $4}')
full_us=$(in_a "${across[@]}" "$bench" --iters 200 --late-ms 0 | awk '/^MPI_Allreduce \(Open MPI\)/ {print $4}')
veth_gbps=$(python3 -c "print('%.2f' % (487720 * 8 / max(1e-9, ($full_us - 2 * $lat_us) * 1e-6) / 1e9))")
echo "veth: ${lat_us} us per message (one-float all-reduce), ${full_us} us for the gradient: ${veth_gbps} Gbit/s"

"$cli" scaling --max-replicas 2 --json "$out/calibration.json" > /dev/null
predict() {  # NAME GBPS
  "$cli" scaling --calibration "$out/calibration.json" --max-replicas 2 --machines 2 --link-gbps "$2" \
    --link-latency-us "$lat_us" --json "$out/pred-$1.json" > /dev/null
}
predict full "$veth_gbps"
predict 10gbit 10
predict 1gbit 1

run() {  # NAME ROUND SHAPE [MPIRUN OPTIONS...]: one training run, its record in $out
  local name=$1 round=$2 shape=$3
  shift 3
  if [ "$name" = one-host ]; then
    "${one_host[@]}" "${train[@]}" --json "$out/$name-$round.json" > /dev/null
  else
    scripts/two-hosts.sh shape "$hosts" "$shape" > /dev/null
    in_a "${across[@]}" "$@" "${train[@]}" --json "$out/$name-$round.json" > /dev/null
  fi
}
for round in $(seq 1 "$repeats"); do
  run one-host "$round" off
  run two-hosts "$round" off
  run two-hosts-10gbit "$round" 10gbit
  run two-hosts-1gbit "$round" 1gbit
  run two-hosts-10gbit-thread "$round" 10gbit --mca btl_tcp_progress_thread 1
  run two-hosts-1gbit-thread "$round" 1gbit --mca btl_tcp_progress_thread 1
  echo "round $round of $repeats done (load $(cut -d' ' -f1 /proc/loadavg))"
done
scripts/two-hosts.sh shape "$hosts" off > /dev/null

python3 - "$out" "$repeats" << 'PY'
import json, os, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
cal = json.load(open(os.path.join(out, "calibration.json")))["calibration"]
def steady(f):
    t = [e["time_s"] for e in json.load(open(f))["epochs"]]
    return statistics.median(t[1:])
def measured(name):
    runs = [steady(os.path.join(out, "%s-%d.json" % (name, r))) for r in range(1, repeats + 1)]
    return statistics.median(runs), min(runs), max(runs)
def prediction(link):
    for p in json.load(open(os.path.join(out, "pred-%s.json" % link)))["predictions"]:
        if p["replicas"] == 2 and p["mode"] == "global":
            return p
# The emulated hosts share this machine's memory and caches: the same prediction with the
# lock-step compute of 2 replicas at once on this machine instead of 1 on each machine.
def fit(points, b):
    xs = [p["batch"] for p in points]; ys = [p["step_s"] for p in points]
    n = len(xs); sx, sy = sum(xs), sum(ys); sxx = sum(x * x for x in xs); sxy = sum(x * y for x, y in zip(xs, ys))
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - slope * sx) / n + slope * b
two_at_once = [p for p in cal["compute"] if p["concurrent"] == 2]
one_at_once = [p for p in cal["compute"] if p["concurrent"] == 1]
print("\n%-34s %10s %10s %8s %12s %8s %16s" % ("run", "predicted", "measured", "error", "pred(shared)", "error", "rounds min..max"))
rows = [("one host, 2 processes (shm)", "one-host", None), ("two hosts, veth unshaped", "two-hosts", "full"),
        ("two hosts, 10 Gbit/s", "two-hosts-10gbit", "10gbit"), ("two hosts, 1 Gbit/s", "two-hosts-1gbit", "1gbit"),
        ("two hosts, 10 Gbit/s, TCP thread", "two-hosts-10gbit-thread", "10gbit"),
        ("two hosts, 1 Gbit/s, TCP thread", "two-hosts-1gbit-thread", "1gbit")]
med = {}
for label, name, link in rows:
    m, lo, hi = measured(name)
    med[name] = m
    if link is None:
        print("%-34s %10s %9.2fs %8s %12s %8s %7.2f..%.2f s" % (label, "", m, "", "", "", lo, hi))
        continue
    p = prediction(link)
    steps = p["epoch_s"] / p["step_s"]
    shared = steps * (fit(two_at_once, p["per_replica_batch"]) + p["comm_s"]) if two_at_once else float("nan")
    print("%-34s %9.2fs %9.2fs %+7.1f%% %11.2fs %+7.1f%% %7.2f..%.2f s" % (label, p["epoch_s"], m,
          100 * (p["epoch_s"] - m) / m, shared, 100 * (shared - m) / m, lo, hi))
print("\npredicted: separate machines (one replica's compute each, the calibration's concurrency 1);")
print("pred(shared): the emulated hosts share this machine's memory and caches (concurrency 2's compute)")
print("two hosts at full link speed / one host: %.3f (target <= 1.10)" % (med["two-hosts"] / med["one-host"]))
PY
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
