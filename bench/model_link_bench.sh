#!/usr/bin/env bash
# The scaling predictor where communication matters (issue 18's table), side by side in ONE
# run: for the reference CNN and the dense-4096 what-if model, `mirrorbench-cli scaling`
# calibrates this machine for that model and predicts the step time of every replica count
# this machine runs, without and with a simulated 1 Gbit/s link; then every configuration
# trains REPEATS times, alternating (the host's drift hits all alike), and the table gives the
# predicted and the measured epoch (median over the repeats of each run's steady epochs 2..n),
# the error, and the communication share the predictor expected.
# Usage: bench/model_link_bench.sh [REPEATS] [IMAGES_REFERENCE] [IMAGES_DENSE] [EPOCHS]
#        (default 3 repeats, 16,384 and 2,048 training images, 3 epochs)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
images_ref=${2:-16384}
images_dense=${3:-2048}
epochs=${4:-3}
source bench/bench_env.sh
cores=$(nproc)
batch=128

for m in reference dense:4096; do
  tag=${m/:/}
  "$cli" scaling --model "$m" --max-replicas "$cores" --batch "$batch" --json "$out/cal-$tag.json" > /dev/null
  "$cli" scaling --model "$m" --calibration "$out/cal-$tag.json" --max-replicas "$cores" --batch "$batch" \
    --json "$out/pred-$tag-off.json" > /dev/null
  "$cli" scaling --model "$m" --calibration "$out/cal-$tag.json" --max-replicas "$cores" --batch "$batch" \
    --simulated-link 1 --json "$out/pred-$tag-1.json" > /dev/null
done
for r in $(seq 1 "$repeats"); do
  for m in reference dense:4096; do
    tag=${m/:/}
    images=$images_ref
    [ "$m" = reference ] || images=$images_dense
    for n in $(seq 1 "$cores"); do
      for link in off 1; do
        [ "$n" -gt 1 ] || [ "$link" = off ] || continue   # one replica exchanges nothing
        "$cli" train --model "$m" --devices "cpu:$n" --batch "$batch" --epochs "$epochs" --limit-train "$images" \
          --simulated-link "$link" --json "$out/run-$tag-$n-$link-$r.json" > /dev/null
      done
    done
  done
done

python3 - "$out" "$cores" "$repeats" "$batch" <<'PY'
import json, math, os, statistics, sys
out, cores, repeats, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print("%-34s %11s %11s %8s %11s %9s" % ("run", "predicted", "measured", "error", "pred. comm", "spread"))
worst = 0
for tag in ("reference", "dense4096"):
    for n in range(1, cores + 1):
        for link in ("off", "1"):
            if n == 1 and link != "off":
                continue
            pred = json.load(open(os.path.join(out, "pred-%s-%s.json" % (tag, link))))
            p = next(x for x in pred["predictions"] if x["replicas"] == n and x["mode"] == "global")
            medians = []
            for r in range(1, repeats + 1):
                rec = json.load(open(os.path.join(out, "run-%s-%d-%s-%d.json" % (tag, n, link, r))))
                steady = [e["time_s"] for e in rec["epochs"]][1:]
                medians.append(statistics.median(steady))
                steps = math.ceil(rec["config"]["train_size"] / batch)
            measured = statistics.median(medians)
            predicted = p["step_s"] * steps
            err = (predicted - measured) / measured
            worst = max(worst, abs(err))
            name = "%s cpu:%d%s" % ("cnn-reference" if tag == "reference" else "cnn-dense4096", n,
                                    " +1 Gbit/s link" if link != "off" else "")
            print("%-34s %10.3fs %10.3fs %+7.1f%% %10.1f%% %8.1f%%" % (name, predicted, measured, 100 * err,
                  100 * p["comm_share"], 100 * (max(medians) / min(medians) - 1)))
print("\npredicted: the calibration's step time x the run's steps; measured: median over the repeats of")
print("each run's median steady epoch (2..n); spread: slowest / fastest repeat - 1")
print("worst |error| %.1f %% (target <= 15 %%)" % (100 * worst))
PY
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(grep -o -m1 avx512f /proc/cpuinfo || echo 'no avx512f'), load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
