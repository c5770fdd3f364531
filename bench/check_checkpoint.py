#!/usr/bin/python3
"""Loads a mirrorbench checkpoint (--save FILE.safetensors) into the PyTorch model of
bench/torch_model.py with load_state_dict(strict=True) and prints its validation accuracy,
to compare with the val_acc mirrorbench reported for the same weights.

Reads safetensors by hand (8-byte little-endian header length, JSON header, raw data) so it
needs only torch; with the `safetensors` package, `safetensors.torch.load_file` does the same.
Usage: bench/check_checkpoint.py FILE.safetensors [--data DIR]
"""
import argparse
import json
import struct

import torch

from torch_model import Net, load


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
    args = ap.parse_args()
    tensors, meta = read_safetensors(args.checkpoint)
    # The dense width is the model's (--model dense:N): fc1.weight is [width, 1600].
    hidden = tensors["fc1.weight"].shape[0]
    net = Net(hidden)
    net.load_state_dict(tensors, strict=True)
    net.eval()
    _, _, vx, vy = load(args.data, 0)
    with torch.no_grad():
        correct = sum((net(vx[i:i + 1000]).argmax(1) == vy[i:i + 1000]).sum().item() for i in range(0, len(vx), 1000))
    print(json.dumps({"checkpoint": args.checkpoint, "run_id": meta.get("run_id"), "model": meta.get("model"),
                      "dense_width": hidden, "val_acc": correct / len(vx)}))


if __name__ == "__main__":
    main()
