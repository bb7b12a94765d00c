package io.vram4j.memory;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.stats.MemoryStats;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class MemoryTrackerTest {
    private static final long MiB = 1L << 20;

    @Test
    void reportsBeforeAfterDeltasAndRegionPeaksWithoutTouchingGlobalPeaks() {
        try (DeviceBackend d = Devices.open("sim:8GiB")) {
            CachingAllocator a = CachingAllocator.create(d, AllocatorConfig.DEFAULT);
            long big = a.malloc(500 * MiB);
            a.free(big); // global peaks 500 MiB, the segment stays cached
            List<String> lines = new ArrayList<>();
            long kept;
            MemoryStats outerBefore = a.memoryStats();
            MemoryTracker outer = MemoryTracker.track(a, "outer", lines::add);
            MemoryStats innerAfter;
            try (MemoryTracker inner = MemoryTracker.track(a, "inner", lines::add)) {
                long tmp = a.malloc(30 * MiB);
                kept = a.malloc(12 * MiB);
                a.free(tmp);
                assertThrows(IllegalStateException.class, inner::report);
                innerAfter = a.memoryStats();
            }
            long later = a.malloc(600 * MiB); // beyond the cached segment: reserved and both peaks grow
            a.free(later);
            MemoryStats outerAfter = a.memoryStats();
            outer.close();
            outer.close(); // idempotent
            assertEquals(2, lines.size());

            // inner: the cached segment served both blocks, so nothing was reserved and no global peak moved
            assertEquals("[inner] allocated 0 bytes -> 12.00 MiB (+12.00 MiB), reserved 500.00 MiB -> 500.00 MiB (+0 bytes), "
                    + "peak allocated 500.00 MiB -> 500.00 MiB (+0 bytes), peak reserved 500.00 MiB -> 500.00 MiB (+0 bytes); "
                    + "in region: peak allocated 42.00 MiB (+42.00 MiB over start), peak reserved 500.00 MiB (+0 bytes over start)",
                    lines.get(0));
            // outer: every figure is the allocator's own, read before and after
            MemoryTracker.Report r = outer.report();
            assertEquals(outerBefore.allocatedBytes(), r.allocatedBefore());
            assertEquals(outerAfter.allocatedBytes(), r.allocatedAfter());
            assertEquals(outerBefore.reservedBytes(), r.reservedBefore());
            assertEquals(outerAfter.reservedBytes(), r.reservedAfter());
            assertEquals(outerBefore.maxAllocatedBytes(), r.maxAllocatedBefore());
            assertEquals(outerAfter.maxAllocatedBytes(), r.maxAllocatedAfter());
            assertEquals(outerBefore.maxReservedBytes(), r.maxReservedBefore());
            assertEquals(outerAfter.maxReservedBytes(), r.maxReservedAfter());
            assertEquals(612 * MiB, r.peakAllocated());
            assertEquals(612 * MiB, r.maxAllocatedAfter(), "the global peak moved with the region's");
            assertEquals(outerAfter.maxReservedBytes(), r.peakReserved());
            assertEquals(1100 * MiB, r.peakReserved(), "the cached 500 MiB and a new 600 MiB segment");
            assertEquals("[outer] allocated 0 bytes -> 12.00 MiB (+12.00 MiB), reserved 500.00 MiB -> 1.07 GiB (+600.00 MiB), "
                    + "peak allocated 500.00 MiB -> 612.00 MiB (+112.00 MiB), peak reserved 500.00 MiB -> 1.07 GiB (+600.00 MiB); "
                    + "in region: peak allocated 612.00 MiB (+612.00 MiB over start), peak reserved 1.07 GiB (+600.00 MiB over start)",
                    lines.get(1));
            assertEquals(innerAfter.allocatedBytes(), outer.report().allocatedAfter(), "allocated unchanged after the inner region");
            a.free(kept);
        }
    }

    @Test
    void regionPeakIsMeasuredBesideTheResetablePeaks() {
        try (DeviceBackend d = Devices.open("sim:8GiB")) {
            CachingAllocator a = CachingAllocator.create(d, AllocatorConfig.DEFAULT);
            long p = a.malloc(64 * MiB);
            a.free(p);
            MemoryTracker t = MemoryTracker.track(a, "t", null);
            long q = a.malloc(8 * MiB);
            a.free(q);
            t.close();
            // the tracker neither reset the peak (still 64 MiB) nor hid the 8 MiB inside it
            assertEquals(64 * MiB, a.maxMemoryAllocated());
            assertEquals(8 * MiB, t.report().peakAllocated());
            a.resetPeakMemoryStats();
            assertEquals(0, a.maxMemoryAllocated());
        }
    }

    @Test
    void logMemoryPrintsTheAllocatorsFiguresAndLeavesThePeaks() {
        try (DeviceBackend d = Devices.open("sim:8GiB")) {
            CachingAllocator a = CachingAllocator.create(d, AllocatorConfig.DEFAULT);
            long x = a.malloc(3 * MiB);
            long y = a.malloc(40 * MiB);
            a.free(y);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
            MemoryTracker.logMemory(a, "after step", out);
            MemoryTracker.logMemory(a, "again", out);
            MemoryStats s = a.memoryStats();
            assertEquals(3 * MiB, s.allocatedBytes());
            assertEquals(43 * MiB, s.maxAllocatedBytes(), "logMemory does not reset the peak");
            assertEquals(List.of(
                    "[after step] allocated 3.00 MiB, reserved 60.00 MiB, peak allocated 43.00 MiB, peak reserved 60.00 MiB",
                    "[again] allocated 3.00 MiB, reserved 60.00 MiB, peak allocated 43.00 MiB, peak reserved 60.00 MiB"),
                    bytes.toString(StandardCharsets.UTF_8).lines().toList());
            assertEquals(20 * MiB + 40 * MiB, s.reservedBytes(), "3 MiB came from a 20 MiB segment, 40 MiB from its own");
            a.free(x);
        }
    }
}
