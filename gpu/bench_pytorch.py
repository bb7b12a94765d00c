#!/usr/bin/env python3
"""PyTorch's side of vram4j's GPU bench (io.vram4j.bench.gpu.GpuBench), same sizes and method, same machine:
the caching allocator's cache-hit pair through torch.cuda.caching_allocator_alloc / caching_allocator_delete
(Python-call overhead included, as a Python user pays it), and tensor.to('cuda', non_blocking=True) /
.to('cpu') copy bandwidth from pageable and pinned host tensors on a side stream."""
import statistics
import time

import torch

MIB = 1 << 20


def human(n):
    return f"{n >> 30} GiB" if n >= 1 << 30 else f"{n >> 20} MiB" if n >= MIB else f"{n >> 10} KiB" if n >= 1024 else f"{n} B"


def median_ns(batches, per_batch, op):
    for _ in range(per_batch):
        op()
    times = []
    for _ in range(batches):
        t0 = time.perf_counter_ns()
        for _ in range(per_batch):
            op()
        times.append((time.perf_counter_ns() - t0) / per_batch)
    return statistics.median(times)


def gbps(nbytes, reps, copy):
    copy()
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        copy()
        rates.append(nbytes / (time.perf_counter_ns() - t0))
    return statistics.median(rates)


def main():
    torch.cuda.init()
    print(f"== PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    print("-- malloc+free pair, ns (median of 21 batches)   caching_allocator_alloc+delete")
    for size in (512, 4096, MIB, 16 * MIB):
        torch.cuda.caching_allocator_delete(torch.cuda.caching_allocator_alloc(size, 0))
        ns = median_ns(21, 20000, lambda: torch.cuda.caching_allocator_delete(torch.cuda.caching_allocator_alloc(size, 0)))
        print(f"   {human(size):<10} {ns:12.0f}")
    print("-- copy bandwidth, GB/s (median)   H2D pageable | H2D pinned | D2H pageable | D2H pinned")
    s = torch.cuda.Stream()
    for size in (MIB, 16 * MIB, 256 * MIB, 1024 * MIB):
        pageable = torch.ones(size, dtype=torch.uint8)
        pinned = torch.ones(size, dtype=torch.uint8).pin_memory()
        dev = torch.empty(size, dtype=torch.uint8, device="cuda")
        reps = 7 if size >= 256 * MIB else 31

        def h2d(src):
            def run():
                with torch.cuda.stream(s):
                    dev.copy_(src, non_blocking=True)
                s.synchronize()
            return run

        def d2h(dst):
            def run():
                with torch.cuda.stream(s):
                    dst.copy_(dev, non_blocking=True)
                s.synchronize()
            return run

        print(f"   {human(size):<10} {gbps(size, reps, h2d(pageable)):8.2f} | {gbps(size, reps, h2d(pinned)):8.2f} | "
              f"{gbps(size, reps, d2h(pageable)):8.2f} | {gbps(size, reps, d2h(pinned)):8.2f}")
        del pageable, pinned, dev


if __name__ == "__main__":
    main()
