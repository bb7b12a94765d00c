package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.AbstractDevice;
import io.vram4j.device.Stream;
import io.vram4j.device.sim.SimDevice;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Expandable segments on the largest device a what-if may use (1 PiB, what {@code replay --sweep} replays on when
 * the recording bounds nothing): each stream and pool reserves 1.125 PiB of address space, 604 million 2 MiB
 * pages in the small pool. The bookkeeping must grow with the pages mapped, not the pages reserved: a dense
 * per-page array made this test (and {@code replay --sweep} of a real snapshot) run out of Java heap.
 */
class UnboundedExpandableSegmentTest {

    private static final long MiB = 1L << 20;

    @Test
    void segmentsOnAPetabyteDeviceCostOnlyWhatIsMapped() {
        try (SimDevice device = new SimDevice(0, AbstractDevice.MAX_CAPACITY, "sim:1PiB")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse("expandable_segments:True"));
            List<Stream> streams = new ArrayList<>();
            List<Long> ptrs = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                Stream s = i == 0 ? device.defaultStream() : device.newStream();
                streams.add(s);
                ptrs.add(a.malloc(1000, s));          // small pool: a 2 MiB page
                ptrs.add(a.malloc(30 * MiB, s));      // large pool: two 20 MiB pages
            }
            assertEquals(16 * (2 * MiB + 40 * MiB), a.memoryReserved());
            for (int i = 0; i < ptrs.size(); i++) {
                a.free(ptrs.get(i));
            }
            a.emptyCache();
            assertEquals(0, a.memoryReserved(), "every page unmapped again");
            assertEquals(device.totalMemory(), device.memGetInfo().free(), "the device holds no mapping");
        }
    }
}
