#!/usr/bin/python3
"""A mirrorbench model in PyTorch, for side-by-side timing with mirrorbench (bench/cpu_bench.sh,
bench/model_bench.sh).

Same model (the reference CNN conv32-pool-conv64-pool-dense64-dense10 unless --model names
another: any mirrorbench model text or preset, built by torch_model.net_from_summary), same Keras-default Adam hyperparameters
(lr 1e-3, betas 0.9/0.999, eps 1e-7), same global batch, data resident in memory as float
tensors. Modes:
  --procs 1 --threads T      one process, T intra-op threads
  --synthetic N              the first N of mirrorbench's synthetic images of the model's shape
                             (--data synthetic:HxWxC:K, remade bit for bit by synthetic_images.py)
                             and its validation set, instead of the IDX data: the same values,
                             because time depends on them (a set learnt to zero loss fills the
                             gradients with subnormal floats)
  --procs P                  DistributedDataParallel over gloo, P processes x 1 thread, each
                             rank taking its contiguous share of every global batch
Prints one JSON line per epoch: {"mode", "epoch", "time_s", "val_acc", "train_loss"}.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

import synthetic_images
from torch_model import Net, load, model_summary, net_from_summary


def evaluate(model, vx, vy):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(vx), 1000):
            correct += (model(vx[i:i + 1000]).argmax(1) == vy[i:i + 1000]).sum().item()
    model.train()
    return correct / len(vx)


def synthetic(summary, count):
    """The first `count` training images and the validation set of mirrorbench's synthetic data
    of the model's shape and class count, values as the loader gives them (uint8 / 255)."""
    h, w, c = summary["input_shape"] if summary else (28, 28, 1)
    classes = summary["classes"] if summary else 10
    train, val = synthetic_images.split_sizes(h, w, c)
    def make(n, seed):
        pixels, labels = synthetic_images.make_images(h, w, c, classes, n, seed)
        return torch.from_numpy(pixels).to(torch.float32) / 255.0, torch.from_numpy(labels).to(torch.int64)
    return (*make(min(count, train), synthetic_images.TRAIN_SEED), *make(val, synthetic_images.VAL_SEED))


def train(rank, procs, args, mode):
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads if procs == 1 else 1)
    if procs > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=procs)
    summary = model_summary(args.model) if args.model else None
    xs, ys, vx, vy = synthetic(summary, args.synthetic) if args.synthetic else load(args.data, args.limit_train)
    model = net_from_summary(summary) if summary else Net()
    if procs > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    n, b = len(xs), args.batch
    gen = torch.Generator().manual_seed(args.seed)
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(n, generator=gen)
        if procs > 1:
            dist.barrier()
        t0 = time.perf_counter()
        loss_sum, seen = 0.0, 0
        for s in range(0, n, b):
            idx = order[s:s + b]
            lo, hi = len(idx) * rank // procs, len(idx) * (rank + 1) // procs
            mine = idx[lo:hi]
            out = model(xs[mine])
            # Sum over my samples / global batch, gradients summed by DDP's all-reduce:
            # DDP averages over ranks, so multiply by procs to get MirroredStrategy's sum.
            loss = F.cross_entropy(out, ys[mine], reduction="sum") / len(idx) * procs
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(idx) / procs  # rank 0's own samples
            seen += len(mine)
        if procs > 1:
            dist.barrier()
        elapsed = time.perf_counter() - t0
        if rank == 0:
            net = model.module if procs > 1 else model
            print(json.dumps({"mode": mode, "epoch": epoch, "time_s": elapsed, "val_acc": evaluate(net, vx, vy),
                              "train_loss": loss_sum / seen}), flush=True)
    if procs > 1:
        dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--model", default="", help="a mirrorbench model text or preset (default: the reference CNN)")
    ap.add_argument("--synthetic", type=int, default=0, help="train on the first N of mirrorbench's synthetic images of the model's shape")
    ap.add_argument("--port", type=int, default=29517)
    args = ap.parse_args()
    mode = f"torch {args.procs}proc x {args.threads if args.procs == 1 else 1}thr" + (" DDP" if args.procs > 1 else "")
    if args.procs == 1:
        train(0, 1, args, mode)
    else:
        mp.spawn(train, args=(args.procs, args, mode), nprocs=args.procs, join=True)


if __name__ == "__main__":
    main()
