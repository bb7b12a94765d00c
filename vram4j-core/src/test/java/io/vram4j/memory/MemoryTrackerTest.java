package io.vram4j.memory;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MemoryTrackerTest {
    private static final long MiB = 1L << 20;

    @Test
    void reportsDeltasAndRegionPeakWithoutTouchingGlobalPeak() {
        try (DeviceBackend d = Devices.open("sim:8GiB")) {
            CachingAllocator a = CachingAllocator.create(d, AllocatorConfig.DEFAULT);
            long big = a.malloc(500 * MiB);
            a.free(big); // global peak 500 MiB, now cached
            List<String> lines = new ArrayList<>();
            long kept;
            MemoryTracker outer = MemoryTracker.track(a, "outer", lines::add);
            try (MemoryTracker inner = MemoryTracker.track(a, "inner", lines::add)) {
                long tmp = a.malloc(30 * MiB);
                kept = a.malloc(12 * MiB);
                a.free(tmp);
                assertThrows(IllegalStateException.class, inner::report);
            }
            long later = a.malloc(100 * MiB);
            a.free(later);
            outer.close();
            assertEquals(2, lines.size());
            assertTrue(lines.get(0).startsWith("[inner] allocated 0 bytes -> 12.00 MiB (+12.00 MiB)"), lines.get(0));
            assertTrue(lines.get(0).contains("peak allocated in region 42.00 MiB"), lines.get(0));
            assertTrue(lines.get(1).contains("peak allocated in region 112.00 MiB"), lines.get(1));
            assertEquals(112 * MiB, outer.report().peakAllocated());
            assertEquals(500 * MiB, a.maxMemoryAllocated(), "the global peak is untouched");
            a.free(kept);
        }
    }
}
