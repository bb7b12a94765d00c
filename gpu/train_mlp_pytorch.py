#!/usr/bin/env python3
"""PyTorch's side of `./vram4j train --device cuda` (the default MLP job), for the side-by-side row of gpu/run.sh:
the same model (784-512-512-10, ReLU, torch.nn.Linear's initialization), the same data and normalization
(Fashion-MNIST IDX files, pixels / 255 normalized with the training set's mean 0.2860 and std 0.3530), the same
optimizer and schedule (SGD lr 0.05, momentum 0.9, cosine annealing per step over all steps), batch 128, shuffled
every epoch, 3 epochs. Prints one JSON line: epoch seconds, test accuracy, peak allocated and reserved bytes.

Two ways to feed the GPU (--loader): `device` keeps the whole data set in GPU memory and indexes batches there (the
fastest PyTorch can go, no copies); `pinned` is the seeds' practice and what vram4j's train does on cuda: the data
stays in host memory, torch.utils.data.DataLoader(pin_memory=True) hands out page-locked batches and each is copied
with .to('cuda', non_blocking=True).

usage: train_mlp_pytorch.py --data DIR [--epochs 3] [--batch-size 128] [--seed 42] [--loader device|pinned]
"""
import argparse
import gzip
import json
import math
import struct
import sys
import time
from pathlib import Path

import torch


def read_idx(path):
    with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        sys.exit(f"{path}: truncated IDX file")
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    if magic >> 8 != 0x08 or dims not in (1, 3):
        sys.exit(f"{path}: not an unsigned-byte IDX file (magic 0x{magic:08x})")
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    body = data[4 + 4 * dims:]
    if len(body) != math.prod(shape):
        sys.exit(f"{path}: {len(body)} bytes of data for shape {shape}")
    return torch.frombuffer(bytearray(body), dtype=torch.uint8).reshape(shape)


def load(folder, kind):
    def find(stem):
        for name in (stem + ".gz", stem):
            if (folder / name).is_file():
                return folder / name
        sys.exit(f"{folder}: no {stem}[.gz]")
    prefix = "train" if kind == "train" else "t10k"
    x = read_idx(find(f"{prefix}-images-idx3-ubyte")).float().div_(255).sub_(0.2860).div_(0.3530).reshape(-1, 784)
    y = read_idx(find(f"{prefix}-labels-idx1-ubyte")).long()
    if len(x) != len(y):
        sys.exit(f"{folder}: {len(x)} {kind} images but {len(y)} labels")
    return x, y


def sync(gpu):
    if gpu:
        torch.cuda.synchronize()


def batches(a, xtr, ytr, gen, dev):
    """One epoch's shuffled batches on the GPU, by --loader (see the module's text)."""
    if a.loader == "device":
        order = torch.randperm(len(xtr), generator=gen).to(dev)
        for i in range(0, len(xtr), a.batch_size):
            idx = order[i:i + a.batch_size]
            yield xtr[idx], ytr[idx]
        return
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr), batch_size=a.batch_size,
                                         shuffle=True, generator=gen, pin_memory=dev.type == "cuda")
    for xb, yb in loader:
        yield xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--loader", choices=("device", "pinned"), default="device")
    p.add_argument("--device", default="cuda", help="cuda (default), or cpu to check the script itself: no memory figures")
    a = p.parse_args()
    if a.epochs < 1 or a.batch_size < 1:
        sys.exit("--epochs and --batch-size must be at least 1")
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    gpu = dev.type == "cuda"
    xtr, ytr = load(a.data, "train")
    if a.loader == "device":
        xtr, ytr = xtr.to(dev), ytr.to(dev)
    xte, yte = (t.to(dev) for t in load(a.data, "test"))
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    steps = a.epochs * math.ceil(len(xtr) / a.batch_size)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    gen = torch.Generator(device="cpu").manual_seed(a.seed)
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    epoch_seconds = []
    for _ in range(a.epochs):
        sync(gpu)
        t0 = time.perf_counter()
        for xb, yb in batches(a, xtr, ytr, gen, dev):
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        sync(gpu)
        epoch_seconds.append(time.perf_counter() - t0)
    with torch.no_grad():
        correct = sum(int((model(xte[i:i + a.batch_size]).argmax(1) == yte[i:i + a.batch_size]).sum())
                      for i in range(0, len(xte), a.batch_size))
    print(json.dumps({"torch": torch.__version__, "loader": a.loader, "train_samples": len(xtr), "test_samples": len(xte),
                      "epoch_seconds": [round(s, 3) for s in epoch_seconds],
                      "test_accuracy": correct / len(xte),
                      "peak_allocated_bytes": torch.cuda.max_memory_allocated() if gpu else None,
                      "peak_reserved_bytes": torch.cuda.max_memory_reserved() if gpu else None}))


if __name__ == "__main__":
    main()
