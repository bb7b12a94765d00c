package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@link CachingAllocator#close()} while other threads allocate and free: afterwards the device has every byte
 * back, and every call, from any thread, throws the closed exception. The {@code sim} device is used because
 * threads still holding addresses after close must not touch real memory.
 */
class CloseRaceTest {
    private static final String CLOSED = "is closed";

    @ParameterizedTest(name = "conf '{0}'")
    @ValueSource(strings = {"", "release_lock_on_cudamalloc:True", "expandable_segments:True"})
    void closeWhileOtherThreadsAllocate(String conf) throws Exception {
        for (int r = 0; r < 20; r++) {
            final int round = r;
            try (DeviceBackend device = Devices.open("sim:4GiB")) {
                long total = device.memGetInfo().total();
                CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse(conf));
                Stream side = device.newStream();
                int threads = 3;
                ExecutorService pool = Executors.newFixedThreadPool(threads);
                CountDownLatch started = new CountDownLatch(threads);
                AtomicLong callsAfterClose = new AtomicLong();
                List<Future<?>> futures = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int id = t;
                    futures.add(pool.submit(() -> {
                        Random rnd = new Random(round * 31L + id);
                        List<Long> live = new ArrayList<>();
                        started.countDown();
                        try {
                            while (true) {
                                if (live.size() < 16 && (live.isEmpty() || rnd.nextBoolean())) {
                                    // large sizes make new segments (device mallocs) frequent
                                    long size = rnd.nextInt(3) == 0 ? 1 + rnd.nextLong(1 << 20) : (1 + rnd.nextInt(40)) << 20;
                                    long p = alloc.malloc(size, rnd.nextBoolean() ? side : device.defaultStream());
                                    live.add(p);
                                    if (rnd.nextInt(4) == 0) {
                                        alloc.recordStream(p, side);
                                    }
                                } else {
                                    alloc.free(live.remove(rnd.nextInt(live.size())));
                                }
                                if (rnd.nextInt(50) == 0) {
                                    side.synchronize();
                                    alloc.emptyCache();
                                }
                            }
                        } catch (IllegalStateException e) {
                            assertTrue(e.getMessage().contains(CLOSED), e.getMessage());
                        }
                        // Every later call from this thread is refused too.
                        for (long p : live) {
                            IllegalStateException e = assertThrows(IllegalStateException.class, () -> alloc.free(p));
                            assertTrue(e.getMessage().contains(CLOSED), e.getMessage());
                            callsAfterClose.incrementAndGet();
                        }
                        assertThrows(IllegalStateException.class, () -> alloc.malloc(4096));
                        return null;
                    }));
                }
                assertTrue(started.await(1, TimeUnit.MINUTES));
                Thread.sleep(round % 5); // close at varying points of the workers' progress
                try {
                    alloc.close();
                } catch (IllegalStateException leaks) {
                    assertTrue(leaks.getMessage().contains("live allocation"), leaks.getMessage());
                }
                for (Future<?> f : futures) {
                    f.get(1, TimeUnit.MINUTES);
                }
                pool.shutdown();
                assertEquals(total, device.memGetInfo().free(), "close (round " + round + ") returned every byte");
                alloc.close(); // a second close does nothing
                assertClosed(alloc, side);
            }
        }
    }

    private static void assertClosed(CachingAllocator alloc, Stream side) {
        List<Runnable> calls = List.of(
                () -> alloc.malloc(1),
                () -> alloc.malloc(100 << 20, side),
                () -> alloc.free(0x1000),
                () -> alloc.recordStream(0x1000, side),
                () -> alloc.segment(0x1000),
                alloc::emptyCache,
                alloc::memoryStats,
                alloc::memoryAllocated,
                alloc::resetPeakMemoryStats,
                alloc::resetAccumulatedMemoryStats,
                () -> alloc.setSettings("max_split_size_mb:40"),
                () -> alloc.setPerProcessMemoryFraction(0.5),
                alloc::segments,
                alloc::snapshot);
        for (Runnable call : calls) {
            try {
                call.run();
                fail("a call after close succeeded");
            } catch (IllegalStateException e) {
                assertTrue(e.getMessage().contains(CLOSED), e.getMessage());
            }
        }
    }
}
