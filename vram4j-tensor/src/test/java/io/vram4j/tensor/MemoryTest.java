package io.vram4j.tensor;

import io.vram4j.memory.MemoryTracker;
import io.vram4j.memory.stats.MemoryStats;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link Memory}: trackers and {@code log_memory} on the current device, without an allocator argument. */
class MemoryTest {
    private Device savedDefault;

    @BeforeEach
    void clearDefault() {
        savedDefault = Device.getDefault();
        Device.setDefault(null);
    }

    @AfterEach
    void restoreDefault() {
        Device.setDefault(savedDefault);
    }

    @Test
    void withoutACurrentDeviceTheCallsSaySo() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Memory.track("x"));
        assertTrue(e.getMessage().startsWith("no current device"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> Memory.logMemory("x"));
        assertThrows(IllegalStateException.class, Memory::memoryAllocated);
    }

    @Test
    void trackPrintsTheCurrentDevicesFiguresBeforeAndAfter() {
        try (Device dev = Device.open("host:256MiB"); Device.Scope s = dev.use()) {
            // 4 MiB in a 20 MiB segment (PyTorch's kLargeBuffer), freed: the peaks are 4 MiB / 20 MiB before the region,
            // and the small tensors below need a 2 MiB small-pool segment
            Tensor warm = dev.zeros(1 << 20);
            warm.close();
            MemoryStats before = dev.memoryStats();
            List<String> lines = new ArrayList<>();
            Tensor kept;
            MemoryTracker t = Memory.track("forward", lines::add);
            try (t) {
                try (Tensor a = dev.ones(1000); Tensor b = a.mul(2f)) {
                    kept = b.sum();
                }
            }
            MemoryStats after = dev.memoryStats();
            MemoryTracker.Report r = t.report();
            assertEquals(List.of(r.line()), lines);
            assertEquals(before.allocatedBytes(), r.allocatedBefore());
            assertEquals(after.allocatedBytes(), r.allocatedAfter());
            assertEquals(before.reservedBytes(), r.reservedBefore());
            assertEquals(after.reservedBytes(), r.reservedAfter());
            assertEquals(before.maxAllocatedBytes(), r.maxAllocatedBefore());
            assertEquals(after.maxAllocatedBytes(), r.maxAllocatedAfter());
            assertEquals(before.maxReservedBytes(), r.maxReservedBefore());
            assertEquals(after.maxReservedBytes(), r.maxReservedAfter());
            // a and b (4000 bytes each, rounded to 4096) lived together, then only the 512-byte sum stayed
            assertEquals(512, r.allocatedAfter() - r.allocatedBefore());
            assertEquals(r.allocatedBefore() + 2 * 4096 + 512, r.peakAllocated());
            assertEquals("[forward] allocated 0 bytes -> 512 bytes (+512 bytes), reserved 20.00 MiB -> 22.00 MiB (+2.00 MiB), "
                    + "peak allocated 4.00 MiB -> 4.00 MiB (+0 bytes), peak reserved 20.00 MiB -> 22.00 MiB (+2.00 MiB); "
                    + "in region: peak allocated 8.50 KiB (+8.50 KiB over start), peak reserved 22.00 MiB (+2.00 MiB over start)",
                    lines.getFirst());
            kept.close();
        }
    }

    @Test
    void logMemoryAndTheTagOnlyTrackPrintToStandardError() {
        PrintStream err = System.err;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (Device dev = Device.open("sim:1GiB")) {
            Device.setDefault(dev);
            System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
            Tensor x;
            try (MemoryTracker t = Memory.track("alloc")) {
                x = dev.empty(DType.FLOAT32, 3 << 20); // 12 MiB: a segment of exactly 12 MiB (over 10 MiB, rounded to 2 MiB)
            }
            Memory.logMemory("after");
            x.close();
            Memory.logMemory("freed");
            System.setErr(err);
            List<String> lines = bytes.toString(StandardCharsets.UTF_8).lines().toList();
            assertEquals(3, lines.size(), lines.toString());
            assertEquals("[alloc] allocated 0 bytes -> 12.00 MiB (+12.00 MiB), reserved 0 bytes -> 12.00 MiB (+12.00 MiB), "
                    + "peak allocated 0 bytes -> 12.00 MiB (+12.00 MiB), peak reserved 0 bytes -> 12.00 MiB (+12.00 MiB); "
                    + "in region: peak allocated 12.00 MiB (+12.00 MiB over start), peak reserved 12.00 MiB (+12.00 MiB over start)",
                    lines.get(0));
            assertEquals("[after] allocated 12.00 MiB, reserved 12.00 MiB, peak allocated 12.00 MiB, peak reserved 12.00 MiB",
                    lines.get(1));
            assertEquals("[freed] allocated 0 bytes, reserved 12.00 MiB, peak allocated 12.00 MiB, peak reserved 12.00 MiB",
                    lines.get(2));
            assertEquals(12L << 20, Memory.maxMemoryAllocated(), "no peak was reset");
            assertEquals(12L << 20, Memory.maxMemoryReserved());
            assertEquals(0, Memory.memoryAllocated());
            assertEquals(12L << 20, Memory.memoryReserved(), "the segment stays cached");
        } finally {
            System.setErr(err);
        }
        assertNull(Device.getDefault(), "closing the default device clears it");
    }

    @Test
    void useScopesNestPerThreadOverTheDefault() throws Exception {
        try (Device a = Device.open("sim:1GiB"); Device b = Device.open("sim:2GiB")) {
            Device.setDefault(a);
            assertSame(a, Device.current());
            AtomicReference<Device> seenByOtherThread = new AtomicReference<>();
            try (Device.Scope sb = b.use()) {
                assertSame(b, Device.current());
                try (Device.Scope sa = a.use()) {
                    assertSame(a, Device.current());
                }
                assertSame(b, Device.current());
                Thread other = new Thread(() -> seenByOtherThread.set(Device.current()));
                other.start();
                other.join();
                try (Tensor t = b.zeros(256)) {
                    assertEquals(1024, Memory.memoryAllocated(), "the figures are b's");
                }
            }
            assertSame(a, seenByOtherThread.get(), "scopes are per thread; the default is shared");
            assertSame(a, Device.current());
            assertEquals(0, Memory.memoryAllocated());
        }
    }
}
