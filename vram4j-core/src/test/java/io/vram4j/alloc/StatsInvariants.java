package io.vram4j.alloc;

import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.stats.MemoryStats;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * PyTorch's {@code _check_memory_stat_consistency} (test_cuda_multigpu.py, spec 8.3): the statistics must
 * agree with the segments and blocks the allocator actually holds.
 */
final class StatsInvariants {
    private StatsInvariants() {
    }

    static void check(CachingAllocator alloc) {
        MemoryStats s = alloc.memoryStats();
        List<SegmentInfo> segments = alloc.segments();
        String[] pools = {"all", "small_pool", "large_pool"};
        for (String pool : pools) {
            long segCount = 0, reserved = 0, allocated = 0, active = 0, requested = 0;
            long allocations = 0, activeBlocks = 0, inactiveSplit = 0, inactiveSplitBytes = 0;
            for (SegmentInfo seg : segments) {
                if (pool.equals("small_pool") && seg.isLarge() || pool.equals("large_pool") && !seg.isLarge()) {
                    continue;
                }
                if (!seg.isExpandable()) {
                    segCount++;
                }
                reserved += seg.totalSize();
                allocated += seg.allocatedSize();
                active += seg.activeSize();
                requested += seg.requestedSize();
                for (BlockInfo b : seg.blocks()) {
                    if (b.isAllocated()) {
                        allocations++;
                    }
                    if (b.isActive()) {
                        activeBlocks++;
                    }
                    if (!b.isActive() && !seg.isExpandable() && seg.blocks().size() > 1) {
                        inactiveSplit++;
                        inactiveSplitBytes += b.size();
                    }
                }
            }
            assertEquals(segCount, s.get("segment." + pool + ".current"), "segment." + pool);
            assertEquals(reserved, s.get("reserved_bytes." + pool + ".current"), "reserved_bytes." + pool);
            assertEquals(allocated, s.get("allocated_bytes." + pool + ".current"), "allocated_bytes." + pool);
            assertEquals(active, s.get("active_bytes." + pool + ".current"), "active_bytes." + pool);
            assertEquals(requested, s.get("requested_bytes." + pool + ".current"), "requested_bytes." + pool);
            assertEquals(allocations, s.get("allocation." + pool + ".current"), "allocation." + pool);
            assertEquals(activeBlocks, s.get("active." + pool + ".current"), "active." + pool);
            assertEquals(inactiveSplit, s.get("inactive_split." + pool + ".current"), "inactive_split." + pool);
            assertEquals(inactiveSplitBytes, s.get("inactive_split_bytes." + pool + ".current"),
                    "inactive_split_bytes." + pool);
        }
        for (SegmentInfo seg : segments) {
            long sum = seg.blocks().stream().mapToLong(BlockInfo::size).sum();
            assertEquals(seg.totalSize(), sum, "block sizes add up to the segment");
            long expect = seg.address();
            for (BlockInfo b : seg.blocks()) {
                assertEquals(expect, b.address(), "blocks are contiguous");
                expect += b.size();
            }
        }
    }
}
