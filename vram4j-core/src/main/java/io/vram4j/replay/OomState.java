package io.vram4j.replay;

import io.vram4j.alloc.SizeRules;
import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.BlockState;
import io.vram4j.memory.snapshot.SegmentInfo;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The allocator's memory at an out-of-memory failure, after PyTorch's retry sequence released what it could.
 * Bytes throughout.
 *
 * @param capacity the device capacity (or the allowed maximum under a memory fraction)
 * @param reserved Σ segment sizes
 * @param allocated Σ allocated block sizes
 * @param request the rounded request that failed ({@code round_size})
 * @param stream the stream of the request (raw handle)
 * @param smallPool whether the request is for the small pool (at most 1 MiB rounded)
 * @param pools the free cached blocks per stream and pool, in (stream, pool) order
 * @param pendingFree Σ blocks freed but waiting on events of other streams ({@code active_pending_free})
 */
public record OomState(long capacity, long reserved, long allocated, long request, long stream, boolean smallPool,
                       List<PoolFree> pools, long pendingFree) {

    /**
     * Free cached memory of one stream and pool.
     *
     * @param stream the stream (raw handle)
     * @param small the small pool, else the large
     * @param freeBytes Σ inactive blocks
     * @param freeBlocks number of inactive blocks
     * @param largestFreeBlock the largest inactive block
     */
    public record PoolFree(long stream, boolean small, long freeBytes, int freeBlocks, long largestFreeBlock) {
    }

    /** @return capacity − reserved: bytes the device could still hand out as new segments */
    public long deviceFree() {
        return Math.max(0, capacity - reserved);
    }

    /** @return Σ free bytes in cached blocks of every stream and pool */
    public long cachedFree() {
        return pools.stream().mapToLong(PoolFree::freeBytes).sum();
    }

    /** @return the largest free cached block of any stream and pool */
    public long largestFreeBlock() {
        return pools.stream().mapToLong(PoolFree::largestFreeBlock).max().orElse(0);
    }

    /** @return the free cached memory of the request's own stream and pool (zeros when it has none) */
    public PoolFree own() {
        return pools.stream().filter(p -> p.stream() == stream && p.small() == smallPool).findFirst()
                .orElse(new PoolFree(stream, smallPool, 0, 0, 0));
    }

    /**
     * @param segments the allocator's segments at the failure ({@link io.vram4j.alloc.CachingAllocator#segments()})
     * @param capacity the capacity or allowed maximum in bytes
     * @param request the rounded request in bytes
     * @param stream the request's stream handle
     * @return the state
     */
    public static OomState of(List<SegmentInfo> segments, long capacity, long request, long stream) {
        long reserved = 0, allocated = 0, pending = 0;
        Map<List<Long>, long[]> byPool = new TreeMap<>((a, b) -> {
            int c = Long.compareUnsigned(a.get(0), b.get(0));
            return c != 0 ? c : Long.compare(a.get(1), b.get(1));
        });
        for (SegmentInfo s : segments) {
            reserved += s.totalSize();
            allocated += s.allocatedSize();
            for (BlockInfo b : s.blocks()) {
                if (b.state() == BlockState.ACTIVE_PENDING_FREE) {
                    pending += b.size();
                } else if (!b.isActive()) {
                    long[] f = byPool.computeIfAbsent(List.of(s.stream(), s.isLarge() ? 0L : 1L), k -> new long[3]);
                    f[0] += b.size();
                    f[1]++;
                    f[2] = Math.max(f[2], b.size());
                }
            }
        }
        List<PoolFree> pools = new ArrayList<>();
        for (Map.Entry<List<Long>, long[]> e : byPool.entrySet()) {
            long[] f = e.getValue();
            pools.add(new PoolFree(e.getKey().get(0), e.getKey().get(1) == 1, f[0], (int) f[1], f[2]));
        }
        return new OomState(capacity, reserved, allocated, request, stream, SizeRules.isSmall(request), pools, pending);
    }
}
