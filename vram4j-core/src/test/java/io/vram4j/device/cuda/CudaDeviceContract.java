package io.vram4j.device.cuda;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.DeviceOutOfMemoryException;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.AbstractDevice;
import io.vram4j.device.Event;
import io.vram4j.device.MemInfo;
import io.vram4j.device.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the {@code cuda} device must do, whatever driver is behind it: run by {@link FakeDriverCudaDeviceTest}
 * against the test driver in every build, and by {@link GpuCudaDeviceTest} against the real driver on a GPU.
 */
abstract class CudaDeviceContract {
    static final long MiB = 1L << 20;

    /** @return a newly opened device of the driver under test */
    abstract CudaDevice open();

    /** @return operations for the allocator fuzz */
    int fuzzSteps() {
        return 1_000;
    }

    @Test
    void mallocCountsInTheDriversFreeMemory() {
        try (CudaDevice d = open()) {
            MemInfo before = d.memGetInfo();
            assertEquals(d.totalMemory(), before.total());
            long p = d.malloc(3 * MiB);
            assertNotEquals(0, p);
            assertEquals(0, p % AbstractDevice.MIN_ALIGNMENT);
            assertTrue(before.free() - d.memGetInfo().free() >= 3 * MiB, "the driver's free memory went down");
            d.free(p);
            assertEquals(before.free(), d.memGetInfo().free());
        }
    }

    @Test
    void lackOfMemoryIsZeroAndChangesNothing() {
        try (CudaDevice d = open()) {
            MemInfo before = d.memGetInfo();
            assertEquals(0, d.malloc(d.totalMemory()));
            assertEquals(before.free(), d.memGetInfo().free());
        }
    }

    @Test
    void copiesRoundTripAndFill() {
        try (CudaDevice d = open(); Arena arena = Arena.ofConfined()) {
            long n = MiB + 17;
            long p = d.malloc(n);
            long q = d.malloc(n);
            MemorySegment src = pattern(arena, n, 11);
            d.copyFromHost(src, p);
            MemorySegment back = arena.allocate(n);
            d.copyToHost(p, back);
            assertEquals(-1, src.mismatch(back));
            d.copyDeviceToDevice(p, q, n);
            MemorySegment back2 = arena.allocate(n);
            d.copyToHost(q, back2);
            assertEquals(-1, src.mismatch(back2));
            d.fill(p + 5, 100, (byte) 7);
            MemorySegment slice = arena.allocate(100);
            d.copyToHost(p + 5, slice);
            assertArrayEquals(filled(100, (byte) 7), slice.toArray(ValueLayout.JAVA_BYTE));
            assertThrows(IllegalArgumentException.class, () -> d.copyFromHost(src, p + 1));
            d.free(p);
            d.free(q);
        }
    }


    /** Arrays' (heap) segments, which the driver cannot take, copy through native memory, in several pieces. */
    @Test
    void heapSegmentsCopyBothWays() {
        try (CudaDevice d = open(); Arena arena = Arena.ofConfined()) {
            long n = CudaDevice.STAGING_BYTES * 2 + 5;
            long p = d.malloc(n);
            byte[] values = pattern(arena, n, 3).toArray(ValueLayout.JAVA_BYTE);
            d.copyFromHost(MemorySegment.ofArray(values), p);
            MemorySegment direct = arena.allocate(n);
            d.copyToHost(p, direct);
            assertArrayEquals(values, direct.toArray(ValueLayout.JAVA_BYTE));
            float[] floats = {1.5f, -2f, 3.25f};
            d.copyFromHost(MemorySegment.ofArray(floats), p + 8);
            float[] back = new float[3];
            d.copyToHost(p + 8, MemorySegment.ofArray(back));
            assertArrayEquals(floats, back);
            d.free(p);
        }
    }
    @Test
    void asynchronousCopiesOnASideStream() {
        try (CudaDevice d = open(); Arena arena = Arena.ofConfined()) {
            Stream s = d.newStream();
            assertNotEquals(0, s.handle());
            long n = 4 * MiB;
            long p = d.malloc(n);
            MemorySegment src = pattern(arena, n, 3);
            d.copyFromHostAsync(src, p, s);
            Event copied = s.recordEvent();
            copied.synchronize();
            assertTrue(copied.query());
            MemorySegment back = arena.allocate(n);
            d.fillAsync(p, 16, (byte) 0, s);
            d.copyToHostAsync(p, back, s);
            s.synchronize();
            assertTrue(s.query());
            assertArrayEquals(filled(16, (byte) 0), back.asSlice(0, 16).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(-1, src.asSlice(16).mismatch(back.asSlice(16)));
            d.free(p);
        }
    }

    @Test
    void streamsAreTheDriversAndUnknownHandlesAreRefused() {
        try (CudaDevice d = open()) {
            assertEquals(0, d.defaultStream().handle());
            Stream a = d.newStream();
            Stream b = d.newStream();
            assertNotEquals(a.handle(), b.handle());
            assertEquals(a, d.stream(a.handle()));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> d.stream(0x1234));
            assertTrue(e.getMessage().contains("no stream with handle 0x1234"), e.getMessage());
        }
    }

    @Test
    void anyThreadCanUseTheDevice() throws InterruptedException {
        try (CudaDevice d = open()) {
            AtomicLong ptr = new AtomicLong();
            Thread t1 = Thread.ofPlatform().start(() -> ptr.set(d.malloc(MiB)));
            t1.join();
            assertNotEquals(0, ptr.get());
            Thread t2 = Thread.ofPlatform().start(() -> d.free(ptr.get()));
            t2.join();
            assertThrows(IllegalArgumentException.class, () -> d.free(ptr.get()), "freed by the other thread");
        }
    }

    @Test
    void expandableSegmentsMapWholeMappings() {
        try (CudaDevice d = open(); Arena arena = Arena.ofConfined()) {
            long page = AbstractDevice.GRANULARITY;
            long base = d.reserveAddressRange(8 * page, 0);
            assertNotEquals(0, base);
            assertTrue(d.map(base, page));
            assertTrue(d.map(base + page, 2 * page));
            MemorySegment src = pattern(arena, 3 * page, 5);
            d.copyFromHost(src, base);
            MemorySegment back = arena.allocate(3 * page);
            d.copyToHost(base, back);
            assertEquals(-1, src.mismatch(back));
            long freeBefore = d.memGetInfo().free();
            IllegalArgumentException split = assertThrows(IllegalArgumentException.class,
                    () -> d.unmap(base + page, page));
            assertTrue(split.getMessage().contains("split"), split.getMessage());
            assertEquals(freeBefore, d.memGetInfo().free(), "a refused unmap changes nothing");
            d.copyToHost(base + page, back.asSlice(0, page)); // still mapped and readable
            d.unmap(base, 3 * page);
            assertEquals(freeBefore + 3 * page, d.memGetInfo().free());
            d.releaseAddressRange(base, 8 * page);
        }
    }

    @Test
    void allocatorOverTheDeviceCachesAndReportsCudaOutOfMemory() {
        try (CudaDevice d = open()) {
            CachingAllocator alloc = CachingAllocator.create(d);
            long p = alloc.malloc(3 * MiB);
            alloc.free(p);
            assertEquals(20 * MiB, alloc.memoryReserved());
            assertEquals(p, alloc.malloc(3 * MiB), "served from the cache");
            DeviceOutOfMemoryException oom = assertThrows(DeviceOutOfMemoryException.class,
                    () -> alloc.malloc(d.totalMemory()));
            assertTrue(oom.getMessage().startsWith("CUDA out of memory. Tried to allocate "), oom.getMessage());
            assertTrue(oom.getMessage().contains("\nFragmentation: the largest free cached block is"), oom.getMessage());
            assertTrue(oom.getMessage().contains("GPU " + d.index() + " has a total capacity of"), oom.getMessage());
            assertEquals(20 * MiB, alloc.memoryReserved(), "the refused call changed nothing it holds");
            alloc.free(p);
            alloc.emptyCache();
            assertEquals(0, alloc.memoryReserved());
            alloc.close();
        }
    }

    @Test
    void recordStreamDefersReuseUntilTheSideStreamsWorkIsDone() {
        try (CudaDevice d = open()) {
            CachingAllocator alloc = CachingAllocator.create(d);
            Stream side = d.newStream();
            long p = alloc.malloc(4 * MiB);
            d.fillAsync(p, 4 * MiB, (byte) 1, side); // work in flight on the side stream
            alloc.recordStream(p, side);
            alloc.free(p);
            side.synchronize();
            // once the side stream has passed the free, the block is served again (process_events at malloc)
            long again = alloc.malloc(4 * MiB);
            assertEquals(p, again);
            alloc.free(again);
            alloc.close();
        }
    }

    /** Threads allocate, fill through the device and verify through copies; no block is ever shared. */
    @ParameterizedTest(name = "conf '{0}'")
    @ValueSource(strings = {"", "expandable_segments:True"})
    void allocatorUnderConcurrentThreads(String conf) throws InterruptedException {
        try (CudaDevice d = open()) {
            CachingAllocator alloc = CachingAllocator.create(d, AllocatorConfig.DEFAULT.parse(conf));
            java.util.concurrent.ConcurrentLinkedQueue<Throwable> failures = new java.util.concurrent.ConcurrentLinkedQueue<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                final byte mark = (byte) (t + 1);
                threads.add(Thread.ofPlatform().start(() -> {
                    Random rnd = new Random(mark);
                    List<long[]> mine = new ArrayList<>();
                    try (Arena arena = Arena.ofConfined()) {
                        MemorySegment back = arena.allocate(4 * MiB);
                        MemorySegment want = arena.allocate(4 * MiB).fill(mark);
                        for (int i = 0; i < fuzzSteps(); i++) {
                            if (mine.isEmpty() || rnd.nextInt(3) > 0 && mine.size() < 16) {
                                long size = 1 + rnd.nextLong(4 * MiB);
                                long p = alloc.malloc(size);
                                d.fill(p, size, mark);
                                mine.add(new long[] {p, size});
                            } else {
                                long[] b = mine.remove(rnd.nextInt(mine.size()));
                                d.copyToHost(b[0], back.asSlice(0, b[1]));
                                if (back.asSlice(0, b[1]).mismatch(want.asSlice(0, b[1])) != -1) {
                                    throw new AssertionError("a block of thread " + mark + " was overwritten");
                                }
                                alloc.free(b[0]);
                            }
                        }
                        for (long[] b : mine) {
                            alloc.free(b[0]);
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            assertTrue(failures.isEmpty(), () -> failures.peek().toString());
            assertEquals(0, alloc.memoryAllocated());
            alloc.emptyCache();
            assertEquals(0, alloc.memoryReserved());
            alloc.close();
        }
    }

    /** Upstream's allocator fuzz, each block filled and verified through real copies. */
    @ParameterizedTest(name = "conf '{0}'")
    @ValueSource(strings = {"", "expandable_segments:True", "max_split_size_mb:40,roundup_power2_divisions:4"})
    void allocatorFuzzWithRealCopies(String conf) {
        Random rnd = new Random(123);
        try (CudaDevice d = open(); Arena arena = Arena.ofConfined()) {
            CachingAllocator alloc = CachingAllocator.create(d, AllocatorConfig.DEFAULT.parse(conf));
            List<long[]> live = new ArrayList<>(); // {ptr, bytes, value}
            TreeMap<Long, Long> ranges = new TreeMap<>();
            long cap = Math.min(d.totalMemory() / 4, 256 * MiB);
            long liveBytes = 0;
            int value = 1;
            MemorySegment buffer = arena.allocate(24 * MiB);
            MemorySegment expected = arena.allocate(24 * MiB);
            for (int step = 0; step < fuzzSteps(); step++) {
                double r = rnd.nextDouble() * (live.isEmpty() ? 1.1 : 2.1);
                if (live.isEmpty() && r >= 1.0) {
                    r = 2.0;
                }
                if (r < 1.0) {
                    long bytes = rnd.nextBoolean() ? 1 + rnd.nextLong(MiB) : 2 * MiB + rnd.nextLong(18 * MiB);
                    if (liveBytes + bytes > cap) {
                        continue;
                    }
                    long ptr = alloc.malloc(bytes);
                    Map.Entry<Long, Long> below = ranges.floorEntry(ptr);
                    assertTrue(below == null || below.getKey() + below.getValue() <= ptr, "overlaps a live block");
                    Long above = ranges.ceilingKey(ptr);
                    assertTrue(above == null || ptr + bytes <= above, "overlaps a live block");
                    ranges.put(ptr, bytes);
                    d.fill(ptr, bytes, (byte) value);
                    live.add(new long[] {ptr, bytes, value});
                    liveBytes += bytes;
                    value = value % 250 + 1;
                } else if (r < 2.0) {
                    long[] b = live.remove(rnd.nextInt(live.size()));
                    MemorySegment view = buffer.asSlice(0, b[1]);
                    d.copyToHost(b[0], view);
                    MemorySegment want = expected.asSlice(0, b[1]).fill((byte) b[2]);
                    assertEquals(-1, view.mismatch(want), "block at 0x" + Long.toHexString(b[0]) + " was overwritten");
                    ranges.remove(b[0]);
                    alloc.free(b[0]);
                    liveBytes -= b[1];
                } else {
                    alloc.emptyCache();
                }
            }
            for (long[] b : live) {
                alloc.free(b[0]);
            }
            alloc.emptyCache();
            assertEquals(0, alloc.memoryReserved());
            alloc.close();
        }
    }

    static MemorySegment pattern(Arena arena, long n, int seed) {
        MemorySegment s = arena.allocate(n);
        for (long i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
        }
        return s;
    }

    private static byte[] filled(int n, byte v) {
        byte[] b = new byte[n];
        java.util.Arrays.fill(b, v);
        return b;
    }

}
