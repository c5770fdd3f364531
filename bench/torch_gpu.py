#!/usr/bin/env python3
"""The reference CNN in PyTorch eager on one GPU, for side-by-side timing with mirrorbench
(bench/gpu_bench.sh).

Same model and initialisation as bench/torch_cnn.py's Net, same Keras-default Adam
hyperparameters (lr 1e-3, betas 0.9/0.999, eps 1e-7), same global batch. Needs only torch: a
pip-installed PyTorch does not necessarily bring numpy, which torch_cnn.py imports, so the IDX
reader and the module are repeated here (torch.frombuffer instead of numpy). The whole data
set is resident on the GPU as float tensors (x / 255 in float32, as mirrorbench normalises);
each step indexes a shuffled order on the GPU, runs forward, sum cross-entropy / batch,
backward and Adam (PyTorch's default foreach implementation). Metrics stay on the GPU until
the epoch ends: no per-step host sync. Convolutions run in plain FP32 like mirrorbench's cuDNN
path unless --tf32 is given (PyTorch's own default lets cuDNN use TF32).

Prints one JSON line per epoch: {"mode", "epoch", "time_s", "val_acc", "train_loss", "images"}.
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def find(data_dir, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    sys.exit(f"torch_gpu.py: {stem}[.gz] not found in {data_dir}")


def load(data_dir, limit):
    xs = read_idx(find(data_dir, "train-images-idx3-ubyte"))
    ys = read_idx(find(data_dir, "train-labels-idx1-ubyte"))
    vx = read_idx(find(data_dir, "t10k-images-idx3-ubyte"))
    vy = read_idx(find(data_dir, "t10k-labels-idx1-ubyte"))
    if limit:
        xs, ys = xs[:limit], ys[:limit]
    to_x = lambda a: (a.to(torch.float32) / 255.0).unsqueeze(1)
    to_y = lambda a: a.to(torch.int64)
    return to_x(xs), to_y(ys), to_x(vx), to_y(vy)


class Net(nn.Module):
    # torch_cnn.Net: conv32-pool-conv64-pool-dense64-dense10, Keras-default initialisation.
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.fc1 = nn.Linear(1600, 64)
        self.fc2 = nn.Linear(64, 10)
        for m in (self.conv1, self.conv2, self.fc1, self.fc2):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


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

    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(n, device=dev, generator=gen)
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=dev)
        for s in range(0, n, b):
            idx = order[s:s + b]
            out = model(xs[idx])
            loss = F.cross_entropy(out, ys[idx], reduction="sum") / len(idx)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach() * len(idx)
        torch.cuda.synchronize(dev)
        elapsed = time.perf_counter() - t0
        print(json.dumps({"mode": mode, "epoch": epoch, "time_s": elapsed, "val_acc": evaluate(model, vx, vy),
                          "train_loss": loss_sum.item() / n, "images": n}), flush=True)


if __name__ == "__main__":
    main()
