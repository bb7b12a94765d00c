package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Event;
import io.vram4j.device.MemInfo;
import io.vram4j.device.Stream;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.memory.stats.MemoryStats;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/*
 * The caching allocator of one device: PyTorch's DeviceCachingAllocator (c10/cuda/CUDACachingAllocator.cpp),
 * rule for rule, over a DeviceBackend instead of the CUDA runtime. Section numbers refer to
 * shared/spec/pytorch-allocator-spec.md.
 *
 * Note [Policy]
 *   Requests are rounded (SizeRules.roundSize) and served from one of two pools: rounded sizes up to 1 MiB
 *   from the small pool (2 MiB segments), larger from the large pool (20 MiB segments for requests below
 *   10 MiB, else the request rounded to 2 MiB). A request takes the smallest free block of its own stream
 *   that is large enough (lowest address on ties) and splits it when the remainder is worth keeping.
 *   Freed blocks merge with free neighbours; whole segments go back to the device only through
 *   emptyCache(), the out-of-memory path, or garbage collection.
 *
 * Note [Out of memory]
 *   When no cached block fits: optional garbage collection (only with a memory fraction) -> new segment ->
 *   release cached oversize blocks and retry -> synchronize all streams, release every unsplit cached
 *   segment and retry (num_alloc_retries) -> DeviceOutOfMemoryException (num_ooms).
 *
 * Note [Streams]
 *   A block belongs to the stream it was allocated on and is only reused by that stream. recordStream adds
 *   other streams; freeing such a block records one event per extra stream and the block stays
 *   "active_pending_free" until those events complete (checked at the start of each malloc, or forced by
 *   emptyCache / the OOM path).
 *
 * Locking: every entry point takes the device lock (one lock per device; the pointer map lives under it
 * rather than in PyTorch's 67 shards). Private methods never lock. OOM observers run outside the lock.
 *
 * Note [Close]
 *   releaseAll() sets `closed` under the lock. malloc, free, recordStream, emptyCache, allocatedBlock and
 *   StateRestorer's restores check it under the lock, so once close has run no malloc gets a segment and no
 *   free puts a block back into a pool. The one place that drops the lock inside malloc
 *   (release_lock_on_cudamalloc) checks again after re-taking it and hands a segment obtained meanwhile
 *   straight back to the device.
 */
final class DeviceCachingAllocator {
    private static final int RETRY = 1;

    // package-private for StateRestorer (rebuilds recorded states under this engine's lock, for replays that
    // start mid-run; kept out of this class, which reads as PyTorch's allocator): device, pools,
    // block map, expandable segments, stats, config, totalAllocatedMemory
    final DeviceBackend device;
    private final ReentrantLock lock = new ReentrantLock();
    final BlockPool smallBlocks = new BlockPool(true);
    final BlockPool largeBlocks = new BlockPool(false);
    final BlockMap allocatedBlocks = new BlockMap();
    private final Map<Stream, ArrayDeque<PendingEvent>> streamEvents = new LinkedHashMap<>();
    final List<ExpandableSegment> expandableSegments = new ArrayList<>();
    private final List<OutOfMemoryObserver> oomObservers = new CopyOnWriteArrayList<>();
    final DeviceStats stats;

    /** Set under the lock by {@link #releaseAll()}; read under the lock by every entry point that changes state. */
    private boolean closed;
    AllocatorConfig config;
    /** Sum of segment sizes and mapped expandable bytes (PyTorch's total_allocated_memory). */
    long totalAllocatedMemory;
    private boolean setFraction;
    private long allowedMemoryMaximum;
    private SegmentPlacement placement = SegmentPlacement.NONE;
    /** The effective listener: the user's listener and the history recorder, composed. */
    private AllocatorListener listener = AllocatorListener.NONE;
    private AllocatorListener userListener = AllocatorListener.NONE;
    /** Memory history, or null when not recording; read without the lock by the facade to decide on stacks. */
    private volatile HistoryRecorder history;
    /** Stack at segment creation, by segment base address (non-expandable segments), when recording. */
    private final Map<Long, Object> segmentContexts = new HashMap<>();

    private record PendingEvent(Event event, Block block) {
    }

    DeviceCachingAllocator(DeviceBackend device, AllocatorConfig config) {
        this.device = device;
        this.config = config;
        this.stats = new DeviceStats(config.maxSplitSize() == AllocatorConfig.UNLIMITED ? -1 : config.maxSplitSize());
    }

    DeviceBackend device() {
        return device;
    }

    /** The exception every call gets once the allocator is closed. */
    IllegalStateException closedException() {
        return new IllegalStateException("the caching allocator of " + device.description() + " is closed");
    }

    /** Must hold the lock (package-private for StateRestorer). */
    void checkOpen() {
        if (closed) {
            throw closedException();
        }
    }

    // ------------------------------------------------------------------------------------------------
    // malloc (spec section 3)
    // ------------------------------------------------------------------------------------------------

    /** Parameters of one malloc that needs a new segment (the miss path), as PyTorch's AllocParams. */
    private static final class AllocParams {
        final Stream stream;
        final long streamKey;
        final BlockPool pool;
        final long size;
        final long allocSize;
        final int poolType;
        Block block;

        AllocParams(Stream stream, BlockPool pool, long size, long allocSize) {
            this.stream = stream;
            this.streamKey = stream.handle();
            this.pool = pool;
            this.size = size;
            this.allocSize = allocSize;
            this.poolType = pool.isSmall ? DeviceStats.SMALL : DeviceStats.LARGE;
        }
    }

    /**
     * @param origSize caller's bytes, in [1, 2^60)
     * @param stream the allocation stream
     * @param context allocation-site context for history, or null
     * @return the block handed out
     * @throws DeviceOutOfMemoryException after the OOM observers ran (outside the lock)
     * @throws IllegalStateException when the allocator is (or gets, while the lock is released around a device
     *     malloc) closed
     */
    Block malloc(long origSize, Stream stream, Object context) {
        OomReport oom;
        lock.lock();
        try {
            checkOpen();
            if (!streamEvents.isEmpty()) {
                processEvents();
            }
            long size = SizeRules.roundSize(origSize, config);
            BlockPool pool = SizeRules.isSmall(size) ? smallBlocks : largeBlocks;
            // The cache-hit path creates no parameter object: AllocParams exists only when a segment is needed.
            Block block = getFreeBlock(pool, stream.handle(), size);
            if (block != null) {
                return allocFoundBlock(block, stream, pool, size, origSize, context);
            }
            AllocParams params = new AllocParams(stream, pool, size, SizeRules.allocationSize(size));
            if (setFraction && config.garbageCollectionThreshold() > 0.0) {
                garbageCollectCachedBlocks();
            }
            boolean found = allocBlock(params, false, context)
                    || (releaseAvailableCachedBlocks(params) && allocBlock(params, false, context))
                    || (releaseCachedBlocks() && allocBlock(params, true, context));
            if (found) {
                return allocFoundBlock(params.block, stream, pool, size, origSize, context);
            }
            oom = outOfMemory(params, origSize);
        } finally {
            lock.unlock();
        }
        for (OutOfMemoryObserver o : oomObservers) {
            o.onOutOfMemory(device.index(), oom.allocSize, oom.allowed, oom.deviceFree);
        }
        throw oom.exception;
    }

    /** Best fit on the same stream (spec 3.1); the block found is taken out of the pool. */
    private Block getFreeBlock(BlockPool pool, long streamKey, long size) {
        if (setFraction && config.garbageCollectionThreshold() > 0.0) {
            pool.getFreeBlocksCallCount++;
        }
        Block candidate = pool.blocks.ceiling(streamKey, size, 0);
        if (candidate == null || candidate.streamKey != streamKey) {
            return null;
        }
        if (candidate.expandableSegment != null) {
            if (config.expandableSegments()) {
                // Best fit counts an expandable block as the size it can grow to: itself plus a directly
                // following unmapped block.
                Block next = pool.blocks.higher(candidate);
                while (candidate.expandableSegment != null && next != null && next.streamKey == streamKey
                        && expandableSize(next) < expandableSize(candidate)) {
                    candidate = next;
                    next = pool.blocks.higher(candidate);
                }
            } else {
                // Expandable segments were switched off at run time: only ordinary blocks may be used.
                do {
                    candidate = pool.blocks.higher(candidate);
                } while (candidate != null && candidate.expandableSegment != null && candidate.streamKey == streamKey);
                if (candidate == null || candidate.streamKey != streamKey) {
                    return null;
                }
            }
        }
        long maxSplitSize = config.maxSplitSize();
        // Oversize blocks are kept for oversize requests ...
        if (size < maxSplitSize && candidate.size >= maxSplitSize) {
            return null;
        }
        // ... and serve them only within max_non_split_rounding of their size.
        if (size >= maxSplitSize && candidate.size >= size + config.maxNonSplitRounding()) {
            return null;
        }
        pool.blocks.remove(candidate);
        return candidate;
    }

    private static long expandableSize(Block b) {
        return b.size + (b.next != null && !b.next.mapped ? b.next.size : 0);
    }

    /** Obtains a new segment (spec 3.2). */
    private boolean allocBlock(AllocParams p, boolean isRetry, Object context) {
        long size = p.allocSize;
        if (isRetry) {
            stats.numAllocRetries++;
        }
        if (setFraction && totalAllocatedMemory + size > allowedMemoryMaximum) {
            return false;
        }
        if (config.expandableSegments()) {
            p.block = tryAllocateExpandableBlock(p.stream, p.pool, p.size, context);
            return p.block != null;
        }
        long ptr;
        long hint = placement.segmentAddress(size, false);
        if (config.releaseLockOnCudaMalloc()) {
            lock.unlock();
            try {
                ptr = device.malloc(size, hint);
            } finally {
                lock.lock();
            }
            if (closed) {
                // close() ran while the lock was released: the new segment must not outlive it.
                if (ptr != 0) {
                    device.free(ptr);
                }
                throw closedException();
            }
        } else {
            ptr = device.malloc(size, hint);
        }
        if (ptr == 0) {
            return false;
        }
        totalAllocatedMemory += size;
        Block block = new Block(p.stream, p.pool, size, ptr);
        block.context = context;
        p.block = block;
        stats.segment.increase(p.poolType, 1);
        stats.reservedBytes.increase(p.poolType, size);
        if (size >= config.maxSplitSize()) {
            stats.oversizeSegments.increase(1);
        }
        stats.numDeviceAlloc++;
        if (context != null) {
            segmentContexts.put(ptr, context);
        }
        listener.segmentAlloc(ptr, size, p.stream, p.pool.isSmall, context);
        return true;
    }

    /** Spec 3.3. */
    private boolean shouldSplit(Block block, long size) {
        long remaining = block.size - size;
        if (block.pool.isSmall || config.expandableSegments()) {
            return remaining >= SizeRules.MIN_BLOCK_SIZE;
        }
        return size < config.maxSplitSize() && remaining > SizeRules.SMALL_SIZE;
    }

    /** Spec 3.4. */
    private Block allocFoundBlock(Block block, Stream stream, BlockPool pool, long size, long origSize, Object context) {
        int poolType = poolType(pool);
        boolean alreadySplit = block.isSplit();
        if (shouldSplit(block, size)) {
            Block remaining = block;
            block = new Block(stream, pool, size, remaining.ptr);
            block.expandableSegment = remaining.expandableSegment;
            block.prev = remaining.prev;
            if (block.prev != null) {
                block.prev.next = block;
            }
            block.next = remaining;
            remaining.prev = block;
            remaining.ptr += size;
            remaining.size -= size;
            pool.insertIntoBlocks(remaining);
            if (remaining.expandableSegment == null) {
                if (alreadySplit) {
                    // An already-split inactive block shrinks by size bytes.
                    stats.inactiveSplitBytes.decrease(poolType, block.size);
                } else {
                    // A previously unsplit block now leaves an inactive remainder.
                    stats.inactiveSplitBytes.increase(poolType, remaining.size);
                    stats.inactiveSplit.increase(poolType, 1);
                }
            }
        } else if (alreadySplit && block.expandableSegment == null) {
            // An already-split inactive block becomes active.
            stats.inactiveSplitBytes.decrease(poolType, block.size);
            stats.inactiveSplit.decrease(poolType, 1);
        }
        block.allocated = true;
        block.requestedSize = origSize;
        block.context = context;
        allocatedBlocks.put(block.ptr, block);

        stats.allocation.increase(poolType, 1);
        stats.allocatedBytes.increase(poolType, block.size);
        stats.active.increase(poolType, 1);
        stats.activeBytes.increase(poolType, block.size);
        stats.requestedBytes.increase(poolType, origSize);
        if (block.size >= config.maxSplitSize()) {
            stats.oversizeAllocations.increase(1);
        }
        listener.alloc(block.ptr, origSize, block.stream, context);
        return block;
    }

    // ------------------------------------------------------------------------------------------------
    // free (spec 3.5)
    // ------------------------------------------------------------------------------------------------

    /**
     * @return the freed block, or null when {@code ptr} is not an allocated block (nothing changed then)
     * @throws IllegalStateException when the allocator is closed
     */
    Block free(long ptr, Object context) {
        lock.lock();
        try {
            checkOpen();
            Block block = allocatedBlocks.remove(ptr);
            if (block == null) {
                return null;
            }
            int poolType = poolType(block.pool);
            block.allocated = false;
            stats.allocation.decrease(poolType, 1);
            stats.allocatedBytes.decrease(poolType, block.size);
            listener.freeRequested(block.ptr, block.requestedSize, block.stream, context, block.context);
            if (block.size >= config.maxSplitSize()) {
                stats.oversizeAllocations.decrease(1);
            }
            if (block.hasStreamUses()) {
                insertEvents(block);
            } else {
                freeBlock(block, context);
            }
            return block;
        } finally {
            lock.unlock();
        }
    }

    static int poolType(BlockPool pool) {
        return pool.isSmall ? DeviceStats.SMALL : DeviceStats.LARGE;
    }

    /** Returns a block to its pool, merging free neighbours (spec 3.5). */
    private void freeBlock(Block block, Object context) {
        listener.freeCompleted(block.ptr, block.requestedSize, block.stream, context, block.context);
        long originalBlockSize = block.size;
        long requestedSize = block.requestedSize;
        BlockPool pool = block.pool;
        long netInactiveSplitBlocks = 0;
        long netInactiveSplitSize = 0;
        Block prev = block.prev;
        Block next = block.next;
        long subsumed = tryMergeBlocks(block, prev, pool);
        if (subsumed > 0) {
            netInactiveSplitBlocks--;
            netInactiveSplitSize -= subsumed;
        }
        subsumed = tryMergeBlocks(block, next, pool);
        if (subsumed > 0) {
            netInactiveSplitBlocks--;
            netInactiveSplitSize -= subsumed;
        }
        pool.insertIntoBlocks(block);
        if (block.isSplit()) {
            netInactiveSplitBlocks++;
            netInactiveSplitSize += block.size;
        }
        int poolType = poolType(pool);
        if (block.expandableSegment == null) {
            // Fully free pages of expandable segments can always be released, so they never count here.
            if (netInactiveSplitBlocks > 0) {
                stats.inactiveSplit.increase(poolType, netInactiveSplitBlocks);
            } else if (netInactiveSplitBlocks < 0) {
                stats.inactiveSplit.decrease(poolType, -netInactiveSplitBlocks);
            }
            if (netInactiveSplitSize > 0) {
                stats.inactiveSplitBytes.increase(poolType, netInactiveSplitSize);
            } else if (netInactiveSplitSize < 0) {
                stats.inactiveSplitBytes.decrease(poolType, -netInactiveSplitSize);
            }
        }
        stats.active.decrease(poolType, 1);
        stats.activeBytes.decrease(poolType, originalBlockSize);
        stats.requestedBytes.decrease(poolType, requestedSize);
    }

    /** Merges {@code src} into {@code dst} when src is free, event-free and of the same mapped-ness. */
    private static long tryMergeBlocks(Block dst, Block src, BlockPool pool) {
        if (src == null || src.allocated || src.eventCount > 0 || src.hasStreamUses() || dst.mapped != src.mapped) {
            return 0;
        }
        // Remove before changing the keyed fields of either block.
        if (src.mapped) {
            pool.blocks.remove(src);
        } else {
            pool.unmapped.remove(src);
        }
        if (dst.prev == src) {
            dst.ptr = src.ptr;
            dst.prev = src.prev;
            if (dst.prev != null) {
                dst.prev.next = dst;
            }
        } else {
            dst.next = src.next;
            if (dst.next != null) {
                dst.next.prev = dst;
            }
        }
        dst.size += src.size;
        return src.size;
    }

    /**
     * Merges like {@link #tryMergeBlocks} for a dst that is currently in one of the pool's sets (its key
     * changes, so it is taken out and put back).
     */
    private static long tryMergeKeyed(Block dst, Block src, BlockPool pool, boolean dstInBlocks) {
        if (src == null || src.allocated || src.eventCount > 0 || src.hasStreamUses() || dst.mapped != src.mapped) {
            return 0;
        }
        if (dstInBlocks) {
            pool.blocks.remove(dst);
        } else {
            pool.unmapped.remove(dst);
        }
        long s = tryMergeBlocks(dst, src, pool);
        if (dstInBlocks) {
            pool.blocks.add(dst);
        } else {
            pool.unmapped.add(dst);
        }
        return s;
    }

    // ------------------------------------------------------------------------------------------------
    // Streams and events (spec 5.1, 5.2)
    // ------------------------------------------------------------------------------------------------

    /**
     * Marks the block at {@code ptr} as used by {@code stream} (as {@code record_stream}).
     *
     * @param ptr the base address of a live block
     * @throws IllegalArgumentException when no allocated block starts at {@code ptr} (PyTorch's
     *     "No allocated block can be found"); nothing changes then
     * @throws IllegalStateException when the allocator is closed
     */
    void recordStream(long ptr, Stream stream) {
        lock.lock();
        try {
            checkOpen();
            Block block = allocatedBlocks.get(ptr);
            if (block == null) {
                throw new IllegalArgumentException("recordStream: No allocated block can be found at 0x"
                        + Long.toHexString(ptr) + " (pass the base address returned by malloc, not an address"
                        + " inside a block, of a block that is still allocated)");
            }
            if (!stream.equals(block.stream)) {
                block.addStreamUse(stream);
            }
        } finally {
            lock.unlock();
        }
    }

    private void insertEvents(Block block) {
        List<Stream> streams = block.streamUses;
        block.streamUses = null;
        for (Stream s : streams) {
            Event e = s.recordEvent();
            block.eventCount++;
            streamEvents.computeIfAbsent(s, k -> new ArrayDeque<>()).addLast(new PendingEvent(e, block));
        }
    }

    /** Frees blocks whose events completed, oldest first per stream, without waiting. */
    private void processEvents() {
        if (streamEvents.isEmpty()) {
            return;
        }
        Iterator<Map.Entry<Stream, ArrayDeque<PendingEvent>>> it = streamEvents.entrySet().iterator();
        while (it.hasNext()) {
            ArrayDeque<PendingEvent> queue = it.next().getValue();
            while (!queue.isEmpty()) {
                PendingEvent pe = queue.peekFirst();
                if (!pe.event().query()) {
                    break;
                }
                queue.pollFirst();
                if (--pe.block().eventCount == 0) {
                    freeBlock(pe.block(), null);
                }
            }
            if (queue.isEmpty()) {
                it.remove();
            }
        }
    }

    /** Waits for every outstanding event and frees the blocks (num_sync_all_streams). */
    private void synchronizeAndFreeEvents() {
        stats.numSyncAllStreams++;
        for (ArrayDeque<PendingEvent> queue : streamEvents.values()) {
            for (PendingEvent pe : queue) {
                pe.event().synchronize();
                if (--pe.block().eventCount == 0) {
                    freeBlock(pe.block(), null);
                }
            }
        }
        streamEvents.clear();
    }

    // ------------------------------------------------------------------------------------------------
    // Releasing memory (spec section 4)
    // ------------------------------------------------------------------------------------------------

    /** {@code empty_cache}. @param context stack of the caller for history, or null */
    void emptyCache(Object context) {
        lock.lock();
        try {
            checkOpen();
            HistoryRecorder h = history;
            if (h != null) {
                h.currentFreeContext = context;
            }
            releaseCachedBlocks();
            if (h != null) {
                h.currentFreeContext = null;
            }
        } finally {
            lock.unlock();
        }
    }

    /** Spec 4.1. Always returns true, as PyTorch's. */
    private boolean releaseCachedBlocks() {
        synchronizeAndFreeEvents();
        releaseBlocks(largeBlocks);
        releaseBlocks(smallBlocks);
        return true;
    }

    private void releaseBlocks(BlockPool pool) {
        List<Block> toUnmap = new ArrayList<>();
        List<Block> toRelease = new ArrayList<>();
        for (Block block : pool.blocks) {
            if (block.expandableSegment != null) {
                toUnmap.add(block);
            } else if (!block.isSplit()) {
                toRelease.add(block);
            }
        }
        for (Block block : toRelease) {
            releaseBlock(block);
        }
        for (Block block : toUnmap) {
            unmapBlock(block);
            if (!block.isSplit() && !block.mapped) {
                releaseExpandableSegment(block);
            }
        }
    }

    /** Returns a whole free segment to the device (cudaFree). */
    private void releaseBlock(Block block) {
        listener.segmentFree(block.ptr, block.size, block.stream, block.pool.isSmall);
        segmentContexts.remove(block.ptr);
        device.free(block.ptr);
        totalAllocatedMemory -= block.size;
        int poolType = poolType(block.pool);
        stats.segment.decrease(poolType, 1);
        stats.reservedBytes.decrease(poolType, block.size);
        if (block.size >= config.maxSplitSize()) {
            stats.oversizeSegments.decrease(1);
        }
        stats.numDeviceFree++;
        block.pool.blocks.remove(block);
    }

    /** Spec 4.2: with max_split_size set, free cached oversize blocks to make room for this request. */
    private boolean releaseAvailableCachedBlocks(AllocParams p) {
        long maxSplitSize = config.maxSplitSize();
        if (maxSplitSize == AllocatorConfig.UNLIMITED) {
            return false;
        }
        BlockPool pool = p.pool;
        long keySize = Math.max(p.size, maxSplitSize);
        Block found = pool.blocks.ceiling(p.streamKey, keySize, 0);
        // Oversize blocks are never split, so PyTorch passes only whole segments here. A split oversize block exists
        // only when max_split_size_mb was lowered at run time (setSettings, or a what-if replay from a recorded
        // state); PyTorch would then hand cudaFree an interior pointer and fail. vram4j leaves such blocks cached.
        if (found == null || found.streamKey != p.streamKey || found.expandableSegment != null || found.isSplit()) {
            // No single block is large enough: release oversize blocks from the largest down.
            Block cur = pool.blocks.lower(p.streamKey, keySize, 0);
            if (cur == null) {
                return false;
            }
            long totalReleased = 0;
            while (cur != null && totalReleased < keySize && cur.size >= maxSplitSize && cur.streamKey == p.streamKey) {
                Block lower = pool.blocks.lower(cur);
                if (cur.expandableSegment == null && !cur.isSplit()) {
                    totalReleased += cur.size;
                    releaseBlock(cur);
                }
                cur = lower;
            }
            return totalReleased >= keySize;
        }
        releaseBlock(found);
        return true;
    }

    /** Spec 4.3: free aged unsplit cached large segments down to the threshold (no synchronization). */
    private void garbageCollectCachedBlocks() {
        long gcThreshold = (long) (config.garbageCollectionThreshold() * (double) allowedMemoryMaximum);
        if (totalAllocatedMemory <= gcThreshold) {
            return;
        }
        long targetSize = totalAllocatedMemory - gcThreshold;
        long gcReclaimed = 0;
        long totalAge = 0;
        int freeableBlockCount = 0;
        for (Block b : largeBlocks.blocks) {
            if (!b.isSplit()) {
                totalAge += largeBlocks.gcAge(b);
                freeableBlockCount++;
            }
        }
        if (freeableBlockCount == 0) {
            return;
        }
        boolean blockFreed = true;
        while (gcReclaimed < targetSize && blockFreed && freeableBlockCount > 0) {
            double ageThreshold = (double) totalAge / freeableBlockCount;
            blockFreed = false;
            List<Block> victims = new ArrayList<>();
            for (Block block : largeBlocks.blocks) {
                if (!block.isSplit() && block.expandableSegment == null && (double) largeBlocks.gcAge(block) >= ageThreshold) {
                    victims.add(block);
                }
            }
            for (Block block : victims) {
                blockFreed = true;
                gcReclaimed += block.size;
                totalAge -= largeBlocks.gcAge(block);
                freeableBlockCount--;
                releaseBlock(block);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------
    // Expandable segments (spec section 6)
    // ------------------------------------------------------------------------------------------------

    private static boolean allocatable(Block b) {
        return b != null && !b.allocated && b.eventCount == 0 && !b.hasStreamUses();
    }

    private Block findExpandableBlock(Stream stream, BlockPool pool, long size) {
        Block key = new Block(stream, pool, 0, 0);
        for (Block c : pool.unmapped.tailSet(key, true)) {
            if (c.streamKey != stream.handle()) {
                break;
            }
            // A free mapped block right before the unmapped range can be used too.
            Block start = allocatable(c.prev) ? c.prev : c;
            long bytes = 0;
            for (Block b = start; bytes < size && allocatable(b); b = b.next) {
                bytes += b.size;
            }
            if (bytes >= size) {
                return start;
            }
        }
        long pageSize = pool.isSmall ? SizeRules.SMALL_BUFFER : SizeRules.LARGE_BUFFER;
        ExpandableSegment es = ExpandableSegment.reserve(device, stream, pageSize, placement.segmentAddress(0, true));
        if (es == null) {
            return null;
        }
        expandableSegments.add(es);
        Block candidate = new Block(stream, pool, es.size(), es.base);
        candidate.mapped = false;
        candidate.expandableSegment = es;
        pool.unmapped.add(candidate);
        return candidate;
    }

    private Block tryAllocateExpandableBlock(Stream stream, BlockPool pool, long size, Object context) {
        Block candidate = findExpandableBlock(stream, pool, size);
        if (candidate == null) {
            return null;
        }
        // candidate is: unmapped -> null | unmapped -> free -> ... | free -> unmapped -> ...
        if (!candidate.mapped) {
            candidate = mapBlock(candidate, Math.min(candidate.size, size), context);
            if (candidate == null) {
                return null;
            }
        }
        while (candidate.size < size) {
            long remaining = size - candidate.size;
            Block next = candidate.next;
            Block mapped = mapBlock(next, Math.min(remaining, next.size), context);
            if (mapped == null) {
                return null;
            }
            candidate = mapped;
        }
        pool.blocks.remove(candidate);
        return candidate;
    }

    /**
     * Maps the pages under the first {@code size} bytes of an unmapped block and merges the result with free
     * mapped neighbours.
     *
     * @return the mapped (and merged) block, now in the free set; null when the device had no room
     */
    private Block mapBlock(Block toMap, long size, Object context) {
        long mapStart = toMap.ptr;
        long mappedSize = toMap.expandableSegment.map(toMap.ptr, size);
        if (mappedSize == 0) {
            return null;
        }
        BlockPool pool = toMap.pool;
        pool.unmapped.remove(toMap);
        toMap.mapped = true;
        if (mappedSize < toMap.size) {
            Block remaining = new Block(toMap.stream, pool, toMap.size - mappedSize, toMap.ptr + mappedSize);
            remaining.mapped = false;
            remaining.expandableSegment = toMap.expandableSegment;
            remaining.splice(toMap, toMap.next);
            pool.unmapped.add(remaining);
            toMap.size = mappedSize;
        }
        tryMergeBlocks(toMap, toMap.prev, pool);
        tryMergeBlocks(toMap, toMap.next, pool);
        pool.insertIntoBlocks(toMap);
        totalAllocatedMemory += mappedSize;
        stats.reservedBytes.increase(poolType(pool), mappedSize);
        stats.numDeviceAlloc++;
        listener.segmentMap(mapStart, mappedSize, toMap.stream, pool.isSmall, context);
        return toMap;
    }

    /** Unmaps the whole pages inside a free expandable block (spec 6.4). */
    private void unmapBlock(Block block) {
        long[] r = block.expandableSegment.unmap(block.ptr, block.size);
        long start = r[0];
        long length = r[1];
        if (length == 0) {
            return;
        }
        BlockPool pool = block.pool;
        pool.blocks.remove(block);
        long beforeSize = start - block.ptr;
        if (beforeSize > 0) {
            Block before = new Block(block.stream, pool, beforeSize, block.ptr);
            before.expandableSegment = block.expandableSegment;
            before.splice(block.prev, block);
            pool.insertIntoBlocks(before);
        }
        long afterSize = block.size - (beforeSize + length);
        if (afterSize > 0) {
            Block after = new Block(block.stream, pool, afterSize, start + length);
            after.expandableSegment = block.expandableSegment;
            after.splice(block, block.next);
            pool.insertIntoBlocks(after);
        }
        block.ptr = start;
        block.size = length;
        block.mapped = false;
        tryMergeBlocks(block, block.prev, pool);
        tryMergeBlocks(block, block.next, pool);
        pool.unmapped.add(block);
        totalAllocatedMemory -= length;
        stats.reservedBytes.decrease(poolType(pool), length);
        stats.numDeviceFree++;
        listener.segmentUnmap(start, length, block.stream, pool.isSmall);
    }

    private void releaseExpandableSegment(Block block) {
        ExpandableSegment es = block.expandableSegment;
        expandableSegments.remove(es);
        block.pool.unmapped.remove(block);
        es.release();
    }

    // ------------------------------------------------------------------------------------------------
    // Out of memory (spec 4.5)
    // ------------------------------------------------------------------------------------------------

    /** An out-of-memory failure decided under the lock, reported to the observers after it is released. */
    private record OomReport(DeviceOutOfMemoryException exception, long allocSize, long allowed, long deviceFree) {
    }

    private OomReport outOfMemory(AllocParams p, long origSize) {
        MemInfo info = device.memGetInfo();
        String allowedInfo = setFraction ? FormatSize.formatSize(allowedMemoryMaximum) + " allowed; " : "";
        listener.oom(info.free(), p.size, p.stream);
        stats.numOoms++;
        long allocatedBytes = stats.allocatedBytes.all().current;
        long reservedBytes = stats.reservedBytes.all().current;
        long allowed = setFraction ? allowedMemoryMaximum : info.total();
        String message = DeviceOutOfMemoryException.headline(device.type()) + " Tried to allocate " + FormatSize.formatSize(p.allocSize)
                + ". GPU " + device.index() + " has a total capacity of " + FormatSize.formatSize(info.total())
                + " of which " + FormatSize.formatSize(info.free()) + " is free. " + allowedInfo
                + "Of the allocated memory " + FormatSize.formatSize(allocatedBytes) + " is allocated by vram4j, and "
                + FormatSize.formatSize(reservedBytes - allocatedBytes) + " is reserved by vram4j but unallocated."
                + " If reserved but unallocated memory is large try setting"
                + " VRAM4J_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory"
                + " Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
                + "\n" + fragmentationLine();
        return new OomReport(new DeviceOutOfMemoryException(message, device.index(), origSize, p.allocSize), p.allocSize,
                allowed, info.free());
    }

    /**
     * The one line vram4j adds to PyTorch's out-of-memory message: the largest free cached block and the bytes
     * free in cached blocks (both pools, every stream), after the retry sequence released what it could.
     */
    private String fragmentationLine() {
        long free = 0;
        long largest = 0;
        int count = 0;
        for (BlockPool pool : List.of(largeBlocks, smallBlocks)) {
            for (Block b : pool.blocks) {
                free += b.size;
                largest = Math.max(largest, b.size);
                count++;
            }
        }
        return "Fragmentation: the largest free cached block is " + FormatSize.formatSize(largest) + "; "
                + FormatSize.formatSize(free) + " is free in " + count + " cached block" + (count == 1 ? "" : "s") + ".";
    }

    void attachOutOfMemoryObserver(OutOfMemoryObserver observer) {
        oomObservers.add(observer);
    }

    // ------------------------------------------------------------------------------------------------
    // Settings, fraction, stats
    // ------------------------------------------------------------------------------------------------

    AllocatorConfig config() {
        return locked(() -> config);
    }

    void setConfig(AllocatorConfig newConfig) {
        lockedDo(() -> config = newConfig);
    }

    void setMemoryFraction(double fraction) {
        lockedDo(() -> {
            allowedMemoryMaximum = CachingAllocator.allowedMemoryMaximum(fraction, device.memGetInfo().total());
            setFraction = true;
        });
    }

    double memoryFraction() {
        return locked(() -> setFraction ? (double) allowedMemoryMaximum / (double) device.memGetInfo().total() : 1.0);
    }

    MemoryStats memoryStats() {
        return locked(() -> stats.toMemoryStats());
    }

    long allocatedBytes() {
        return locked(() -> stats.allocatedBytes.all().current);
    }

    long reservedBytes() {
        return locked(() -> stats.reservedBytes.all().current);
    }

    /**
     * Opens a region for peak tracking: returns the enclosing region's peaks {allocated, reserved} and starts
     * the new region's peaks at the current values.
     */
    long[] openRegion() {
        return locked(() -> {
            DeviceStats.Stat a = stats.allocatedBytes.all();
            DeviceStats.Stat r = stats.reservedBytes.all();
            long[] saved = {a.regionPeak, r.regionPeak};
            a.regionPeak = a.current;
            r.regionPeak = r.current;
            return saved;
        });
    }

    /**
     * Closes a region: returns its peaks {allocated, reserved} and folds them into the enclosing region's.
     */
    long[] closeRegion(long[] saved) {
        return locked(() -> {
            DeviceStats.Stat a = stats.allocatedBytes.all();
            DeviceStats.Stat r = stats.reservedBytes.all();
            long[] peaks = {a.regionPeak, r.regionPeak};
            a.regionPeak = Math.max(saved[0], a.regionPeak);
            r.regionPeak = Math.max(saved[1], r.regionPeak);
            return peaks;
        });
    }

    void resetPeakStats() {
        lockedDo(() -> stats.resetPeak());
    }

    void resetAccumulatedStats() {
        lockedDo(() -> stats.resetAccumulated());
    }

    void setPlacement(SegmentPlacement p) {
        lockedDo(() -> placement = p == null ? SegmentPlacement.NONE : p);
    }

    void setListener(AllocatorListener l) {
        lockedDo(() -> {
            userListener = l == null ? AllocatorListener.NONE : l;
            listener = ComposedListener.of(userListener, history);
        });
    }

    /** Starts (non-null) or stops (null, clearing the buffer) memory history recording. */
    void setHistory(HistoryRecorder h) {
        lockedDo(() -> {
            history = h;
            listener = ComposedListener.of(userListener, h);
        });
    }

    HistoryRecorder history() {
        return history;
    }

    Object segmentContext(long segmentBase) {
        return segmentContexts.get(segmentBase);
    }

    /** Runs {@code body} under the device lock (snapshots read blocks, stats and history consistently). */
    <T> T locked(Supplier<T> body) {
        lock.lock();
        try {
            return body.get();
        } finally {
            lock.unlock();
        }
    }

    /** Runs {@code body} under the device lock. */
    void lockedDo(Runnable body) {
        lock.lock();
        try {
            body.run();
        } finally {
            lock.unlock();
        }
    }

    long activeBytes() {
        return stats.activeBytes.all().current;
    }

    /**
     * Looks up an allocated block (for views and checks); null if none starts at {@code ptr}.
     *
     * @throws IllegalStateException when the allocator is closed
     */
    Block allocatedBlock(long ptr) {
        return locked(() -> {
            checkOpen();
            return allocatedBlocks.get(ptr);
        });
    }

    // ------------------------------------------------------------------------------------------------
    // State walk (snapshots, invariants, close)
    // ------------------------------------------------------------------------------------------------

    /**
     * Visits every segment (the first block of each mapped run of blocks), in address order. For expandable
     * segments each contiguous mapped range is reported as one segment, as PyTorch's snapshots do.
     */
    List<List<Block>> segments() {
        return locked(() -> {
            TreeMap<Long, Block> all = new TreeMap<>(Long::compareUnsigned);
            allocatedBlocks.forEach(b -> all.put(b.ptr, b));
            for (ArrayDeque<PendingEvent> q : streamEvents.values()) {
                for (PendingEvent pe : q) {
                    all.put(pe.block().ptr, pe.block());
                }
            }
            for (BlockPool pool : new BlockPool[] {largeBlocks, smallBlocks}) {
                for (Block b : pool.blocks) {
                    all.put(b.ptr, b);
                }
            }
            List<List<Block>> segments = new ArrayList<>();
            for (Block b : all.values()) {
                if (!b.mapped) {
                    continue;
                }
                boolean head = b.prev == null || (b.expandableSegment != null && !b.prev.mapped);
                if (!head) {
                    continue;
                }
                List<Block> seg = new ArrayList<>();
                for (Block x = b; x != null && x.mapped; x = x.next) {
                    seg.add(x);
                }
                segments.add(seg);
            }
            return segments;
        });
    }

    /** Number of allocated (not freed) blocks. */
    int liveAllocations() {
        return locked(allocatedBlocks::size);
    }

    /**
     * Closes the allocator: releases every segment, including those with live blocks. Every later call that
     * changes state throws {@link #closedException()}.
     *
     * @return the blocks that were still allocated, or null when the allocator was already closed
     */
    List<Block> releaseAll() {
        return locked(() -> {
            if (closed) {
                return null;
            }
            closed = true;
            List<Block> live = new ArrayList<>();
            allocatedBlocks.forEach(live::add);
            for (List<Block> seg : segments()) {
                Block head = seg.get(0);
                if (head.expandableSegment == null) {
                    device.free(head.ptr);
                }
            }
            for (ExpandableSegment es : expandableSegments) {
                es.unmapAll();
                es.release();
            }
            expandableSegments.clear();
            streamEvents.clear();
            smallBlocks.blocks.clear();
            largeBlocks.blocks.clear();
            smallBlocks.unmapped.clear();
            largeBlocks.unmapped.clear();
            return live;
        });
    }
}
