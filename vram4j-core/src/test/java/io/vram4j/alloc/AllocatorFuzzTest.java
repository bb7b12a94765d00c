package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import org.junit.jupiter.params.ParameterizedTest;
import io.vram4j.testsupport.TestStrength;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Upstream's {@code test_allocator_fuzz} on real host memory: 10,000 random alloc / free / empty_cache (2,000 unless -Dvram4j.test.long=true)
 * operations (seed 123), each block filled with a unique value and checked before it is freed; live blocks
 * never overlap and the statistics agree with the allocator's state after every step. (The per-step
 * {@link StatsInvariants} check costs about 1 s of a variant's run; filling and checking the blocks, some
 * 50 GB of memory traffic per variant, dominates.)
 */
class AllocatorFuzzTest {
    private static final long MiB = 1L << 20;

    @ParameterizedTest(name = "conf '{0}'")
    @ValueSource(strings = {"", "expandable_segments:True"})
    void fuzz(String conf) {
        Random rnd = new Random(123);
        try (DeviceBackend device = Devices.open("host:1GiB")) {
            CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse(conf));
            List<long[]> live = new ArrayList<>(); // {ptr, bytes, value}
            TreeMap<Long, Long> ranges = new TreeMap<>();
            long liveBytes = 0;
            long cap = (1L << 30) / 40 * 4;
            int value = 1;
            int steps = TestStrength.ops(2_000, 10_000);
            for (int step = 0; step < steps; step++) {
                // weights as upstream: alloc 1, free 1 (when anything is live), empty_cache 0.1
                double r = rnd.nextDouble() * (live.isEmpty() ? 1.1 : 2.1);
                if (live.isEmpty() && r >= 1.0) {
                    r = 2.0;
                }
                if (r < 1.0) {
                    long elems = (2 * MiB + rnd.nextLong(18 * MiB)) / 4;
                    long bytes = elems * 4;
                    if (liveBytes + bytes > cap) {
                        continue;
                    }
                    long ptr = alloc.malloc(bytes);
                    Map.Entry<Long, Long> below = ranges.floorEntry(ptr);
                    assertTrue(below == null || below.getKey() + below.getValue() <= ptr, "overlaps a live block");
                    Long above = ranges.ceilingKey(ptr);
                    assertTrue(above == null || ptr + bytes <= above, "overlaps a live block");
                    ranges.put(ptr, bytes);
                    fill(alloc.segment(ptr), value);
                    live.add(new long[] {ptr, bytes, value});
                    value++;
                    liveBytes += bytes;
                } else if (r < 2.0) {
                    long[] b = live.remove(rnd.nextInt(live.size()));
                    check(alloc.segment(b[0]), (int) b[2]);
                    alloc.free(b[0]);
                    ranges.remove(b[0]);
                    liveBytes -= b[1];
                } else {
                    alloc.emptyCache();
                }
                StatsInvariants.check(alloc);
            }
            for (long[] b : live) {
                check(alloc.segment(b[0]), (int) b[2]);
                alloc.free(b[0]);
            }
            StatsInvariants.check(alloc);
            alloc.emptyCache();
            assertEquals(0, alloc.memoryReserved());
            alloc.close();
        }
    }

    /** Writes the 8-byte pattern of {@code value} over the whole block (bulk copies of the filled prefix). */
    private static void fill(MemorySegment s, int value) {
        long n = s.byteSize();
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, pattern(value));
        for (long done = 8; done < n; done *= 2) {
            MemorySegment.copy(s, 0, s, done, Math.min(done, n - done));
        }
    }

    /** The block holds the pattern everywhere: its first 8 bytes are the pattern and it repeats every 8 bytes. */
    private static void check(MemorySegment s, int value) {
        long n = s.byteSize();
        long first = s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        if (first != pattern(value)) {
            throw new AssertionError("block with value " + value + " corrupted at byte 0: 0x" + Long.toHexString(first));
        }
        long at = MemorySegment.mismatch(s, 0, n - 8, s, 8, n);
        if (at >= 0) {
            throw new AssertionError("block with value " + value + " corrupted at byte " + (at + 8) + " (0x"
                    + Integer.toHexString(s.get(ValueLayout.JAVA_BYTE, at + 8) & 0xff) + ")");
        }
    }

    private static long pattern(int value) {
        return (value & 0xffffffffL) | ((long) value << 32);
    }
}
