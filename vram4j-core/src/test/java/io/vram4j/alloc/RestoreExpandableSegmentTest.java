package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.Stream;
import io.vram4j.device.sim.SimDevice;
import io.vram4j.memory.snapshot.SegmentInfo;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link CachingAllocator#restoreExpandableSegment}: the rebuilt state behaves as the mapped original would. */
class RestoreExpandableSegmentTest {
    private static final long MiB = 1L << 20;
    private static final long BASE = 0x7f0040000000L;

    @Test
    void mappedRangesLiveBlocksAndUnmappedHolesBehaveAsMapped() {
        try (SimDevice device = new SimDevice(0, 512 * MiB, "sim:test")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse("expandable_segments:True"));
            Stream s = device.defaultStream();
            // pages 1-2 and 4 mapped (20 MiB pages); page 0 and 3 unmapped; one live block in each range
            a.restoreExpandableSegment(BASE, s, false,
                    List.of(new long[] {BASE + 20 * MiB, 40 * MiB}, new long[] {BASE + 80 * MiB, 20 * MiB}),
                    List.of(new long[] {BASE + 25 * MiB, 10 * MiB, 10 * MiB - 100},
                            new long[] {BASE + 80 * MiB, 5 * MiB, 5 * MiB}));
            assertEquals(60 * MiB, a.memoryReserved());
            assertEquals(15 * MiB, a.memoryAllocated());
            assertEquals(0, a.memoryStats().get("segment.all.current"), "expandable pages are no segments");
            List<SegmentInfo> segs = a.segments();
            assertEquals(2, segs.size());
            assertEquals(BASE + 20 * MiB, segs.get(0).address());
            assertEquals(40 * MiB, segs.get(0).totalSize());
            assertTrue(segs.get(0).isExpandable());
            assertEquals(3, segs.get(0).blocks().size(), "free, live, free");
            assertEquals(10 * MiB - 100, segs.get(0).blocks().get(1).requestedSize());

            // best fit: the free 25 MiB after the first live block
            long p = a.malloc(22 * MiB, s);
            assertEquals(BASE + 35 * MiB, p);
            assertEquals(60 * MiB, a.memoryReserved());
            // 20 MiB fits no free block: the lowest unmapped range (page 0) is mapped, with the free 5 MiB after it
            long q = a.malloc(20 * MiB, s);
            assertEquals(BASE, q);
            assertEquals(80 * MiB, a.memoryReserved());
            a.free(p);
            a.free(q);
            a.free(BASE + 25 * MiB);
            a.free(BASE + 80 * MiB);
            a.emptyCache();
            assertEquals(0, a.memoryReserved(), "every page unmapped, the reservation released");
            a.close();
        }
    }

    @Test
    void inconsistentLayoutsAreRefusedAndChangeNothing() {
        try (SimDevice device = new SimDevice(0, 512 * MiB, "sim:test")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse("expandable_segments:True"));
            Stream s = device.defaultStream();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.restoreExpandableSegment(
                    BASE, s, false, List.of(new long[] {BASE + 2 * MiB, 20 * MiB}), List.of()));
            assertEquals("restoreExpandableSegment: expandable segment 0x7f0040000000: mapped range 0x7f0040200000+"
                    + 20 * MiB + " is not whole 20971520-byte pages from the base after the previous range", e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> a.restoreExpandableSegment(BASE, s, true,
                    List.of(new long[] {BASE, 2 * MiB}), List.of(new long[] {BASE + MiB, 2 * MiB, 2 * MiB})));
            assertTrue(e.getMessage().endsWith("block at 0x7f0040100000 of 2097152 bytes does not fit one mapped range"
                    + " after the previous block"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> a.restoreExpandableSegment(BASE, s, false,
                    List.of(new long[] {BASE + 600 * MiB, 20 * MiB}), List.of()));
            assertTrue(e.getMessage().contains("beyond its reservation of 608174080 bytes"), e.getMessage());
            assertEquals(0, a.memoryReserved());
            a.restoreExpandableSegment(BASE, s, true, List.of(new long[] {BASE, 2 * MiB}), List.of());
            e = assertThrows(IllegalArgumentException.class, () -> a.restoreExpandableSegment(BASE, s, true,
                    List.of(new long[] {BASE, 2 * MiB}), List.of()));
            assertTrue(e.getMessage().contains("the device cannot reserve 603979776 bytes of addresses there"), e.getMessage());
            assertEquals(2 * MiB, a.memoryReserved());
            a.close();
        }
    }

    @Test
    void restoresAreRefusedOnceClosed() {
        try (SimDevice device = new SimDevice(0, 512 * MiB, "sim:test")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse("expandable_segments:True"));
            Stream s = device.defaultStream();
            a.close();
            assertThrows(IllegalStateException.class, () -> a.restoreExpandableSegment(BASE, s, true,
                    List.of(new long[] {BASE, 2 * MiB}), List.of()));
            assertThrows(IllegalStateException.class, () -> a.restoreSegment(BASE, 2 * MiB, s, true, List.of()));
            assertEquals(0, device.memGetInfo().total() - device.memGetInfo().free(), "the device lent nothing");
        }
    }
}
