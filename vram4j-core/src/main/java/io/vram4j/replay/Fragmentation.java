package io.vram4j.replay;

import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.SegmentInfo;

import java.util.List;

/**
 * How fragmented a device's reserved memory is at one moment. Bytes throughout.
 *
 * @param segments number of segments (expandable mapped ranges count one each)
 * @param reserved Σ segment sizes
 * @param allocated Σ allocated block sizes
 * @param freeBytes Σ inactive block sizes (reserved but unallocated, pending frees excluded)
 * @param freeBlocks number of inactive blocks
 * @param largestFreeBlock the largest inactive block: the largest request the cache could serve without a
 *     new segment (ignoring pools and streams)
 * @param nonReleasable Σ inactive blocks in segments that also hold an active block (PyTorch's
 *     "Non-releasable memory": empty_cache cannot return them)
 */
public record Fragmentation(int segments, long reserved, long allocated, long freeBytes, int freeBlocks,
                            long largestFreeBlock, long nonReleasable) {

    /** @return reserved − allocated, the "reserved but unallocated" figure of PyTorch's OOM message */
    public long reservedUnallocated() {
        return reserved - allocated;
    }

    /** @return 1 − largestFreeBlock / freeBytes (0 when the free memory is one block, near 1 when it is dust) */
    public double externalFragmentation() {
        return freeBytes == 0 ? 0.0 : 1.0 - (double) largestFreeBlock / freeBytes;
    }

    /**
     * @param segments a recorded state, or an allocator's live one ({@link io.vram4j.alloc.CachingAllocator#segments()})
     * @return its fragmentation
     */
    public static Fragmentation ofSnapshot(List<SegmentInfo> segments) {
        long reserved = 0, allocated = 0, free = 0, largest = 0, nonReleasable = 0;
        int freeBlocks = 0;
        for (SegmentInfo s : segments) {
            reserved += s.totalSize();
            allocated += s.allocatedSize();
            boolean anyActive = false;
            for (BlockInfo b : s.blocks()) {
                anyActive |= b.isActive();
            }
            for (BlockInfo b : s.blocks()) {
                if (!b.isActive()) {
                    free += b.size();
                    freeBlocks++;
                    largest = Math.max(largest, b.size());
                    if (anyActive) {
                        nonReleasable += b.size();
                    }
                }
            }
        }
        return new Fragmentation(segments.size(), reserved, allocated, free, freeBlocks, largest, nonReleasable);
    }
}
