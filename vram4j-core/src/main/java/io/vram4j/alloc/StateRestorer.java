package io.vram4j.alloc;

import io.vram4j.device.Stream;

import java.util.ArrayList;
import java.util.List;

/**
 * Rebuilds a recorded allocator state inside a {@link DeviceCachingAllocator}: segments (and expandable segments)
 * with live blocks at given places, as a replay of a trace that starts mid-run needs (the state before the trace
 * is the state at dump minus the trace's net effect). Kept apart from the engine, which reads as PyTorch's
 * allocator; statistics change as if the segments had been obtained and the blocks allocated.
 *
 * <p>Thread-safe: each restore runs under the engine's lock and is refused once the engine is closed.
 */
final class StateRestorer {
    private final DeviceCachingAllocator engine;

    StateRestorer(DeviceCachingAllocator engine) {
        this.engine = engine;
    }

    /**
     * Recreates a segment at a given address with live blocks at given places; the gaps become free blocks.
     * Statistics change as if the segment had been obtained and the blocks allocated.
     *
     * @param live {address, size, requestedSize} triples, sorted by address, inside the segment
     * @throws IllegalArgumentException when the layout is inconsistent or the device cannot place the
     *     segment at {@code address}; nothing changes then
     * @throws IllegalStateException when the engine is closed
     */
    void restoreSegment(long address, long size, Stream stream, boolean small, List<long[]> live) {
        engine.lockedDo(() -> {
            engine.checkOpen();
            segment(address, size, stream, small, live);
        });
    }

    /**
     * Recreates an expandable segment with mapped page ranges and live blocks at given places (the layout:
     * {@link #expandableSegment}).
     *
     * @throws IllegalArgumentException when the layout is inconsistent or the device cannot reserve the range at
     *     {@code base} or map the pages; nothing changes then
     * @throws IllegalStateException when the engine is closed
     */
    void restoreExpandableSegment(long base, Stream stream, boolean small, List<long[]> mapped, List<long[]> live) {
        engine.lockedDo(() -> {
            engine.checkOpen();
            expandableSegment(base, stream, small, mapped, live);
        });
    }

    /** {@link #restoreSegment}'s work, under the engine's lock. */
    private void segment(long address, long size, Stream stream, boolean small, List<long[]> live) {
        long cursor = address;
        for (long[] b : live) {
            if (b[0] < cursor || b[1] <= 0 || b[0] + b[1] > address + size) {
                throw new IllegalArgumentException("restoreSegment: block at 0x" + Long.toHexString(b[0]) + " of "
                        + b[1] + " bytes does not fit segment 0x" + Long.toHexString(address) + "+" + size
                        + " after the previous block");
            }
            cursor = b[0] + b[1];
        }
        long ptr = engine.device.malloc(size, address);
        if (ptr != address) {
            if (ptr != 0) {
                engine.device.free(ptr);
            }
            throw new IllegalArgumentException("restoreSegment: the device cannot place " + size
                    + " bytes at 0x" + Long.toHexString(address));
        }
        BlockPool pool = small ? engine.smallBlocks : engine.largeBlocks;
        int poolType = DeviceCachingAllocator.poolType(pool);
        engine.totalAllocatedMemory += size;
        engine.stats.segment.increase(poolType, 1);
        engine.stats.reservedBytes.increase(poolType, size);
        if (size >= engine.config.maxSplitSize()) {
            engine.stats.oversizeSegments.increase(1);
        }
        engine.stats.numDeviceAlloc++;
        List<Block> blocks = new ArrayList<>();
        layOut(blocks, stream, pool, address, address + size, live, 0);
        link(blocks);
        boolean split = blocks.size() > 1;
        for (Block b : blocks) {
            if (b.allocated) {
                restoreLiveBlock(b, poolType);
            } else {
                pool.insertIntoBlocks(b);
                if (split) {
                    engine.stats.inactiveSplit.increase(poolType, 1);
                    engine.stats.inactiveSplitBytes.increase(poolType, b.size);
                }
            }
        }
    }

    /**
     * Recreates an expandable segment (spec section 6): reserves its address range at {@code base} (the size every
     * expandable segment of this device reserves, {@link SizeRules#expandableReservationSize}), maps the given page
     * ranges and places live blocks in them; the rest of each mapped range becomes free mapped blocks, the rest of
     * the reservation unmapped blocks. Statistics change as if the pages had been mapped (reserved bytes, device
     * allocations; no segment count, no inactive split) and the blocks allocated. Runs under the engine's lock.
     *
     * @param mapped {start, length} of each mapped range in bytes, ascending and disjoint, whole pages of the pool
     *     ({@link SizeRules#SMALL_BUFFER} small, {@link SizeRules#LARGE_BUFFER} large) counted from {@code base}
     * @param live {address, size, requestedSize} triples, sorted by address, each inside one mapped range
     * @throws IllegalArgumentException when the layout is inconsistent or the device cannot reserve the range at
     *     {@code base} or map the pages; nothing changes then
     */
    private void expandableSegment(long base, Stream stream, boolean small, List<long[]> mapped, List<long[]> live) {
        long pageSize = small ? SizeRules.SMALL_BUFFER : SizeRules.LARGE_BUFFER;
        String what = "restoreExpandableSegment: expandable segment 0x" + Long.toHexString(base) + ": ";
        long cursor = base;
        for (long[] r : mapped) {
            if (r[0] < cursor || r[1] <= 0 || (r[0] - base) % pageSize != 0 || r[1] % pageSize != 0) {
                throw new IllegalArgumentException(what + "mapped range 0x" + Long.toHexString(r[0]) + "+" + r[1]
                        + " is not whole " + pageSize + "-byte pages from the base after the previous range");
            }
            cursor = r[0] + r[1];
        }
        int k = 0;
        long blockCursor = base;
        for (long[] b : live) {
            while (k < mapped.size() && mapped.get(k)[0] + mapped.get(k)[1] <= b[0]) {
                k++;
            }
            if (k == mapped.size() || b[0] < mapped.get(k)[0] || b[0] < blockCursor || b[1] <= 0
                    || b[0] + b[1] > mapped.get(k)[0] + mapped.get(k)[1]) {
                throw new IllegalArgumentException(what + "block at 0x" + Long.toHexString(b[0]) + " of " + b[1]
                        + " bytes does not fit one mapped range after the previous block");
            }
            blockCursor = b[0] + b[1];
        }
        ExpandableSegment es = ExpandableSegment.reserve(engine.device, stream, pageSize, base);
        if (es == null || es.base != base) {
            if (es != null) {
                es.release();
            }
            throw new IllegalArgumentException(what + "the device cannot reserve "
                    + SizeRules.expandableReservationSize(engine.device.totalMemory(), pageSize) + " bytes of addresses there");
        }
        if (cursor > base + es.size()) {
            es.release();
            throw new IllegalArgumentException(what + "its mapped ranges end " + (cursor - base)
                    + " bytes after the base, beyond its reservation of " + es.size() + " bytes");
        }
        for (long[] r : mapped) {
            if (es.map(r[0], r[1]) != r[1]) {
                es.unmapAll();
                es.release();
                throw new IllegalArgumentException(what + "the device has no room to map " + r[1] + " bytes at 0x"
                        + Long.toHexString(r[0]));
            }
        }
        engine.expandableSegments.add(es);
        BlockPool pool = small ? engine.smallBlocks : engine.largeBlocks;
        int poolType = DeviceCachingAllocator.poolType(pool);
        List<Block> blocks = new ArrayList<>();
        cursor = base;
        int next = 0;
        for (long[] r : mapped) {
            if (r[0] > cursor) {
                Block hole = new Block(stream, pool, r[0] - cursor, cursor);
                hole.mapped = false;
                blocks.add(hole);
            }
            cursor = r[0] + r[1];
            next = layOut(blocks, stream, pool, r[0], cursor, live, next);
            engine.totalAllocatedMemory += r[1];
            engine.stats.reservedBytes.increase(poolType, r[1]);
            engine.stats.numDeviceAlloc++;
        }
        if (cursor < base + es.size()) {
            Block tail = new Block(stream, pool, base + es.size() - cursor, cursor);
            tail.mapped = false;
            blocks.add(tail);
        }
        for (Block b : blocks) {
            b.expandableSegment = es;
        }
        link(blocks);
        for (Block b : blocks) {
            if (!b.mapped) {
                pool.unmapped.add(b);
            } else if (b.allocated) {
                restoreLiveBlock(b, poolType);
            } else {
                pool.insertIntoBlocks(b);
            }
        }
    }

    /**
     * Appends the blocks of a restored range {@code [start, end)}: the live blocks from index {@code from} on that
     * start before {@code end} (allocated, with their requested sizes) and free blocks in the gaps around them.
     *
     * @param live {address, size, requestedSize} triples, sorted by address, already checked to fit
     * @return the index of the first live block not placed
     */
    private static int layOut(List<Block> out, Stream stream, BlockPool pool, long start, long end, List<long[]> live,
                              int from) {
        long cursor = start;
        int i = from;
        for (; i < live.size() && live.get(i)[0] < end; i++) {
            long[] b = live.get(i);
            if (b[0] > cursor) {
                out.add(new Block(stream, pool, b[0] - cursor, cursor));
            }
            Block lb = new Block(stream, pool, b[1], b[0]);
            lb.allocated = true;
            lb.requestedSize = b[2];
            out.add(lb);
            cursor = b[0] + b[1];
        }
        if (cursor < end) {
            out.add(new Block(stream, pool, end - cursor, cursor));
        }
        return i;
    }

    /** Links address-ordered blocks of one segment as neighbours ({@code prev}/{@code next}). */
    private static void link(List<Block> blocks) {
        for (int i = 0; i < blocks.size(); i++) {
            blocks.get(i).prev = i > 0 ? blocks.get(i - 1) : null;
            blocks.get(i).next = i + 1 < blocks.size() ? blocks.get(i + 1) : null;
        }
    }

    /** A live block of a restored segment: registered by address and counted as malloc counts it. Must hold the lock. */
    private void restoreLiveBlock(Block b, int poolType) {
        engine.allocatedBlocks.put(b.ptr, b);
        engine.stats.allocation.increase(poolType, 1);
        engine.stats.allocatedBytes.increase(poolType, b.size);
        engine.stats.active.increase(poolType, 1);
        engine.stats.activeBytes.increase(poolType, b.size);
        engine.stats.requestedBytes.increase(poolType, b.requestedSize);
        if (b.size >= engine.config.maxSplitSize()) {
            engine.stats.oversizeAllocations.increase(1);
        }
    }
}
