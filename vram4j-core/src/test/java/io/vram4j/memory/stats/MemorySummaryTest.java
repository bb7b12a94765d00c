package io.vram4j.memory.stats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SortedMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class MemorySummaryTest {

    /** Sets the four metrics of {@code stat.pool}. */
    private static void set(SortedMap<String, Long> m, String stat, String pool, long current, long peak,
                            long allocated, long freed) {
        String p = stat + "." + pool + ".";
        for (String k : new String[] {p + "current", p + "peak", p + "allocated", p + "freed"}) {
            assertTrue(m.containsKey(k), k);
        }
        m.put(p + "current", current);
        m.put(p + "peak", peak);
        m.put(p + "allocated", allocated);
        m.put(p + "freed", freed);
    }

    /** Sets the four metrics of an oversize stat. */
    private static void setOversize(SortedMap<String, Long> m, String stat, long current, long peak, long allocated,
                                    long freed) {
        m.put(stat + ".current", current);
        m.put(stat + ".peak", peak);
        m.put(stat + ".allocated", allocated);
        m.put(stat + ".freed", freed);
    }

    /** Spec 9.3: one live 1 KiB tensor in a fresh 2 MiB small-pool segment, default config. */
    private static MemoryStats oneKibInFreshSegment() {
        SortedMap<String, Long> m = MemoryStats.zeroValues();
        for (String pool : new String[] {"all", "small_pool"}) {
            for (String stat : new String[] {"allocated_bytes", "active_bytes", "requested_bytes"}) {
                set(m, stat, pool, 1024, 1024, 1024, 0);
            }
            set(m, "reserved_bytes", pool, 2097152, 2097152, 2097152, 0);
            set(m, "inactive_split_bytes", pool, 2096128, 2096128, 2096128, 0);
            for (String stat : new String[] {"allocation", "active", "segment", "inactive_split"}) {
                set(m, stat, pool, 1, 1, 1, 0);
            }
        }
        m.put("num_device_alloc", 1L);
        m.put("max_split_size", -1L);
        assertEquals(122, m.size());
        return new MemoryStats(m);
    }

    @Test
    void goldenExampleOfSpec93() {
        String expected = """
                |===========================================================================|
                |                  PyTorch CUDA memory summary, device ID 0                 |
                |---------------------------------------------------------------------------|
                |            CUDA OOMs: 0            |        cudaMalloc retries: 0         |
                |===========================================================================|
                |        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
                |---------------------------------------------------------------------------|
                | Allocated memory      |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |
                |       from small pool |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | Active memory         |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |
                |       from small pool |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | Requested memory      |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |
                |       from small pool |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | GPU reserved memory   |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |
                |       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
                |       from small pool |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |
                |---------------------------------------------------------------------------|
                | Non-releasable memory |   2047 KiB |   2047 KiB |   2047 KiB |      0 B   |
                |       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
                |       from small pool |   2047 KiB |   2047 KiB |   2047 KiB |      0 B   |
                |---------------------------------------------------------------------------|
                | Allocations           |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Active allocs         |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | GPU reserved segments |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Non-releasable allocs |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Oversize allocations  |       0    |       0    |       0    |       0    |
                |---------------------------------------------------------------------------|
                | Oversize GPU segments |       0    |       0    |       0    |       0    |
                |===========================================================================|
                """;
        String actual = MemorySummary.format(0, oneKibInFreshSegment(), false);
        assertEquals(expected, actual);
        for (String line : actual.split("\n")) {
            assertEquals(77, line.length(), line);
        }
    }

    /** The 9.3 example produced by the allocator itself, not a hand-built stats map. */
    @Test
    void goldenExampleFromTheAllocator() {
        String expected = """
                |===========================================================================|
                |                  PyTorch CUDA memory summary, device ID 0                 |
                |---------------------------------------------------------------------------|
                |            CUDA OOMs: 0            |        cudaMalloc retries: 0         |
                |===========================================================================|
                |        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
                |---------------------------------------------------------------------------|
                | Allocated memory      |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |
                |       from small pool |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | Active memory         |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |
                |       from small pool |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | Requested memory      |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |
                |       from small pool |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | GPU reserved memory   |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |
                |       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
                |       from small pool |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |
                |---------------------------------------------------------------------------|
                | Non-releasable memory |   2047 KiB |   2047 KiB |   2047 KiB |      0 B   |
                |       from large pool |      0 KiB |      0 KiB |      0 KiB |      0 B   |
                |       from small pool |   2047 KiB |   2047 KiB |   2047 KiB |      0 B   |
                |---------------------------------------------------------------------------|
                | Allocations           |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Active allocs         |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | GPU reserved segments |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Non-releasable allocs |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Oversize allocations  |       0    |       0    |       0    |       0    |
                |---------------------------------------------------------------------------|
                | Oversize GPU segments |       0    |       0    |       0    |       0    |
                |===========================================================================|
                """;
        try (io.vram4j.device.DeviceBackend d = io.vram4j.device.Devices.open("sim:80GiB")) {
            io.vram4j.alloc.CachingAllocator a = io.vram4j.alloc.CachingAllocator.create(d,
                    io.vram4j.alloc.config.AllocatorConfig.DEFAULT);
            long p = a.malloc(256 * 4);
            assertEquals(expected, a.memorySummary());
            a.free(p);
        }
    }

    @Test
    void goldenAbbreviated() {
        String expected = """
                |===========================================================================|
                |                  PyTorch CUDA memory summary, device ID 1                 |
                |---------------------------------------------------------------------------|
                |            CUDA OOMs: 0            |        cudaMalloc retries: 0         |
                |===========================================================================|
                |        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
                |---------------------------------------------------------------------------|
                | Allocated memory      |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | Active memory         |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | Requested memory      |   1024 B   |   1024 B   |   1024 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | GPU reserved memory   |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |
                |---------------------------------------------------------------------------|
                | Non-releasable memory |   2047 KiB |   2047 KiB |   2047 KiB |      0 B   |
                |---------------------------------------------------------------------------|
                | Allocations           |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Active allocs         |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | GPU reserved segments |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Non-releasable allocs |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | Oversize allocations  |       0    |       0    |       0    |       0    |
                |---------------------------------------------------------------------------|
                | Oversize GPU segments |       0    |       0    |       0    |       0    |
                |===========================================================================|
                """;
        assertEquals(expected, MemorySummary.format(1, oneKibInFreshSegment(), true));
    }

    /**
     * Hand-derived from the rules of spec 9.2: unit switches at exactly 768 of the previous unit (786 431 B vs
     * 786 432 B, 768 MiB - 1 staying in KiB), GiB/TiB/PiB values and Long.MAX_VALUE, per-pool rows using the
     * all row's unit, counts switching to K at 750 000 and to M, and the header numbers.
     */
    @Test
    void goldenUnitBoundaries() {
        SortedMap<String, Long> m = MemoryStats.zeroValues();
        set(m, "allocated_bytes", "all", 786_431L, 786_432L, 805_306_368L, 805_306_367L);
        set(m, "allocated_bytes", "large_pool", 786_431L, 786_432L, 805_306_368L, 0);
        set(m, "allocated_bytes", "small_pool", 0, 1023, 1_048_575L, 805_306_367L);
        set(m, "active_bytes", "all", 805_306_367L, 0, 0, 0);
        set(m, "active_bytes", "large_pool", 805_306_367L, 0, 0, 0);
        set(m, "reserved_bytes", "all", 768L << 30, 768L << 40, 768L << 50, Long.MAX_VALUE);
        set(m, "reserved_bytes", "large_pool", (768L << 30) - 1, 1L << 40, (1L << 50) - 1, 1L << 60);
        set(m, "inactive_split_bytes", "all", 2_096_128L, 2_097_152L, 1, 1024);
        set(m, "inactive_split_bytes", "large_pool", 1_048_576L, 0, 0, 0);
        set(m, "inactive_split_bytes", "small_pool", 1_047_552L, 2_097_152L, 1, 1024);
        set(m, "allocation", "all", 749_999L, 750_000L, 999_999_999L, 750_000_000L);
        set(m, "allocation", "large_pool", 749_999L, 749_999L, 1000, 5);
        set(m, "active", "all", 1, 1, 1, 0);
        set(m, "active", "small_pool", 1, 1, 1, 0);
        set(m, "segment", "all", 12, 1_234_567L, 1_234_567_890_123L, 0);
        set(m, "segment", "large_pool", 12, 1_000_000L, 1_234_567_890_123L, 0);
        setOversize(m, "oversize_allocations", 749_999L, 750_000L, 750_000_000L, 3);
        m.put("num_ooms", 2L);
        m.put("num_alloc_retries", 12_345L);
        String expected = """
                |===========================================================================|
                |                  PyTorch CUDA memory summary, device ID 3                 |
                |---------------------------------------------------------------------------|
                |            CUDA OOMs: 2            |        cudaMalloc retries: 12345     |
                |===========================================================================|
                |        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
                |---------------------------------------------------------------------------|
                | Allocated memory      | 786431 B   |    768 KiB |    768 MiB | 786431 KiB |
                |       from large pool | 786431 B   |    768 KiB |    768 MiB |      0 KiB |
                |       from small pool |      0 B   |      0 KiB |      0 MiB | 786431 KiB |
                |---------------------------------------------------------------------------|
                | Active memory         | 786431 KiB |      0 B   |      0 B   |      0 B   |
                |       from large pool | 786431 KiB |      0 B   |      0 B   |      0 B   |
                |       from small pool |      0 KiB |      0 B   |      0 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | Requested memory      |      0 B   |      0 B   |      0 B   |      0 B   |
                |       from large pool |      0 B   |      0 B   |      0 B   |      0 B   |
                |       from small pool |      0 B   |      0 B   |      0 B   |      0 B   |
                |---------------------------------------------------------------------------|
                | GPU reserved memory   |    768 GiB |    768 TiB |    768 PiB |   8191 PiB |
                |       from large pool |    767 GiB |      1 TiB |      0 PiB |   1024 PiB |
                |       from small pool |      0 GiB |      0 TiB |      0 PiB |      0 PiB |
                |---------------------------------------------------------------------------|
                | Non-releasable memory |   2047 KiB |   2048 KiB |      1 B   |   1024 B   |
                |       from large pool |   1024 KiB |      0 KiB |      0 B   |      0 B   |
                |       from small pool |   1023 KiB |   2048 KiB |      1 B   |   1024 B   |
                |---------------------------------------------------------------------------|
                | Allocations           |  749999    |     750 K  |     999 M  |     750 M  |
                |       from large pool |  749999    |     749 K  |       0 M  |       0 M  |
                |       from small pool |       0    |       0 K  |       0 M  |       0 M  |
                |---------------------------------------------------------------------------|
                | Active allocs         |       1    |       1    |       1    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       1    |       1    |       1    |       0    |
                |---------------------------------------------------------------------------|
                | GPU reserved segments |      12    |    1234 K  | 1234567 M  |       0    |
                |       from large pool |      12    |    1000 K  | 1234567 M  |       0    |
                |       from small pool |       0    |       0 K  |       0 M  |       0    |
                |---------------------------------------------------------------------------|
                | Non-releasable allocs |       0    |       0    |       0    |       0    |
                |       from large pool |       0    |       0    |       0    |       0    |
                |       from small pool |       0    |       0    |       0    |       0    |
                |---------------------------------------------------------------------------|
                | Oversize allocations  |  749999    |     750 K  |     750 M  |       3    |
                |---------------------------------------------------------------------------|
                | Oversize GPU segments |       0    |       0    |       0    |       0    |
                |===========================================================================|
                """;
        assertEquals(expected, MemorySummary.format(3, new MemoryStats(m), false));
    }

    @ParameterizedTest(name = "{0} with reference {1} -> [{2}]")
    @CsvSource(delimiter = ';', ignoreLeadingAndTrailingWhitespace = false, value = {
        "0;0;     0 B  ",
        "786431;786431;786431 B  ",
        "786432;786432;   768 KiB",
        "1048576;786431;1048576 B  ",
        "1000;786432;     0 KiB",
        "2097152;2097152;  2048 KiB",
        "805306367;805306367;786431 KiB",
        "805306368;805306368;   768 MiB",
        "1073741824;1073741824;  1024 MiB",
        "824633720831;824633720831;786431 MiB",
        "824633720832;824633720832;   768 GiB",
        "844424930131968;844424930131968;   768 TiB",
        "864691128455135232;864691128455135232;   768 PiB",
        "9223372036854775807;9223372036854775807;  8191 PiB",
        "-1;786432;    -1 KiB",
        "-1;-5;    -1 B  "})
    void sizeCells(long value, long reference, String expected) {
        assertEquals(expected, MemorySummary.formatSizeCell(value, reference));
    }

    @ParameterizedTest(name = "{0} with reference {1} -> [{2}]")
    @CsvSource(delimiter = ';', ignoreLeadingAndTrailingWhitespace = false, value = {
        "0;0;      0   ",
        "749999;749999; 749999   ",
        "750000;750000;    750 K ",
        "749999999;749999999; 749999 K ",
        "750000000;750000000;    750 M ",
        "1999;750000;      1 K ",
        "10000000000000;10000000000000;10000000 M ",
        "9223372036854775807;9223372036854775807;9223372036854 M "})
    void countCells(long value, long reference, String expected) {
        assertEquals(expected, MemorySummary.formatCountCell(value, reference));
    }

    @Test
    void wideNumbersGrowTheLineLikePython() {
        SortedMap<String, Long> m = MemoryStats.zeroValues();
        m.put("num_ooms", 1_234_567_890_123L); // 13 digits, field of 12
        setOversize(m, "oversize_segments", 10_000_000_000_000L, 0, 0, 0);
        String out = MemorySummary.format(0, new MemoryStats(m), true);
        assertTrue(out.contains("|            CUDA OOMs: 1234567890123 |        cudaMalloc retries: 0         |\n"),
                out);
        assertTrue(out.contains("| Oversize GPU segments | 10000000 M  |       0    |       0    |       0    |\n"),
                out);
    }

    @Test
    void missingKeyIsReported() {
        SortedMap<String, Long> m = MemoryStats.zeroValues();
        m.remove("segment.small_pool.freed");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> MemorySummary.format(0, new MemoryStats(m), false));
        assertTrue(e.getMessage().contains("segment.small_pool.freed"), e.getMessage());
        // the abbreviated table does not read per-pool keys
        assertTrue(MemorySummary.format(0, new MemoryStats(m), true).endsWith("|\n"));
    }
}
