#!/usr/bin/env python3
"""PyTorch's side of vram4j's differential test, and the comparison.

The same operation sequences (malloc, free, empty_cache, record_stream; generated from a seed by a SplitMix64
stream, exactly as vram4j's io.vram4j.bench.gpu.OpSequence does) run through PyTorch's CUDA caching allocator
(torch.cuda.caching_allocator_alloc / caching_allocator_delete / empty_cache, settings from PYTORCH_ALLOC_CONF) and
through vram4j's (io.vram4j.bench.gpu.DifferentialRun on the cuda device). At every checkpoint both write
memory_stats and the segment layout (segment size and pool, each block's offset in its segment, size and state);
`compare` reports every difference.

record_stream takes tensors, so a few blocks (malloc_tensor) are allocated as torch.empty(n, dtype=torch.uint8):
the same single malloc of n bytes on the current stream (checked after the runs). Their free (free_recorded) is
t.record_stream(side stream), dropping the last reference (the allocator frees the block and records an event on
the side stream: the block stays active_pending_free), then torch.cuda.synchronize(), so the event has completed
when the next malloc's process_events (or empty_cache) looks at it, and the block returns to its pool there.

  differential.py ops --seed S --ops N                      print the operations (checks the generators agree)
  differential.py pytorch --conf C --seeds N --ops N --every K --out F.jsonl
  differential.py compare PYTORCH.jsonl VRAM4J.jsonl        exit 0 when identical, 1 when any value, layout or
                                                            key set differs, 2 on bad input (one line naming it)
"""
import argparse
import json
import os
import sys

MASK = (1 << 64) - 1
MIB = 1 << 20
CAP = 6 << 30  # as DifferentialRun.CAP
RECORDED_PERCENT = 4  # as OpSequence.RECORDED_PERCENT


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)


def generate(seed, count, cap=CAP):
    """The operations of OpSequence.generate: ('malloc', size) / ('malloc_tensor', size) / ('free', index) /
    ('free_recorded', index) / ('empty_cache',). A block made by malloc_tensor is always freed by free_recorded."""
    g = SplitMix64(seed)

    def size():
        k = (g.next() >> 1) % 100
        if k < 55:
            return 1 + (g.next() >> 1) % MIB
        if k < 95:
            return MIB + (g.next() >> 1) % (63 * MIB)
        return 64 * MIB + (g.next() >> 1) % (448 * MIB)

    def free(idx):
        nonlocal live_bytes
        live_bytes -= live.pop(idx)
        return ("free_recorded" if tensor.pop(idx) else "free", idx)

    ops, live, tensor, live_bytes = [], [], [], 0
    for _ in range(count):
        r = (g.next() >> 11) % 1000
        if r < 5:
            ops.append(("empty_cache",))
        elif r < 470 or not live:
            s = size()
            if live_bytes + s > cap and live:
                ops.append(free(0))
            else:
                t = (g.next() >> 1) % 100 < RECORDED_PERCENT
                live.append(s)
                tensor.append(t)
                live_bytes += s
                ops.append(("malloc_tensor" if t else "malloc", s))
        else:
            ops.append(free((g.next() >> 1) % len(live)))
    return ops


def checkpoint(torch, seed, step):
    segments = [s for s in torch.cuda.memory_snapshot() if s.get("device", 0) == 0]
    segments.sort(key=lambda s: s["address"])
    layout = [{"total_size": s["total_size"], "segment_type": s["segment_type"],
               "blocks": [[b["address"] - s["address"], b["size"], b["state"]] for b in s["blocks"]]}
              for s in segments]
    return {"seed": seed, "step": step, "stats": dict(torch.cuda.memory_stats(0)), "segments": layout}


def check_tensor_alloc(torch):
    """torch.empty(n, dtype=uint8) must reach the caching allocator exactly as caching_allocator_alloc(n) does
    (one malloc of n bytes on the current stream), or malloc_tensor would not be the same operation as malloc."""
    keys = ("allocation.all.current", "allocated_bytes.all.current", "requested_bytes.all.current")

    def delta(make):
        before = torch.cuda.memory_stats(0)
        x = make()
        after = torch.cuda.memory_stats(0)
        return x, [after.get(k, 0) - before.get(k, 0) for k in keys]

    t, by_tensor = delta(lambda: torch.empty(12345, dtype=torch.uint8, device="cuda"))
    del t
    p, by_raw = delta(lambda: torch.cuda.caching_allocator_alloc(12345, 0))
    torch.cuda.caching_allocator_delete(p)
    if by_tensor != by_raw or by_raw[2] != 12345:
        raise RuntimeError(f"torch.empty(12345, uint8) changed {keys} by {by_tensor}, "
                           f"caching_allocator_alloc(12345) by {by_raw}")


def run_pytorch(conf, seeds, count, every, out):
    os.environ["PYTORCH_ALLOC_CONF"] = conf  # read when the allocator starts: before the first CUDA call
    import torch
    torch.cuda.init()
    side = torch.cuda.Stream()  # the stream record_stream marks blocks used on (DifferentialRun: newStream())
    with open(out, "w") as f:
        for seed in range(1, seeds + 1):
            live = []  # addresses from caching_allocator_alloc, and uint8 tensors for malloc_tensor
            ops = generate(seed, count)
            for i, op in enumerate(ops):
                if op[0] == "malloc":
                    live.append(torch.cuda.caching_allocator_alloc(op[1], 0))
                elif op[0] == "malloc_tensor":
                    live.append(torch.empty(op[1], dtype=torch.uint8, device="cuda"))
                elif op[0] == "free":
                    torch.cuda.caching_allocator_delete(live.pop(op[1]))
                elif op[0] == "free_recorded":
                    t = live.pop(op[1])
                    t.record_stream(side)
                    del t  # the last reference: the allocator frees the block now, recording an event on `side`
                    torch.cuda.synchronize()  # that event completes before the next allocator call
                else:
                    torch.cuda.empty_cache()
                if (i + 1) % every == 0 or i + 1 == len(ops):
                    f.write(json.dumps(checkpoint(torch, seed, i + 1)) + "\n")
            while live:  # in allocation order, as DifferentialRun
                x = live.pop(0)
                if isinstance(x, int):
                    torch.cuda.caching_allocator_delete(x)
                del x  # a tensor's block is freed here
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(0)
            torch.cuda.reset_accumulated_memory_stats(0)
    check_tensor_alloc(torch)  # after the seeds: its segment must not move the addresses the runs get
    return torch.__version__


def read_jsonl(path):
    rows = []
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise SystemExit2(f"{path}:{n}: not a JSON line ({e.msg})")
                if not isinstance(row, dict):
                    raise SystemExit2(f"{path}:{n}: not a JSON object")
                for key in ("seed", "step", "stats", "segments"):
                    if key not in row:
                        raise SystemExit2(f"{path}:{n}: no '{key}' field (expected seed, step, stats, segments)")
                if not isinstance(row["stats"], dict) or not isinstance(row["segments"], list):
                    raise SystemExit2(f"{path}:{n}: 'stats' must be an object and 'segments' a list")
                rows.append(row)
    except OSError as e:
        raise SystemExit2(f"{path}: cannot read ({e.strerror})")
    return rows


class SystemExit2(Exception):
    pass


SHOWN = 10  # differences printed with their seed, step and key


def layout_difference(sa, sb):
    """The first place two segment layouts differ, in words (segments in address order, blocks in segment order)."""
    for i, (x, y) in enumerate(zip(sa, sb)):
        if x == y:
            continue
        if not (isinstance(x, dict) and isinstance(y, dict)):
            return f"segment {i}: {json.dumps(x)[:200]} vs {json.dumps(y)[:200]}"
        head = f"segment {i} ({x.get('segment_type')} {x.get('total_size')} vs " \
               f"{y.get('segment_type')} {y.get('total_size')})"
        bx, by = x.get("blocks") or [], y.get("blocks") or []
        for j, (p, q) in enumerate(zip(bx, by)):
            if p != q:
                return f"{head} block {j} [offset, size, state]: {json.dumps(p)} vs {json.dumps(q)}"
        return f"{head}: {len(bx)} vs {len(by)} blocks"
    return f"{len(sa)} vs {len(sb)} segments (the first {min(len(sa), len(sb))} agree)"


def compare(a_path, b_path):
    """Returns (checkpoints, stat differences, layout differences, keys only in a, keys only in b, the first
    SHOWN differences as 'seed S step T: ...' lines)."""
    a, b = read_jsonl(a_path), read_jsonl(b_path)
    ka, kb = [(r["seed"], r["step"]) for r in a], [(r["seed"], r["step"]) for r in b]
    if ka != kb:
        i = next((i for i, (x, y) in enumerate(zip(ka, kb)) if x != y), min(len(ka), len(kb)))
        at = lambda k: f"seed {k[i][0]} step {k[i][1]}" if i < len(k) else "its end"
        raise SystemExit2(f"{a_path} ({len(a)} checkpoints) and {b_path} ({len(b)}) do not have the same "
                          f"checkpoints: checkpoint {i + 1} is {at(ka)} in the first, {at(kb)} in the second")
    stat_diffs = layout_diffs = 0
    shown = []
    only_a, only_b = set(), set()
    for ra, rb in zip(a, b):
        where = f"seed {ra['seed']} step {ra['step']}"
        sa, sb = ra["stats"], rb["stats"]
        only_a |= sa.keys() - sb.keys()
        only_b |= sb.keys() - sa.keys()
        for k in sorted(sa.keys() & sb.keys()):
            if sa[k] != sb[k]:
                stat_diffs += 1
                if len(shown) < SHOWN:
                    shown.append(f"{where}: {k} {sa[k]} vs {sb[k]}")
        if ra["segments"] != rb["segments"]:
            layout_diffs += 1
            if len(shown) < SHOWN:
                shown.append(f"{where}: layout: {layout_difference(ra['segments'], rb['segments'])}")
    return len(a), stat_diffs, layout_diffs, sorted(only_a), sorted(only_b), shown


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("ops")
    o.add_argument("--seed", type=int, required=True)
    o.add_argument("--ops", type=int, required=True)
    t = sub.add_parser("pytorch")
    t.add_argument("--conf", default="")
    t.add_argument("--seeds", type=int, default=20)
    t.add_argument("--ops", type=int, default=2000)
    t.add_argument("--every", type=int, default=100)
    t.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("pytorch")
    c.add_argument("vram4j")
    args = p.parse_args(argv)
    try:
        if args.cmd == "ops":
            for op in generate(args.seed, args.ops):
                print(" ".join(str(x) for x in op))
        elif args.cmd == "pytorch":
            print(run_pytorch(args.conf, args.seeds, args.ops, args.every, args.out))
        else:
            n, stats, layouts, only_a, only_b, shown = compare(args.pytorch, args.vram4j)
            print(f"checkpoints {n}  stat differences {stats}  layout differences {layouts}  "
                  f"keys only in pytorch {len(only_a)}  keys only in vram4j {len(only_b)}")
            # keys on one side only (most likely PyTorch's own version change) are not value differences
            if only_a:
                print(f"keys only in {args.pytorch}: {', '.join(only_a)}")
            if only_b:
                print(f"keys only in {args.vram4j}: {', '.join(only_b)}")
            if shown:
                print(f"first {len(shown)} of {stats + layouts} differences (pytorch vs vram4j):")
                for line in shown:
                    print(f"  {line}")
            return 0 if stats == 0 and layouts == 0 and not only_a and not only_b else 1
    except SystemExit2 as e:
        print(f"differential.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
