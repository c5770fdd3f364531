#!/usr/bin/env python3
"""The reference CNN in PyTorch on one GPU at its best, for side-by-side timing with mirrorbench
(bench/gpu_check.sh, bench/gpu_bench.sh): a fair anchor.

Same model and data loader as the CPU benchmark (bench/torch_model.py), same Keras-default
Adam hyperparameters (lr 1e-3, betas 0.9/0.999, eps 1e-7), same global batch. The whole data
set is resident on the GPU as float tensors (x / 255 in float32, as mirrorbench normalises);
each step indexes a shuffled order on the GPU, runs forward, sum cross-entropy / batch,
backward and Adam. Metrics stay on the GPU until the epoch ends: no per-step host sync.
PyTorch gets what a careful user would give it: the fused Adam (one kernel for all parameters,
where this PyTorch has it, else foreach) and cudnn.benchmark = True (cuDNN's algorithms chosen
by measurement, like mirrorbench's warm-up). Convolutions and GEMMs run in plain FP32 unless
--tf32 is given (PyTorch's own default lets cuDNN use TF32).

Modes (--modes, one process, each timed on its own model and optimizer):
  eager    the step as Python calls
  graphs   the whole step (forward, backward, Adam) captured once into a CUDA graph and
           replayed, PyTorch's "whole network capture" (capturable Adam, static batch buffers);
           the last partial batch runs eagerly
  compile  torch.compile of the model (default mode), Adam eager; skipped where this PyTorch
           has no torch.compile, or when compiling fails (its message is printed)
Warm-up is excluded as mirrorbench excludes it: before the first epoch, untimed, every batch
shape the run uses runs (kernels loaded, cuDNN's benchmark done, graphs captured, compilation
done); the model and optimizer state are then restored, so epoch 1 starts from the same
weights. Benchmarks take the median of epochs 2..n as steady state.

Prints, per mode, {"mode", "warmup_s"} (or {"mode", "skipped"}) and then one JSON line per
epoch: {"mode", "epoch", "time_s", "val_acc", "train_loss", "images"}.
"""
import argparse
import copy
import json
import sys
import time

import torch
import torch.nn.functional as F

from torch_model import Net, load


def evaluate(model, vx, vy):
    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=vx.device)
    with torch.no_grad():
        for i in range(0, len(vx), 1000):
            correct += (model(vx[i:i + 1000]).argmax(1) == vy[i:i + 1000]).sum()
    model.train()
    return correct.item() / len(vx)


def make_adam(params, capturable):
    """Fused Adam where this PyTorch has it (2.0+), foreach otherwise; capturable for graphs."""
    kw = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    try:
        return torch.optim.Adam(params, fused=True, capturable=capturable, **kw), "fused"
    except (TypeError, RuntimeError):
        return torch.optim.Adam(params, foreach=True, capturable=capturable, **kw), "foreach"


class Runner:
    """One mode's model, optimizer and step function over the resident data."""

    def __init__(self, mode, xs, ys, batch, dev):
        self.mode, self.xs, self.ys, self.batch, self.dev = mode, xs, ys, batch, dev
        torch.manual_seed(1)
        self.model = Net().to(dev)
        self.net = self.model
        if mode == "compile":
            self.net = torch.compile(self.model)
        self.opt, self.adam = make_adam(self.model.parameters(), capturable=(mode == "graphs"))
        self.graph = None

    def eager_step(self, idx):
        out = self.net(self.xs[idx])
        loss = F.cross_entropy(out, self.ys[idx], reduction="sum") / len(idx)
        self.opt.zero_grad(set_to_none=False)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def capture(self):
        """PyTorch's whole-network capture: warm up on a side stream, then capture one step."""
        self.static_idx = torch.zeros(self.batch, dtype=torch.int64, device=self.dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.eager_step(self.static_idx)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=False)
        with torch.cuda.graph(self.graph):
            self.static_loss = self.eager_step(self.static_idx)

    def step(self, idx):
        if self.graph is not None and len(idx) == self.batch:
            self.static_idx.copy_(idx)
            self.graph.replay()
            return self.static_loss.clone()
        return self.eager_step(idx)

    def warm_up(self, n):
        """Every batch shape once (and the capture), then the state restored."""
        saved_model, saved_opt = copy.deepcopy(self.model.state_dict()), copy.deepcopy(self.opt.state_dict())
        for size in sorted({self.batch, n % self.batch} - {0}, reverse=True):
            self.eager_step(torch.arange(size, device=self.dev))
        if self.mode == "graphs":
            self.capture()
        self.model.load_state_dict(saved_model)   # in place: the graph's parameters stay its own
        if self.graph is None:
            self.opt.load_state_dict(saved_opt)
        else:
            # The graph holds the optimizer's state tensors: reset them in place to a fresh
            # Adam's (zero moments, step 0) instead of replacing them.
            with torch.no_grad():
                for state in self.opt.state.values():
                    for v in state.values():
                        if torch.is_tensor(v):
                            v.zero_()


def run_mode(mode, args, data, dev, label):
    xs, ys, vx, vy = data
    n, b = len(xs), args.batch
    name = f"torch {mode} {label}"
    if mode == "compile" and not hasattr(torch, "compile"):
        print(json.dumps({"mode": name, "skipped": "this PyTorch has no torch.compile"}), flush=True)
        return
    try:
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        r = Runner(mode, xs, ys, b, dev)
        if not args.no_warmup:
            r.warm_up(n)
        torch.cuda.synchronize(dev)
        print(json.dumps({"mode": name, "warmup_s": time.perf_counter() - t0, "adam": r.adam}), flush=True)
    except Exception as e:  # a mode this PyTorch cannot run (compilation, capture) is skipped, not fatal
        print(json.dumps({"mode": name, "skipped": f"{type(e).__name__}: {e}"[:500]}), flush=True)
        return
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(n, device=dev, generator=gen)
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=dev)
        for s in range(0, n, b):
            idx = order[s:s + b]
            loss_sum += r.step(idx) * len(idx)
        torch.cuda.synchronize(dev)
        elapsed = time.perf_counter() - t0
        print(json.dumps({"mode": name, "epoch": epoch, "time_s": elapsed, "val_acc": evaluate(r.model, vx, vy),
                          "train_loss": loss_sum.item() / n, "images": n}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--modes", default="eager,graphs", help="comma-separated: eager, graphs, compile")
    ap.add_argument("--mode", help="one mode (same as --modes MODE)")
    ap.add_argument("--tf32", action="store_true", help="let cuDNN/cuBLAS use TF32 (PyTorch's conv default)")
    ap.add_argument("--no-warmup", action="store_true", help="time epoch 1 from a cold start")
    args = ap.parse_args()
    modes = [args.mode] if args.mode else [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in ("eager", "graphs", "compile"):
            sys.exit(f"torch_gpu.py: unknown mode '{m}' (eager, graphs, compile)")

    if not torch.cuda.is_available():
        sys.exit("torch_gpu.py: PyTorch sees no CUDA device")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    dev = torch.device(args.device)
    xs, ys, vx, vy = load(args.data, args.limit_train)
    data = tuple(t.to(dev) for t in (xs, ys, vx, vy))
    label = torch.cuda.get_device_name(dev) + (" tf32" if args.tf32 else " fp32")
    for m in modes:
        run_mode(m, args, data, dev, label)


if __name__ == "__main__":
    main()
