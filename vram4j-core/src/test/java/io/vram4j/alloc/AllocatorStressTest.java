package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import io.vram4j.memory.stats.MemoryStats;
import org.junit.jupiter.params.ParameterizedTest;
import io.vram4j.testsupport.TestStrength;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Several threads allocate and free random sizes on random streams of one host device. Every block is stamped
 * with a value unique to it and checked before it is freed; the live ranges of all threads are kept in one
 * map and a new block must not overlap any of them. Every thread periodically checks a {@code memoryStats}
 * snapshot (current &lt;= peak, current = allocated - freed, allocated &lt;= active &lt;= reserved, pools add up)
 * and, under the allocator's lock, that the statistics agree with the segments; and at the end everything is
 * back. One configuration releases the lock around device mallocs ({@code release_lock_on_cudamalloc}).
 */
class AllocatorStressTest {

    @ParameterizedTest(name = "conf '{0}'")
    @ValueSource(strings = {"", "expandable_segments:True", "max_split_size_mb:40,roundup_power2_divisions:4",
        "release_lock_on_cudamalloc:True,max_split_size_mb:40"})
    void concurrentAllocAndFree(String conf) throws Exception {
        try (DeviceBackend device = Devices.open("host:2GiB")) {
            CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse(conf));
            Stream[] streams = {device.defaultStream(), device.newStream(), device.newStream()};
            int threads = Integer.getInteger("stress.threads", 4);
            int opsPerThread = TestStrength.ops(1_200, 4_000);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> futures = new ArrayList<>();
            ConcurrentSkipListMap<Long, Long> liveRanges = new ConcurrentSkipListMap<>(); // address -> bytes
            for (int t = 0; t < threads; t++) {
                final int id = t;
                futures.add(pool.submit(() -> {
                    Random rnd = new Random(1000 + id);
                    List<long[]> live = new ArrayList<>();
                    for (int i = 0; i < opsPerThread; i++) {
                        if (live.size() < 32 && (live.isEmpty() || rnd.nextBoolean())) {
                            long size = rnd.nextInt(4) == 0 ? 1 + rnd.nextLong(24L << 20) : 1 + rnd.nextLong(1 << 20);
                            Stream s = streams[rnd.nextInt(streams.length)];
                            long ptr = alloc.malloc(size, s);
                            claim(liveRanges, ptr, size);
                            long stamp = ((long) id << 48) | i;
                            stamp(alloc.segment(ptr), stamp);
                            if (rnd.nextInt(8) == 0) {
                                alloc.recordStream(ptr, streams[rnd.nextInt(streams.length)]);
                            }
                            live.add(new long[] {ptr, stamp});
                        } else {
                            long[] b = live.remove(rnd.nextInt(live.size()));
                            verify(alloc.segment(b[0]), b[1]);
                            liveRanges.remove(b[0]); // before free: the address may be handed out again at once
                            alloc.free(b[0]);
                        }
                        if (i % 100 == id) {
                            checkSnapshot(alloc.memoryStats());
                        }
                        if (i % 1000 == 500 + id) {
                            alloc.engine().locked(() -> {
                                StatsInvariants.check(alloc); // a consistent view: no other thread moves meanwhile
                                return null;
                            });
                        }
                        if (rnd.nextInt(500) == 0) {
                            streams[rnd.nextInt(streams.length)].synchronize();
                        }
                        if (rnd.nextInt(1000) == 0) {
                            alloc.emptyCache();
                        }
                    }
                    for (long[] b : live) {
                        verify(alloc.segment(b[0]), b[1]);
                        liveRanges.remove(b[0]);
                        alloc.free(b[0]);
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(5, TimeUnit.MINUTES);
            }
            pool.shutdown();
            assertTrue(liveRanges.isEmpty());
            device.synchronize();
            alloc.emptyCache();
            StatsInvariants.check(alloc);
            checkSnapshot(alloc.memoryStats());
            assertEquals(0, alloc.memoryAllocated());
            assertEquals(0, alloc.memoryReserved());
            alloc.close();
        }
    }

    /** Records a new block's range; it must not overlap any live block of any thread. */
    private static void claim(ConcurrentSkipListMap<Long, Long> live, long ptr, long size) {
        assertNull(live.putIfAbsent(ptr, size), () -> "address 0x" + Long.toHexString(ptr) + " handed out twice");
        // Checked after inserting: of two overlapping blocks claimed at once, the later check sees the other.
        Map.Entry<Long, Long> below = live.lowerEntry(ptr);
        assertTrue(below == null || below.getKey() + below.getValue() <= ptr,
                () -> "0x" + Long.toHexString(ptr) + " overlaps the live block at 0x" + Long.toHexString(below.getKey()));
        Map.Entry<Long, Long> above = live.higherEntry(ptr);
        assertTrue(above == null || ptr + size <= above.getKey(),
                () -> "0x" + Long.toHexString(ptr) + "+" + size + " overlaps the live block at 0x"
                        + Long.toHexString(above.getKey()));
    }

    /** Consistency of one statistics snapshot (taken under the lock, so it is one moment of the allocator). */
    private static void checkSnapshot(MemoryStats s) {
        String[] stats = {"active", "active_bytes", "allocated_bytes", "allocation", "inactive_split",
            "inactive_split_bytes", "requested_bytes", "reserved_bytes", "segment"};
        for (String stat : stats) {
            for (String pool : new String[] {"all", "small_pool", "large_pool"}) {
                String k = stat + "." + pool + ".";
                long current = s.get(k + "current");
                assertTrue(current >= 0, k + "current >= 0");
                assertTrue(current <= s.get(k + "peak"), k + "current <= peak");
                assertEquals(s.get(k + "allocated") - s.get(k + "freed"), current, k + "current = allocated - freed");
            }
            assertEquals(s.get(stat + ".small_pool.current") + s.get(stat + ".large_pool.current"),
                    s.get(stat + ".all.current"), stat + ": all = small_pool + large_pool");
        }
        for (String pool : new String[] {"all", "small_pool", "large_pool"}) {
            long allocated = s.get("allocated_bytes." + pool + ".current");
            long active = s.get("active_bytes." + pool + ".current");
            long reserved = s.get("reserved_bytes." + pool + ".current");
            assertTrue(allocated <= active, pool + ": allocated <= active (pending frees stay active)");
            assertTrue(active + s.get("inactive_split_bytes." + pool + ".current") <= reserved,
                    pool + ": active + inactive split <= reserved");
            assertTrue(s.get("requested_bytes." + pool + ".current") <= active, pool + ": requested <= active");
            assertTrue(s.get("allocation." + pool + ".current") <= s.get("active." + pool + ".current"),
                    pool + ": allocations <= active blocks");
        }
        for (String stat : new String[] {"oversize_allocations", "oversize_segments"}) {
            assertTrue(s.get(stat + ".current") <= s.get(stat + ".peak"), stat);
            assertEquals(s.get(stat + ".allocated") - s.get(stat + ".freed"), s.get(stat + ".current"), stat);
        }
        assertTrue(s.get("oversize_allocations.current") <= s.get("allocation.large_pool.current"));
        assertTrue(s.get("oversize_segments.current") <= s.get("segment.large_pool.current"));
        assertTrue(s.get("num_device_free") <= s.get("num_device_alloc"), "no more device frees than allocs");
    }

    /** Writes the stamp every 4 KiB and into the last 8 bytes, without the two overlapping. */
    private static void stamp(MemorySegment s, long stamp) {
        for (long off = 0; off + 16 <= s.byteSize(); off += 4096) { // leaves room for the end stamp
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, off, stamp);
        }
        if (s.byteSize() >= 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, s.byteSize() - 8, stamp);
        }
    }

    private static void verify(MemorySegment s, long stamp) {
        for (long off = 0; off + 16 <= s.byteSize(); off += 4096) { // leaves room for the end stamp
            assertEquals(stamp, s.get(ValueLayout.JAVA_LONG_UNALIGNED, off), "corrupted at " + off);
        }
        if (s.byteSize() >= 8) {
            assertEquals(stamp, s.get(ValueLayout.JAVA_LONG_UNALIGNED, s.byteSize() - 8));
        }
    }
}
