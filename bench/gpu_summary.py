#!/usr/bin/env python3
"""Summarises a GPU benchmark folder (bench/gpu_check.sh, bench/gpu_bench.sh): mirrorbench run
records mb-<tag>.json and PyTorch logs torch-<tag>.jsonl (bench/torch_gpu.py), side by side.

Steady state is the median epoch time of epochs 2..n (epoch 1 alone when a run has one),
for mirrorbench and PyTorch alike; warm-up (plans, kernel loading, graph capture; PyTorch's
first steps) is reported separately. Prints a table, the ratios and the issue's targets, and
writes results.json into the folder. Standard library only.

Usage: gpu_summary.py OUT_DIR
"""
import glob
import json
import os
import statistics
import sys

# cnn::train_flops_per_image (core/model/cnn_spec.cpp): multiply-adds x 2; backward =
# grad-input + grad-weight, no grad-input for conv1.
CONV1 = 2.0 * 26 * 26 * 32 * 9
CONV2 = 2.0 * 11 * 11 * 64 * 32 * 9
FC1 = 2.0 * 1600 * 64
FC2 = 2.0 * 64 * 10
FLOPS_PER_IMAGE = CONV1 * 2 + (CONV2 + FC1 + FC2) * 3

TARGETS = {  # seconds per epoch of 60,000 images at batch 128, one H200
    "tf32_epoch_s": 0.025,
    "fp32_epoch_s": 0.060,
    "speedup_vs_torch_fp32": 10.0,
    "exposed_comm_share": 0.05,
    "replica_acc_diff": 1e-3,
    "tf32_val_acc": 0.88,
}


def steady(times):
    if not times:
        return None
    return statistics.median(times[1:]) if len(times) > 1 else times[0]


def mirrorbench(path):
    try:
        r = json.load(open(path))
    except (OSError, ValueError) as e:
        return {"status": "unreadable", "error": str(e)}
    cfg = r.get("config", {})
    out = {"status": r.get("status"), "error": r.get("error", ""), "devices": cfg.get("devices"),
           "precision": cfg.get("precision", "fp32"), "communicator": cfg.get("communicator"),
           "replicas": cfg.get("replicas"), "images": cfg.get("train_size"), "warmup_s": r.get("warmup_s"),
           "in_sync": r.get("replicas_in_sync"), "comm": r.get("comm")}
    epochs = r.get("epochs") or []
    if epochs:
        times = [e["time_s"] for e in epochs]
        out.update({"epochs": len(epochs), "epoch_times_s": times, "first_epoch_s": times[0],
                    "steady_s": steady(times), "val_acc": epochs[-1]["val_acc"],
                    "val_accs": [e["val_acc"] for e in epochs], "train_loss": epochs[-1]["train_loss"],
                    "allreduce_share": steady([e["allreduce_s"] / e["time_s"] for e in epochs if e["time_s"] > 0])})
    return out


def torch_run(path):
    rows, warmup = [], None
    try:
        for line in open(path):
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            if "epoch" in j:
                rows.append(j)
            elif "warmup_s" in j:
                warmup = j["warmup_s"]
    except (OSError, ValueError) as e:
        return {"status": "unreadable", "error": str(e)}
    if not rows:
        return {"status": "no result"}
    times = [r["time_s"] for r in rows]
    return {"status": "completed", "mode": rows[-1]["mode"], "epochs": len(rows), "epoch_times_s": times,
            "first_epoch_s": times[0], "steady_s": steady(times), "warmup_s": warmup,
            "val_acc": rows[-1]["val_acc"], "val_accs": [r["val_acc"] for r in rows],
            "train_loss": rows[-1]["train_loss"], "images": rows[-1]["images"]}


def verdict(ok):
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def main():
    out = sys.argv[1]
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "mb-*.json"))):
        runs["mirrorbench " + os.path.basename(path)[3:-5]] = mirrorbench(path)
    for path in sorted(glob.glob(os.path.join(out, "torch-*.jsonl"))):
        runs["pytorch " + os.path.basename(path)[6:-6]] = torch_run(path)
    for r in runs.values():
        if r.get("steady_s"):
            r["tflops"] = FLOPS_PER_IMAGE * r["images"] / r["steady_s"] / 1e12

    lines = [f"forward + backward: {FLOPS_PER_IMAGE / 1e6:.2f} MFLOP per image; steady = median of epochs 2..n", ""]
    lines.append("%-34s %9s %9s %9s %8s %8s  %s" % ("run", "steady s", "1st ep s", "warmup s", "TFLOP/s", "val_acc",
                                                   "notes"))
    for name, r in runs.items():
        if not r.get("steady_s"):
            lines.append("%-34s %s" % (name, f"{r.get('status')}: {r.get('error', '')}".strip()))
            continue
        notes = []
        if r.get("communicator"):
            notes.append(r["communicator"])
        comm = r.get("comm")
        if comm:
            share = comm["exposed_s"] / comm["step_no_comm_s"] if comm.get("step_no_comm_s") else None
            notes.append(f"exposed {comm['exposed_s'] * 1e6:.1f} us/step"
                         + (f" ({100 * share:.1f} %)" if share is not None else "")
                         + f", all-reduce {comm['allreduce_s'] * 1e6:.1f} us, algbw {comm['algbw_gbs']:.1f} GB/s,"
                         f" busbw {comm['busbw_gbs']:.1f} GB/s")
        if r.get("in_sync") is False:
            notes.append("REPLICAS OUT OF SYNC")
        warm = r.get("warmup_s")
        lines.append("%-34s %9.4f %9.4f %9s %8.3f %8.4f  %s" % (
            name, r["steady_s"], r["first_epoch_s"], f"{warm:.3f}" if warm is not None else "-", r["tflops"],
            r["val_acc"], "; ".join(notes)))

    def get(name):
        r = runs.get(name)
        return r if r and r.get("steady_s") else None

    fp32, tf32, x2 = get("mirrorbench fp32"), get("mirrorbench tf32"), get("mirrorbench cuda0x2")
    mpi, torch32 = get("mirrorbench mpi"), get("pytorch fp32")
    results = {"flops_per_image": FLOPS_PER_IMAGE, "runs": runs, "targets": {}}
    t = results["targets"]
    t["tf32 steady epoch <= 25 ms"] = verdict(tf32 and tf32["steady_s"] <= TARGETS["tf32_epoch_s"])
    t["fp32 steady epoch <= 60 ms"] = verdict(fp32 and fp32["steady_s"] <= TARGETS["fp32_epoch_s"])
    if fp32 and torch32:
        results["speedup_vs_torch_fp32"] = torch32["steady_s"] / fp32["steady_s"]
    t[">= 10x PyTorch eager fp32"] = verdict(
        results["speedup_vs_torch_fp32"] >= TARGETS["speedup_vs_torch_fp32"] if "speedup_vs_torch_fp32" in results
        else None)
    if fp32 and x2:
        results["replica_acc_diff"] = abs(x2["val_acc"] - fp32["val_acc"])
    t["2 simulated replicas: val_acc within 1e-3 of 1"] = verdict(
        results["replica_acc_diff"] <= TARGETS["replica_acc_diff"] if "replica_acc_diff" in results else None)
    t["tf32 val_acc >= 0.88 after 5 epochs"] = verdict(
        tf32 and tf32["epochs"] >= 5 and tf32["val_acc"] >= TARGETS["tf32_val_acc"])
    nccl = mpi if mpi and mpi.get("comm") else None
    share = None
    if nccl and nccl["comm"].get("step_no_comm_s"):
        share = nccl["comm"]["exposed_s"] / nccl["comm"]["step_no_comm_s"]
    t["exposed NCCL communication <= 5 % of the step"] = verdict(
        None if share is None else share <= TARGETS["exposed_comm_share"])

    lines.append("")
    if "speedup_vs_torch_fp32" in results:
        lines.append(f"mirrorbench fp32 vs PyTorch eager fp32: {results['speedup_vs_torch_fp32']:.2f}x faster (steady state)")
    if tf32 and fp32:
        lines.append(f"tf32 vs fp32: {fp32['steady_s'] / tf32['steady_s']:.2f}x faster, val_acc {tf32['val_acc']:.4f} "
                     f"vs {fp32['val_acc']:.4f}")
    if "replica_acc_diff" in results:
        lines.append(f"2 simulated replicas on one GPU: {x2['steady_s'] / fp32['steady_s']:.2f}x the 1-replica epoch, "
                     f"val_acc {x2['val_acc']:.4f} vs {fp32['val_acc']:.4f}")
    lines.append("")
    lines.append("targets (one H200; n/a: not measurable here, e.g. NCCL needs 2 GPUs for a collective):")
    for k, v in t.items():
        lines.append(f"  {v:5} {k}")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
