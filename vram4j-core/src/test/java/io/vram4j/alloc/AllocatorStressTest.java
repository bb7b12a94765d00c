package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Several threads allocate and free random sizes on random streams of one host device; every block is
 * stamped with its owner's value and checked before it is freed, and the statistics agree with the state at
 * the end.
 */
class AllocatorStressTest {

    @ParameterizedTest(name = "conf '{0}'")
    @ValueSource(strings = {"", "expandable_segments:True", "max_split_size_mb:40,roundup_power2_divisions:4"})
    void concurrentAllocAndFree(String conf) throws Exception {
        try (DeviceBackend device = Devices.open("host:2GiB")) {
            CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse(conf));
            Stream[] streams = {device.defaultStream(), device.newStream(), device.newStream()};
            int threads = Integer.getInteger("stress.threads", 4);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final int id = t;
                futures.add(pool.submit(() -> {
                    Random rnd = new Random(1000 + id);
                    List<long[]> live = new ArrayList<>();
                    for (int i = 0; i < 4000; i++) {
                        if (live.size() < 32 && (live.isEmpty() || rnd.nextBoolean())) {
                            long size = rnd.nextInt(4) == 0 ? 1 + rnd.nextLong(24L << 20) : 1 + rnd.nextLong(1 << 20);
                            Stream s = streams[rnd.nextInt(streams.length)];
                            long ptr = alloc.malloc(size, s);
                            long stamp = ((long) id << 48) | i;
                            stamp(alloc.segment(ptr), stamp);
                            if (rnd.nextInt(8) == 0) {
                                alloc.recordStream(ptr, streams[rnd.nextInt(streams.length)]);
                            }
                            live.add(new long[] {ptr, stamp});
                        } else {
                            long[] b = live.remove(rnd.nextInt(live.size()));
                            verify(alloc.segment(b[0]), b[1]);
                            alloc.free(b[0]);
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
                        alloc.free(b[0]);
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(5, TimeUnit.MINUTES);
            }
            pool.shutdown();
            device.synchronize();
            alloc.emptyCache();
            StatsInvariants.check(alloc);
            assertEquals(0, alloc.memoryAllocated());
            assertEquals(0, alloc.memoryReserved());
            alloc.close();
        }
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
