package io.vram4j.memory.viz;

import io.vram4j.alloc.SizeRules;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.BlockState;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.PoolId;
import io.vram4j.memory.snapshot.SegmentInfo;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The segments and blocks of one device, moved along its trace by address: an {@code alloc} takes the free
 * block that starts at the recorded address and splits it as the allocator does (spec 3.3: small pool when the
 * remainder is at least 512 B, large pool when the request is below {@code max_split_size} and the remainder
 * exceeds 1 MiB; any remainder of 512 B or more with expandable segments), a {@code free_completed} marks the
 * block inactive and merges it with inactive neighbours, {@code segment_*} entries add, grow, shrink or drop
 * segments. No placement decision is made: the recording says where everything went, so this is exact whenever
 * the recording is consistent. Not thread-safe.
 */
final class StateTracker {
    static final byte FREE = 0;
    static final byte ALLOCATED = 1;
    static final byte PENDING = 2;

    static final class Blk {
        final long addr;
        long size;
        long requested;
        byte state;
        /** Index into the stack table, -1 if none. */
        int stack;

        Blk(long addr, long size) {
            this.addr = addr;
            this.size = size;
            this.stack = -1;
        }
    }

    static final class Seg {
        final long addr;
        long size;
        final long stream;
        final boolean small;
        final boolean expandable;
        final TreeMap<Long, Blk> blocks = new TreeMap<>(Long::compareUnsigned);

        Seg(long addr, long size, long stream, boolean small, boolean expandable) {
            this.addr = addr;
            this.size = size;
            this.stream = stream;
            this.small = small;
            this.expandable = expandable;
        }

        long end() {
            return addr + size;
        }
    }

    private final AllocatorConfig config;
    final TreeMap<Long, Seg> segments = new TreeMap<>(Long::compareUnsigned);
    long reserved;
    long allocated;
    long requested;
    /** Entries that did not fit the state (a free of an unknown block, an alloc outside every segment). */
    int inconsistencies;
    String firstInconsistency;

    StateTracker(AllocatorConfig config) {
        this.config = config;
    }

    // ---- building ----

    Seg addSegment(long addr, long size, long stream, boolean small, boolean expandable) {
        Seg s = new Seg(addr, size, stream, small, expandable);
        s.blocks.put(addr, new Blk(addr, size));
        segments.put(addr, s);
        reserved += size;
        return s;
    }

    /** Places an allocated (or pending-free) block of a known size into the free space of its segment. */
    boolean place(long addr, long size, long req, byte state, int stack) {
        Blk free = freeBlockContaining(addr);
        if (free == null || Long.compareUnsigned(addr + size, free.addr + free.size) > 0) {
            return false;
        }
        Seg seg = segmentOf(addr);
        if (free.addr != addr) {
            Blk front = free;
            free = new Blk(addr, front.addr + front.size - addr);
            front.size = addr - front.addr;
            seg.blocks.put(addr, free);
        }
        if (free.size > size) {
            Blk rest = new Blk(addr + size, free.size - size);
            seg.blocks.put(rest.addr, rest);
            free.size = size;
        }
        free.requested = req;
        free.state = state;
        free.stack = stack;
        if (state == ALLOCATED) {
            allocated += size;
        }
        requested += req;
        return true;
    }

    // ---- trace actions ----

    /** {@code alloc}: returns the block or null when the address is in no free block. */
    Blk alloc(long addr, long req, int stack, int entry) {
        Blk b = freeBlockContaining(addr);
        if (b == null || b.addr != addr) {
            inconsistent(entry, "alloc at 0x" + Long.toHexString(addr) + " is not the start of a free block");
            return null;
        }
        Seg seg = segmentOf(addr);
        long rounded = SizeRules.roundSize(req, config);
        if (rounded < b.size && shouldSplit(seg, rounded, b.size - rounded)) {
            Blk rest = new Blk(addr + rounded, b.size - rounded);
            seg.blocks.put(rest.addr, rest);
            b.size = rounded;
        }
        b.state = ALLOCATED;
        b.requested = req;
        b.stack = stack;
        allocated += b.size;
        requested += req;
        return b;
    }

    private boolean shouldSplit(Seg seg, long size, long remaining) {
        if (seg.small || seg.expandable) {
            return remaining >= SizeRules.MIN_BLOCK_SIZE;
        }
        return size < config.maxSplitSize() && remaining > SizeRules.SMALL_SIZE;
    }

    /** {@code free_requested}: the block stays active until its {@code free_completed}. */
    void freeRequested(long addr) {
        Blk b = activeBlockAt(addr);
        if (b != null && b.state == ALLOCATED) {
            b.state = PENDING;
            allocated -= b.size;
        }
    }

    /** {@code free_completed}: returns the freed block's size, or -1 when no active block starts there. */
    long freeCompleted(long addr, int entry) {
        Blk b = activeBlockAt(addr);
        if (b == null) {
            inconsistent(entry, "free_completed of unknown address 0x" + Long.toHexString(addr));
            return -1;
        }
        long size = b.size;
        if (b.state == ALLOCATED) {
            allocated -= size;
        }
        requested -= b.requested;
        b.state = FREE;
        b.requested = 0;
        Seg seg = segmentOf(addr);
        Map.Entry<Long, Blk> prev = seg.blocks.lowerEntry(addr);
        if (prev != null && prev.getValue().state == FREE) {
            prev.getValue().size += b.size;
            seg.blocks.remove(addr);
            b = prev.getValue();
        }
        Map.Entry<Long, Blk> next = seg.blocks.higherEntry(b.addr);
        if (next != null && next.getValue().state == FREE) {
            b.size += next.getValue().size;
            seg.blocks.remove(next.getKey());
        }
        return size;
    }

    /** {@code segment_alloc}. */
    void segmentAlloc(long addr, long size, long stream, boolean small) {
        addSegment(addr, size, stream, small, false);
    }

    /** {@code segment_free}. */
    void segmentFree(long addr, int entry) {
        Seg s = segments.remove(addr);
        if (s == null) {
            inconsistent(entry, "segment_free of unknown segment 0x" + Long.toHexString(addr));
            return;
        }
        reserved -= s.size;
    }

    /**
     * {@code segment_map}: grows the mapped range that ends at {@code addr}, or starts a new one, and joins the
     * range that starts where the new pages end: contiguous mapped pages form one segment, and blocks may span them.
     */
    void segmentMap(long addr, long size, long stream, boolean small) {
        Map.Entry<Long, Seg> before = segments.lowerEntry(addr);
        Seg s;
        if (before != null && before.getValue().end() == addr) {
            s = before.getValue();
            s.size += size;
            appendFree(s, addr, size);
            reserved += size;
        } else {
            s = addSegment(addr, size, stream, small, true);
        }
        Seg after = segments.get(s.end());
        if (after != null) {
            segments.remove(after.addr);
            s.size += after.size;
            for (Blk b : after.blocks.values()) {
                Blk last = s.blocks.lastEntry().getValue();
                if (b.state == FREE && last.state == FREE && last.addr + last.size == b.addr) {
                    last.size += b.size;
                } else {
                    s.blocks.put(b.addr, b);
                }
            }
        }
    }

    private static void appendFree(Seg s, long addr, long size) {
        Blk last = s.blocks.lastEntry().getValue();
        if (last.state == FREE) {
            last.size += size;
        } else {
            s.blocks.put(addr, new Blk(addr, size));
        }
    }

    /** {@code segment_unmap}: removes {@code [addr, addr + size)} from the free space of its mapped range. */
    void segmentUnmap(long addr, long size, int entry) {
        Seg s = segmentOf(addr);
        Blk b = freeBlockContaining(addr);
        if (s == null || b == null || Long.compareUnsigned(addr + size, b.addr + b.size) > 0) {
            inconsistent(entry, "segment_unmap of 0x" + Long.toHexString(addr) + " is not free mapped memory");
            return;
        }
        segments.remove(s.addr);
        reserved -= s.size;
        // the range splits the segment into the part before and the part after
        if (addr != s.addr) {
            Seg head = addSegment(s.addr, addr - s.addr, s.stream, s.small, true);
            head.blocks.clear();
            head.blocks.putAll(s.blocks.headMap(addr, false));
            if (b.addr != addr) {
                head.blocks.put(b.addr, new Blk(b.addr, addr - b.addr));
            }
        }
        long end = addr + size;
        if (end != s.end()) {
            Seg tail = addSegment(end, s.end() - end, s.stream, s.small, true);
            tail.blocks.clear();
            if (b.addr + b.size != end) {
                tail.blocks.put(end, new Blk(end, b.addr + b.size - end));
            }
            tail.blocks.putAll(s.blocks.tailMap(end, false));
        }
    }

    private void inconsistent(int entry, String what) {
        if (inconsistencies++ == 0) {
            firstInconsistency = "entry " + entry + ": " + what;
        }
    }

    // ---- queries ----

    Seg segmentOf(long addr) {
        Map.Entry<Long, Seg> e = segments.floorEntry(addr);
        return e != null && Long.compareUnsigned(addr, e.getValue().end()) < 0 ? e.getValue() : null;
    }

    private Blk freeBlockContaining(long addr) {
        Seg s = segmentOf(addr);
        if (s == null) {
            return null;
        }
        Blk b = s.blocks.floorEntry(addr).getValue();
        return b.state == FREE && Long.compareUnsigned(addr, b.addr + b.size) < 0 ? b : null;
    }

    private Blk activeBlockAt(long addr) {
        Seg s = segmentOf(addr);
        if (s == null) {
            return null;
        }
        Blk b = s.blocks.get(addr);
        return b != null && b.state != FREE ? b : null;
    }

    /** Bytes in the largest inactive block. */
    long largestFreeBlock() {
        long largest = 0;
        for (Seg s : segments.values()) {
            for (Blk b : s.blocks.values()) {
                if (b.state == FREE) {
                    largest = Math.max(largest, b.size);
                }
            }
        }
        return largest;
    }

    /**
     * @param device the device index to put in the segments
     * @param stacks the stack table the blocks refer to
     * @return the state as PyTorch's segment dicts, in address order
     */
    List<SegmentInfo> toSegments(int device, List<List<Frame>> stacks) {
        List<SegmentInfo> out = new ArrayList<>(segments.size());
        for (Seg s : segments.values()) {
            List<BlockInfo> blocks = new ArrayList<>(s.blocks.size());
            for (Blk b : s.blocks.values()) {
                BlockState st = b.state == ALLOCATED ? BlockState.ACTIVE_ALLOCATED
                        : b.state == PENDING ? BlockState.ACTIVE_PENDING_FREE : BlockState.INACTIVE;
                blocks.add(new BlockInfo(b.addr, b.size, b.requested, st, b.stack >= 0 ? stacks.get(b.stack) : List.of()));
            }
            out.add(SegmentInfo.of(device, s.addr, s.stream, s.small ? SegmentInfo.SMALL : SegmentInfo.LARGE,
                    PoolId.DEFAULT, s.expandable, List.of(), blocks));
        }
        return out;
    }
}
