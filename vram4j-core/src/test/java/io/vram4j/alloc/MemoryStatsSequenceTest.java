package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.ByteSize;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.sim.SimDevice;
import io.vram4j.memory.stats.MemoryStats;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Upstream's {@code test_memory_stats} / {@code test_memory_stats_multigpu} (test_cuda_multigpu.py, spec 11.1):
 * the float-tensor size sequence of {@code _test_memory_stats_generator} with N = 35, and after every step the
 * checks of its {@code assert_change}: memory_allocated moves in the expected direction, allocated &lt;= peak,
 * peaks never drop except by a reset, reserved &lt;= its peak; around each empty_cache num_sync_all_streams
 * grows by exactly 1, num_device_alloc / num_device_free never drop, reserved does not grow and its peak stays;
 * after reset_peak the peaks equal the current values; at the end allocated is back at its starting values.
 * After every step the statistics also agree with the segments ({@code _check_memory_stat_consistency}).
 */
class MemoryStatsSequenceTest {
    private static final long GiB = 1L << 30;

    /** One device's run of the upstream generator, advanced one step (one {@code yield}) at a time. */
    private static final class Sequence {
        private final CachingAllocator a;
        private final List<Runnable> steps = new ArrayList<>();
        private final Random rnd;
        private int next;
        private long m0;
        private long m1;
        private long lastM;
        private long maxM;
        private long lastR;
        private long maxR;
        private List<long[]> tensors1;
        private List<long[]> tensors2 = new ArrayList<>();
        private int checks;

        Sequence(CachingAllocator a, int n, long seed) {
            this.a = a;
            this.rnd = new Random(seed);
            steps.add(() -> {
                m0 = a.memoryAllocated();
                lastM = m0;
                maxM = a.maxMemoryAllocated();
                lastR = a.memoryReserved();
                maxR = a.maxMemoryReserved();
                assertChange(0, false, false);
                assertChange(0, false, true);
                assertChange(0, true, false);
                assertChange(0, false, true);
                assertChange(0, false, false);
            });
            steps.add(() -> {
                tensors1 = new ArrayList<>(List.of(alloc(1), alloc(10, 20), alloc(200, 300, 2000)));
                m1 = a.memoryAllocated();
                assertChange(1, false, false);
            });
            for (int i = 1; i <= n / 2; i++) { // small ones
                int k = i;
                steps.add(() -> {
                    tensors2.add(alloc(k, k * 4));
                    assertChange(1, false, false);
                });
            }
            for (int i = 5; i < n / 2 + 5; i++) { // large ones
                int k = i;
                steps.add(() -> {
                    tensors2.add(alloc(k, k * 7, k * 9, k * 11));
                    assertChange(1, false, k % 2 == 0);
                });
            }
            steps.add(() -> {
                tensors2.add(alloc(0, 0, 0));
                assertChange(0, false, false);
            });
            List<long[]> permute = new ArrayList<>();
            steps.add(() -> {
                List<Integer> order = new ArrayList<>();
                for (int i = 0; i < tensors2.size(); i++) {
                    order.add(i);
                }
                Collections.shuffle(order, rnd);
                for (int i : order) {
                    permute.add(tensors2.get(i));
                    assertChange(0, false, false);
                }
            });
            steps.add(() -> assertChange(0, false, false)); // del tensors2: the tensors live on in permute
            steps.add(() -> {
                tensors2 = permute;
                assertChange(0, false, false);
            });
            steps.add(() -> assertChange(0, false, true)); // del permute
            for (int i = 0; i < n / 2; i++) {
                int k = i;
                steps.add(() -> {
                    long[] t = tensors2.remove(k); // Python's `del tensors2[i]` on the shrinking list
                    free(t);
                    assertChange(t[1] == 0 ? 0 : -1, false, false);
                });
            }
            for (int i = 2; i < 2 * n / 3 + 2; i++) {
                int k = i;
                steps.add(() -> {
                    tensors2.add(alloc(k, k * 3, k * 8));
                    assertChange(1, true, k % 2 == 0);
                });
            }
            steps.add(() -> {
                tensors2.forEach(this::free);
                tensors2 = null;
                assertChange(-1, false, true);
                assertChange(0, false, false);
                assertEquals(m1, a.memoryAllocated(), "back to the value after the first three tensors");
            });
            steps.add(() -> {
                tensors1.forEach(this::free);
                tensors1 = null;
                assertChange(-1, false, true);
                assertEquals(m0, a.memoryAllocated(), "back to the starting value");
                assertChange(0, true, false);
                assertChange(0, false, true);
            });
        }

        /** Runs the next step; false when the sequence has ended. */
        boolean advance() {
            if (next == steps.size()) {
                return false;
            }
            steps.get(next++).run();
            return true;
        }

        /** A float32 tensor of the given shape: {ptr, bytes}. Zero elements give the null address, as torch. */
        private long[] alloc(long... shape) {
            long elems = 1;
            for (long d : shape) {
                elems *= d;
            }
            long bytes = elems * 4;
            return new long[] {a.malloc(bytes), bytes};
        }

        private void free(long[] t) {
            a.free(t[0]);
        }

        /**
         * Upstream's assert_change.
         *
         * @param comp sign of the expected change of memory_allocated since the last check
         */
        private void assertChange(int comp, boolean emptyCache, boolean resetPeak) {
            checks++;
            long newM = a.memoryAllocated();
            long newMaxM = a.maxMemoryAllocated();
            if (comp > 0) {
                assertTrue(newM > lastM, "allocated grows: " + newM + " > " + lastM);
            } else if (comp < 0) {
                assertTrue(newM < lastM, "allocated drops: " + newM + " < " + lastM);
            } else {
                assertEquals(lastM, newM, "allocated unchanged");
            }
            assertTrue(newM <= newMaxM, "allocated <= max_allocated");
            assertTrue(newMaxM >= maxM, "max_allocated never drops");
            lastM = newM;
            maxM = newMaxM;

            long newR = a.memoryReserved();
            long newMaxR = a.maxMemoryReserved();
            assertTrue(newR <= newMaxR, "reserved <= max_reserved");
            assertTrue(newMaxR >= maxR, "max_reserved never drops");
            lastR = newR;
            maxR = newMaxR;

            if (emptyCache) {
                MemoryStats s1 = a.memoryStats();
                long sync1 = s1.get("num_sync_all_streams");
                long alloc1 = s1.get("num_device_alloc");
                long free1 = s1.get("num_device_free");
                assertTrue(sync1 >= 0);
                assertTrue(alloc1 >= (newM == 0 ? 0 : 1), "memory in use means a device allocation happened");
                assertTrue(free1 >= 0);
                a.emptyCache();
                MemoryStats s2 = a.memoryStats();
                assertEquals(sync1 + 1, s2.get("num_sync_all_streams"), "empty_cache synchronizes once");
                assertTrue(s2.get("num_device_alloc") >= alloc1, "num_device_alloc never drops");
                assertTrue(s2.get("num_device_free") >= free1, "num_device_free never drops");
                newR = a.memoryReserved();
                newMaxR = a.maxMemoryReserved();
                assertTrue(newR <= lastR, "empty_cache does not grow reserved");
                assertTrue(newR <= newMaxR);
                assertEquals(maxR, newMaxR, "empty_cache leaves max_reserved");
                lastR = newR;
                maxR = newMaxR;
            }
            if (resetPeak) {
                a.resetPeakMemoryStats();
                assertEquals(lastM, a.memoryAllocated());
                assertEquals(lastM, a.maxMemoryAllocated(), "reset_peak: max_allocated == allocated");
                maxM = lastM;
                assertEquals(lastR, a.memoryReserved());
                assertEquals(lastR, a.maxMemoryReserved(), "reset_peak: max_reserved == reserved");
                maxR = lastR;
            }
            StatsInvariants.check(a);
        }
    }

    private static CachingAllocator allocator(DeviceBackend device) {
        return CachingAllocator.create(device, AllocatorConfig.DEFAULT);
    }

    @Test
    void memoryStats() {
        try (DeviceBackend d = new SimDevice(0, 16 * GiB, "sim:16GiB")) {
            CachingAllocator a = allocator(d);
            Sequence seq = new Sequence(a, 35, 1);
            int steps = 0;
            while (seq.advance()) {
                steps++;
            }
            // 1 + 1 + 17 small + 17 large + 1 empty + 1 permute + 3 + 17 deletions + 23 + 1 + 1
            assertEquals(83, steps);
            // 5 + 1 + 17 + 17 + 1 + 35 (one per permuted tensor) + 3 + 17 + 23 + 2 + 3
            assertEquals(124, seq.checks, "assert_change ran after every step");
            MemoryStats s = a.memoryStats();
            assertTrue(s.get("num_device_alloc") > 0 && s.get("num_device_free") > 0, "segments came and went");
            assertEquals(25, s.get("num_sync_all_streams"), "one per empty_cache: 1 at the start, 23 in the loop, 1 at the end");
            assertEquals(0, a.memoryReserved(), "the final empty_cache returned everything");
            a.close();
        }
    }

    @Test
    void memoryStatsMultiDeviceLockstep() {
        try (DeviceBackend d0 = new SimDevice(0, 16 * GiB, "sim:16GiB #0");
             DeviceBackend d1 = new SimDevice(1, 16 * GiB, "sim:16GiB #1")) {
            CachingAllocator a0 = allocator(d0);
            CachingAllocator a1 = allocator(d1);
            Sequence s0 = new Sequence(a0, 35, 1);
            Sequence s1 = new Sequence(a1, 35, 2);
            boolean more0 = true;
            boolean more1 = true;
            while (more0 || more1) {
                more0 = more0 && s0.advance();
                more1 = more1 && s1.advance();
            }
            a0.close();
            a1.close();
        }
    }

    @Test
    void memoryStatsMultiDeviceSemiRandomOrder() {
        try (DeviceBackend d0 = new SimDevice(0, 16 * GiB, "sim:16GiB #0");
             DeviceBackend d1 = new SimDevice(1, 16 * GiB, "sim:16GiB #1")) {
            CachingAllocator a0 = allocator(d0);
            CachingAllocator a1 = allocator(d1);
            Sequence s0 = new Sequence(a0, 35, 3);
            Sequence s1 = new Sequence(a1, 35, 4);
            Random rnd = new Random(5);
            boolean more0 = true;
            boolean more1 = true;
            boolean apart = false;
            while (more0 || more1) {
                more0 = more0 && s0.advance();
                int times = more0 ? rnd.nextInt(3) : Integer.MAX_VALUE;
                for (int t = 0; t < times && more1; t++) {
                    more1 = s1.advance();
                }
                if (more0 && more1 && a0.memoryAllocated() != a1.memoryAllocated()) {
                    apart = true;
                }
            }
            assertTrue(apart, "the two devices were at different points of the sequence");
            a0.close();
            a1.close();
        }
    }

    @Test
    void devicesKeepSeparateStats() {
        try (DeviceBackend d0 = new SimDevice(0, 16 * GiB, "sim:16GiB #0");
             DeviceBackend d1 = new SimDevice(1, 16 * GiB, "sim:16GiB #1")) {
            CachingAllocator a0 = allocator(d0);
            CachingAllocator a1 = allocator(d1);
            MemoryStats before1 = a1.memoryStats();
            long p = a0.malloc(3 * ByteSize.MIB);
            a0.free(p);
            a0.emptyCache();
            assertNotEquals(before1, a0.memoryStats());
            assertEquals(before1, a1.memoryStats(), "device 1 saw nothing of device 0's traffic");
            assertFalse(a0.memorySummary().equals(a1.memorySummary()));
            a0.close();
            a1.close();
        }
    }
}
