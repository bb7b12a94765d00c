package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** max_split_size_mb lowered at run time leaves split blocks above it; the out-of-memory path must not free them. */
class RuntimeMaxSplitSizeTest {
    private static final long MiB = 1L << 20;

    @Test
    void aSplitOversizeBlockIsNotReleasedByTheRetrySequence() {
        try (DeviceBackend device = Devices.open("sim:256MiB")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            long p = a.malloc(200 * MiB);
            a.free(p);
            long q = a.malloc(100 * MiB);          // splits the 200 MiB segment: 100 MiB stays free in it
            a.setSettings("max_split_size_mb:64"); // the free 100 MiB block is now oversize, yet split
            // 80 MiB: the 100 MiB block is too large for an oversize request (>= 80 + 20), 56 MiB free on the device
            assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(80 * MiB));
            assertEquals(200 * MiB, a.memoryReserved(), "nothing was released");
            a.free(q);
            a.close();
        }
    }
}
