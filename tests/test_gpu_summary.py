#!/usr/bin/env python3
"""bench/gpu_summary.py on made-up check folders (no GPU needed): the PyTorch columns beside
mirrorbench's with their ratios, the kernel lab's verdict (errors apart from failed checks),
the cuDNN choices, the graph and eager step counts, the fault runs and the targets (n/a
where the runs cannot tell: one epoch, records without step counts); and a folder with
almost nothing in it (the summary is rewritten after every step of the check, so it must
cope with partial results). Run by ctest (gpu_summary_test)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SUMMARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "gpu_summary.py")


def record(precision, times, devices="cuda:0", graphs=(128,), acc=0.9, steps=(2345, 0)):
    return {"config": {"devices": devices, "precision": precision, "communicator": "nccl", "replicas": 1,
                       "train_size": 60000},
            "epochs": [{"epoch": i + 1, "time_s": t, "val_acc": acc, "train_loss": 0.3, "allreduce_s": 0.001}
                       for i, t in enumerate(times)],
            "warmup_s": 2.5, "replicas_in_sync": True, "status": "completed", "error": "",
            "comm": {"replicas": 1, "allreduce_s": 5e-6, "exposed_s": 1e-6, "algbw_gbs": 90, "busbw_gbs": 0,
                     "step_no_comm_s": 1e-4},
            "engine": {"path": "cudnn", "graph_batches": list(graphs), "eager_batches": [96],
                       **({"graph_steps": steps[0], "eager_steps": steps[1]} if steps else {}),
                       "graph_nodes": {"kernel": 20, "memset": 1, "memcpy": 0, "other": 0, "total": 21},
                       "conv": [{"pass": "conv1 weight gradient", "batch": 128, "algo": 1, "algo_name": "ALGO_1",
                                 "math": "fma", "workspace_bytes": 0, "time_us": 12.5, "chosen_by": "measured"}]}}


def write(folder, name, content):
    with open(os.path.join(folder, name), "w") as f:
        f.write(content if isinstance(content, str) else json.dumps(content))


def run(folder):
    p = subprocess.run([sys.executable, SUMMARY, folder], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"gpu_summary.py failed: {p.stderr}")
    return p.stdout


class GpuSummaryTest(unittest.TestCase):
    def test_full_folder(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "lab.json", [
                {"name": "fused conv2 forward", "group": "fused", "n": 128, "validated": True, "passed": False,
                 "detail": "p2: 3 element(s) off", "time_us": 40.0, "gflops": 1, "gbs": 1, "peak_share": 0.2},
                {"name": "train step, cudnn path, fp32", "group": "train step", "n": 128, "validated": True,
                 "passed": True, "detail": "0.1", "time_us": 120.0, "gflops": 1, "gbs": 1, "peak_share": 0.1}])
            write(d, "mb-fp32.json", record("fp32", [0.09, 0.05, 0.05, 0.05, 0.05]))
            write(d, "mb-tf32.json", record("tf32", [0.05, 0.02, 0.02, 0.02, 0.02], acc=0.89))
            write(d, "mb-cuda0x2.json", record("fp32", [0.1, 0.08, 0.08], devices="cuda:0,cuda:0", acc=0.9004))
            lines = [{"mode": "torch eager NVIDIA H200 fp32", "warmup_s": 3.0, "adam": "fused"}]
            lines += [{"mode": "torch eager NVIDIA H200 fp32", "epoch": e, "time_s": 0.5, "val_acc": 0.9,
                       "train_loss": 0.3, "images": 60000} for e in (1, 2, 3)]
            lines += [{"mode": "torch graphs NVIDIA H200 fp32", "warmup_s": 4.0, "adam": "fused"}]
            lines += [{"mode": "torch graphs NVIDIA H200 fp32", "epoch": e, "time_s": 0.2, "val_acc": 0.9,
                       "train_loss": 0.3, "images": 60000} for e in (1, 2, 3)]
            write(d, "torch-fp32-main.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n")
            write(d, "torch-fp32-compile.jsonl",
                  json.dumps({"mode": "torch compile NVIDIA H200 fp32", "skipped": "no triton"}) + "\n")
            write(d, "steps.tsv", "lab\t1\t40\tFAILED\nfault-stall\t1\t17\tok: ended in 17 s with the expected "
                                  "message\nfault-hang\t124\t50\tFAILED: exit 124, expected exit 1\n")
            out = run(d)
            self.assertIn("kernel lab: 1 of 2 checks passed", out)
            self.assertIn("FAIL fused fused conv2 forward (batch 128): p2: 3 element(s) off", out)
            # Every PyTorch column beside ours, with the ratio to mirrorbench's cudnn path.
            self.assertIn("torch eager", out)
            self.assertIn("torch graphs", out)
            self.assertIn("torch compile", out)
            self.assertIn("0.5000 (x10.0)", out)
            self.assertIn("0.2000 (x4.0)", out)
            self.assertIn("skipped", out)
            self.assertIn("cuDNN fp32 conv1 weight gradient: ALGO_1 (fma math, 0 B), measured, 12.5 us", out)
            self.assertIn("PASS  >= 10x PyTorch eager fp32", out)
            self.assertIn("PASS  fp32 steady epoch <= 60 ms", out)
            self.assertIn("PASS  tf32 steady epoch <= 25 ms", out)
            self.assertIn("PASS  the standard step ran as a CUDA graph", out)
            self.assertIn("FAIL  kernel lab: every check passes", out)
            self.assertIn("PASS  fault-stall ends in bounded time", out)
            self.assertIn("FAIL  fault-hang ends in bounded time", out)
            self.assertIn("PASS  2 simulated replicas", out)
            with open(os.path.join(d, "results.json")) as f:
                results = json.load(f)
            self.assertAlmostEqual(results["speedups"]["fp32 vs torch graphs"], 4.0)
            self.assertEqual(results["lab"], {"checks": 2, "failed": 1})

    def test_graphs_not_used_fails_the_target(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "mb-fp32.json", record("fp32", [0.1, 0.1], graphs=()))
            self.assertIn("FAIL  the standard step ran as a CUDA graph", run(d))

    def test_step_counts(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "mb-fp32.json", record("fp32", [0.05], steps=(465, 4)))
            write(d, "mb-tf32.json", record("tf32", [0.02], acc=0.91))
            out = run(d)
            self.assertIn("(465 steps as graphs, 4 eager)", out)
            self.assertIn("FAIL  every fp32 step replayed a CUDA graph", out)
            # One epoch: the accuracy target after 5 cannot be judged.
            self.assertIn("n/a   tf32 val_acc >= 0.88 after 5 epochs", out)
            write(d, "mb-fp32.json", record("fp32", [0.05], steps=(469, 0)))
            self.assertIn("PASS  every fp32 step replayed a CUDA graph", run(d))
            write(d, "mb-fp32.json", record("fp32", [0.05], steps=None))  # a record of before the counts
            out = run(d)
            self.assertIn("n/a   every fp32 step replayed a CUDA graph", out)
            self.assertNotIn("steps as graphs", out.split("mirrorbench fp32")[1].splitlines()[0])

    def test_lab_errors(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "lab.json", [
                {"name": "Adam (fused)", "group": "own kernel", "n": 128, "validated": True, "passed": True,
                 "error": False, "detail": "0", "time_us": 10.0, "gflops": 1, "gbs": 1, "peak_share": 0.1},
                {"name": "train steps: stopped by an error", "group": "train step", "n": 128, "validated": True,
                 "passed": False, "error": True, "detail": "nccl: init failed", "time_us": -1, "gflops": 0,
                 "gbs": 0, "peak_share": 0}])
            out = run(d)
            self.assertIn("kernel lab: 1 of 1 checks passed, 1 part(s) stopped by an error", out)
            self.assertIn("ERROR train step train steps: stopped by an error (batch 128): nccl: init failed", out)
            self.assertIn("FAIL  kernel lab: every check passes", out)

    def test_partial_folder(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, "steps.tsv", "lab\t0\t30\tok\n")
            write(d, "mb-fp32.json", "{ not json")
            out = run(d)
            self.assertIn("unreadable", out)
            self.assertIn("n/a", out)


if __name__ == "__main__":
    unittest.main()
