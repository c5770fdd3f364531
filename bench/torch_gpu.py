#!/usr/bin/env python3
"""The reference CNN in PyTorch eager on one GPU, for side-by-side timing with mirrorbench
(bench/gpu_bench.sh).

Same model and data loader as the CPU benchmark (bench/torch_model.py), same Keras-default
Adam hyperparameters (lr 1e-3, betas 0.9/0.999, eps 1e-7), same global batch. The whole data
set is resident on the GPU as float tensors (x / 255 in float32, as mirrorbench normalises);
each step indexes a shuffled order on the GPU, runs forward, sum cross-entropy / batch,
backward and Adam (PyTorch's default foreach implementation). Metrics stay on the GPU until
the epoch ends: no per-step host sync. Convolutions run in plain FP32 like mirrorbench's cuDNN
path unless --tf32 is given (PyTorch's own default lets cuDNN use TF32).

Warm-up is excluded as mirrorbench excludes it: before the first epoch, untimed, one step of
each batch shape the run uses (the full batch and the last partial one) loads the kernels and
lets cuDNN pick its algorithms; the model and optimizer state are then restored, so epoch 1
starts from the same weights. Benchmarks take the median of epochs 2..n as steady state.

Prints {"mode", "warmup_s"} and then one JSON line per epoch:
{"mode", "epoch", "time_s", "val_acc", "train_loss", "images"}.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--tf32", action="store_true", help="let cuDNN/cuBLAS use TF32 (PyTorch's conv default)")
    ap.add_argument("--no-warmup", action="store_true", help="time epoch 1 from a cold start")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        sys.exit("torch_gpu.py: PyTorch sees no CUDA device")
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)

    xs, ys, vx, vy = load(args.data, args.limit_train)
    xs, ys, vx, vy = (t.to(dev) for t in (xs, ys, vx, vy))
    model = Net().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    n, b = len(xs), args.batch
    gen = torch.Generator(device=dev).manual_seed(args.seed)
    mode = "torch eager " + torch.cuda.get_device_name(dev) + (" tf32" if args.tf32 else " fp32")

    def step(idx):
        out = model(xs[idx])
        loss = F.cross_entropy(out, ys[idx], reduction="sum") / len(idx)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    if not args.no_warmup:
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        saved_model, saved_opt = copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict())
        for size in sorted({b, n % b} - {0}, reverse=True):
            step(torch.arange(size, device=dev))
        model.load_state_dict(saved_model)
        opt.load_state_dict(saved_opt)
        torch.cuda.synchronize(dev)
        print(json.dumps({"mode": mode, "warmup_s": time.perf_counter() - t0}), flush=True)

    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(n, device=dev, generator=gen)
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=dev)
        for s in range(0, n, b):
            idx = order[s:s + b]
            loss = step(idx)
            loss_sum += loss.detach() * len(idx)
        torch.cuda.synchronize(dev)
        elapsed = time.perf_counter() - t0
        print(json.dumps({"mode": mode, "epoch": epoch, "time_s": elapsed, "val_acc": evaluate(model, vx, vy),
                          "train_loss": loss_sum.item() / n, "images": n}), flush=True)


if __name__ == "__main__":
    main()
