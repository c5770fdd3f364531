#!/usr/bin/env bash
# The remedies for communication-bound training against the plain run, side by side in ONE
# run (issue 29's first target): dense:4096 (26.5 MB per all-reduce) on cpu:1, on cpu:2 over
# this machine's own exchange, on cpu:2 over a simulated 1 Gbit/s link, and on cpu:2 over that
# link with each remedy (accumulation, a bf16 or fp16 all-reduce, overlap in DDP's 25 MB
# buckets, PowerSGD at ranks 4 and 1, and one combination). Repetitions alternate the
# configurations; the table gives the median epoch (the steady epochs 2..n of each run), the
# speed-up against cpu:1, the share of the link-free speed-up a remedy recovers, the validation
# accuracy beside the plain run's, and the predictor's epoch (`mirrorbench-cli scaling`,
# calibrated here once) with its error.
# Usage: bench/remedy_bench.sh [REPEATS] [IMAGES] [EPOCHS] [ONLY]   (default 3, 4,096 images, 3 epochs)
#   ONLY: an extended regular expression; only the remedies whose names match run (the three
#   plain runs, which the ratios need, always do), e.g. 'PowerSGD'.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3}
images=${2:-4096}
epochs=${3:-3}
only=${4:-}
source bench/bench_env.sh
model=dense:4096
batch=128
echo "date:  $(date -u +%Y-%m-%dT%H:%M:%SZ)   commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "CPU:   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores here"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

# name | train flags | scaling flags
configs=(
  "cpu:1|--devices cpu:1|"
  "cpu:2|--devices cpu:2|"
  "cpu:2 link 1|--devices cpu:2 --simulated-link 1|--simulated-link 1"
  "cpu:2 link 1 accumulate 4|--devices cpu:2 --simulated-link 1 --accumulate 4|--simulated-link 1 --accumulate 4"
  "cpu:2 link 1 accumulate 8|--devices cpu:2 --simulated-link 1 --accumulate 8|--simulated-link 1 --accumulate 8"
  "cpu:2 link 1 accumulate 8 scaled|--devices cpu:2 --simulated-link 1 --accumulate 8 --scale-lr --lr-warmup 1|--simulated-link 1 --accumulate 8"
  "cpu:2 link 1 accumulate 16|--devices cpu:2 --simulated-link 1 --accumulate 16|--simulated-link 1 --accumulate 16"
  "cpu:2 link 1 bf16|--devices cpu:2 --simulated-link 1 --allreduce-dtype bf16|--simulated-link 1 --allreduce-dtype bf16"
  "cpu:2 link 1 fp16|--devices cpu:2 --simulated-link 1 --allreduce-dtype fp16|--simulated-link 1 --allreduce-dtype fp16"
  "cpu:2 link 1 overlap 25 MB|--devices cpu:2 --simulated-link 1 --bucket-mb 25|--simulated-link 1 --bucket-mb 25"
  "cpu:2 link 1 PowerSGD 4|--devices cpu:2 --simulated-link 1 --powersgd 4|--simulated-link 1 --powersgd 4"
  "cpu:2 link 1 PowerSGD 1|--devices cpu:2 --simulated-link 1 --powersgd 1|--simulated-link 1 --powersgd 1"
  "cpu:2 link 1 accumulate 8 + bf16|--devices cpu:2 --simulated-link 1 --accumulate 8 --allreduce-dtype bf16|--simulated-link 1 --accumulate 8 --allreduce-dtype bf16"
)
if [[ -n $only ]]; then
  kept=()
  for c in "${configs[@]}"; do
    name=${c%%|*}
    if [[ $name == "cpu:1" || $name == "cpu:2" || $name == "cpu:2 link 1" ]] || grep -Eq -- "$only" <<< "$name"; then kept+=("$c"); fi
  done
  configs=("${kept[@]}")
fi
"$cli" scaling --model "$model" --max-replicas 2 --batch "$batch" --json "$out/cal.json" > /dev/null
for i in "${!configs[@]}"; do
  IFS='|' read -r _ _ predict <<< "${configs[$i]}"
  # shellcheck disable=SC2086
  "$cli" scaling --model "$model" --calibration "$out/cal.json" --max-replicas 2 --batch "$batch" $predict \
    --json "$out/pred-$i.json" > /dev/null
done
for r in $(seq 1 "$repeats"); do
  for i in "${!configs[@]}"; do
    IFS='|' read -r _ flags _ <<< "${configs[$i]}"
    # shellcheck disable=SC2086
    "$cli" train --model "$model" --batch "$batch" --epochs "$epochs" --limit-train "$images" $flags \
      --json "$out/run-$i-$r.json" > /dev/null
  done
done

python3 - "$out" "$repeats" "$images" "$batch" "${configs[@]}" <<'PY'
import json, math, os, statistics, sys
out, repeats, images, batch, configs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
rows = []
for i, c in enumerate(configs):
    name, flags = c.split("|")[0], c.split("|")[1]
    times, accs = [], []
    for r in range(1, repeats + 1):
        rec = json.load(open(os.path.join(out, "run-%d-%d.json" % (i, r))))
        times.append(statistics.median([e["time_s"] for e in rec["epochs"]][1:] or [rec["epochs"][0]["time_s"]]))
        accs.append(rec["epochs"][-1]["val_acc"])
    n = 1 if "cpu:1" in flags else 2
    pred = json.load(open(os.path.join(out, "pred-%d.json" % i)))
    p = next(x for x in pred["predictions"] if x["replicas"] == n and x["mode"] == "global")
    # The predictor's step, over this run's steps (it predicts whole epochs of the calibration's set).
    rows.append((name, statistics.median(times), min(times), max(times), statistics.median(accs),
                 math.ceil(images / batch) * p["step_s"]))
one, free = rows[0][1], rows[1][1]
gain_free = one / free - 1
print("medians of %d alternating runs (spread fastest-slowest); of free = speed-up / the link-free speed-up (the "
      "issue's target: >= 80 %% for the best single remedy); gain = (speed-up - 1) / (link-free speed-up - 1), the "
      "stricter share of the gain over one replica" % repeats)
print("%-36s %9s %15s %9s %8s %8s %8s %10s %7s" % ("run", "s/epoch", "spread", "speed-up", "of free", "gain", "val_acc",
                                                  "predicted", "error"))
for name, t, lo, hi, acc, pred_s in rows:
    speedup = one / t
    plain = name in ("cpu:1", "cpu:2")
    of_free = "" if plain else "%.0f %%" % (100 * speedup * free / one)
    gain = "" if plain else "%.0f %%" % (100 * (speedup - 1) / gain_free if gain_free > 0 else 0)
    print("%-36s %9.2f %15s %9.2f %8s %8s %8.4f %10.2f %+6.0f %%" % (name, t, "%.2f-%.2f" % (lo, hi), speedup, of_free,
                                                                    gain, acc, pred_s, 100 * (t - pred_s) / pred_s))
PY
