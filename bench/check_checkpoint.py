#!/usr/bin/python3
"""Loads a mirrorbench checkpoint (--save FILE.safetensors) into the same torch.nn network,
built from the model text in the checkpoint's metadata (bench/torch_model.py's
net_from_summary, through `mirrorbench-cli model TEXT --json`), with
load_state_dict(strict=True), and prints its validation accuracy on an IDX data set, to compare
with the val_acc mirrorbench reported for the same weights.

Reads safetensors by hand (8-byte little-endian header length, JSON header, raw data) so it
needs only torch; with the `safetensors` package, `safetensors.torch.load_file` does the same.
Usage: bench/check_checkpoint.py FILE.safetensors [--data DIR] [--cli PATH/mirrorbench-cli]
"""
import argparse
import json
import struct
import sys

import torch

from torch_model import load, model_summary, net_from_summary


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", f"{name}: dtype {info['dtype']}"
        begin, end = info["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32).reshape(info["shape"])
    return tensors, header.get("__metadata__", {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--cli", default=None, help="mirrorbench-cli (default: $MIRRORBENCH_CLI or build/bin's)")
    args = ap.parse_args()
    tensors, meta = read_safetensors(args.checkpoint)
    # Checkpoints older than the model text held the reference family only: fc1's rows give
    # its dense width.
    text = meta.get("model") or f"dense:{tensors['fc1.weight'].shape[0]}"
    summary = model_summary(text, args.cli)
    net = net_from_summary(summary)
    net.load_state_dict(tensors, strict=True)
    net.eval()
    if summary["input_shape"] != [28, 28, 1]:
        sys.exit(f"check_checkpoint.py: the model takes {summary['input_shape']} images; this check reads "
                 "IDX data (28x28x1) only")
    _, _, vx, vy = load(args.data, 0)
    with torch.no_grad():
        correct = sum((net(vx[i:i + 1000]).argmax(1) == vy[i:i + 1000]).sum().item() for i in range(0, len(vx), 1000))
    print(json.dumps({"checkpoint": args.checkpoint, "run_id": meta.get("run_id"), "model": summary["text"],
                      "params": summary["total_params"], "val_acc": correct / len(vx)}))

if __name__ == "__main__":
    main()
