#!/usr/bin/env python3
"""Reference replay in Python, the yardstick for `./vram4j replay FILE` start-to-end time (BENCHMARKS.md).

Loads a PyTorch memory snapshot (pickle) and replays the first device trace's alloc/free events through a
minimal model of the caching allocator's single-stream rules (512 B rounding, small pool up to 1 MiB in 2 MiB
segments, large pool in 20 MiB segments or the request rounded up to 2 MiB, best fit by (size, address),
splitting when the remainder is at least 512 B (small) or over 1 MiB (large), merging free neighbours on free). New segments are placed
at the recorded segment_alloc addresses. Prints peaks and how many allocs landed elsewhere than recorded.
It does less than vram4j's replay (one stream, no OOM path, no settings, no rebuilt initial state), so it is a
lower bound for what such a script costs.

usage: python3 replay_reference.py SNAPSHOT.pickle
"""
import bisect
import pickle
import sys

MiB = 1 << 20


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def segment_size(n):
    if n <= MiB:
        return 2 * MiB
    if n < 10 * MiB:
        return 20 * MiB
    return (n + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)


class Block:
    __slots__ = ("addr", "size", "free", "prev", "next", "small")

    def __init__(self, addr, size, small):
        self.addr, self.size, self.free, self.small = addr, size, True, small
        self.prev = self.next = None


def replay(trace):
    pools = {True: [], False: []}          # small? -> sorted [(size, addr, block)] of free blocks
    live = {}                               # address -> allocated block
    seg_addrs = [e["addr"] for e in trace if e["action"] == "segment_alloc"]
    seg_i = allocated = reserved = peak_alloc = peak_reserved = elsewhere = 0

    def insert(b):
        bisect.insort(pools[b.small], (b.size, b.addr, b))

    def remove(b):
        pool = pools[b.small]
        del pool[bisect.bisect_left(pool, (b.size, b.addr))]

    for e in trace:
        action = e["action"]
        if action == "alloc":
            size = round_size(e["size"])
            small = size <= MiB
            pool = pools[small]
            i = bisect.bisect_left(pool, (size, -1))
            if i < len(pool):
                b = pool.pop(i)[2]
            else:
                seg = segment_size(size)
                addr = seg_addrs[seg_i] if seg_i < len(seg_addrs) else (1 << 40) + reserved
                seg_i += 1
                b = Block(addr, seg, small)
                reserved += seg
                peak_reserved = max(peak_reserved, reserved)
            rest = b.size - size
            if (rest >= 512) if small else (rest > MiB):
                r = Block(b.addr + size, rest, small)
                r.prev, r.next = b, b.next
                if b.next:
                    b.next.prev = r
                b.next, b.size = r, size
                insert(r)
            b.free = False
            live[e["addr"]] = b   # freed by its recorded address
            allocated += b.size
            peak_alloc = max(peak_alloc, allocated)
            if b.addr != e["addr"]:
                elsewhere += 1
        elif action == "free_completed":
            b = live.pop(e["addr"])
            allocated -= b.size
            b.free = True
            for n in (b.prev, b.next):
                if n is not None and n.free:
                    remove(n)
                    if n is b.prev:
                        b.addr, b.prev = n.addr, n.prev
                        if n.prev:
                            n.prev.next = b
                    else:
                        b.next = n.next
                        if n.next:
                            n.next.prev = b
                    b.size += n.size
            insert(b)
    return seg_i, peak_alloc, peak_reserved, elsewhere, sum(1 for e in trace if e["action"] == "alloc")


def main():
    with open(sys.argv[1], "rb") as f:
        snapshot = pickle.load(f)
    trace = snapshot["device_traces"][0]
    segments, peak_alloc, peak_reserved, elsewhere, allocs = replay(trace)
    print(f"events {len(trace)}, new segments {segments}, peak allocated {peak_alloc} B, "
          f"peak reserved {peak_reserved} B, allocs elsewhere {elsewhere} of {allocs}")


if __name__ == "__main__":
    main()
