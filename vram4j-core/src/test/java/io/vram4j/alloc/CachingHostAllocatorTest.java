package io.vram4j.alloc;

import io.vram4j.device.Stream;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SortedMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** PyTorch's caching host allocator rules on pageable memory and counting-model streams. */
class CachingHostAllocatorTest {

    /** A pageable source that counts its calls and can be told to run out. */
    static final class CountingSource implements HostMemorySource {
        final HostMemorySource inner = HostMemorySource.pageable();
        final AtomicInteger allocs = new AtomicInteger();
        final AtomicInteger frees = new AtomicInteger();
        volatile boolean exhausted;

        @Override
        public MemorySegment allocate(long size) {
            if (exhausted) {
                return MemorySegment.NULL;
            }
            allocs.incrementAndGet();
            return inner.allocate(size);
        }

        @Override
        public void free(MemorySegment memory) {
            frees.incrementAndGet();
            inner.free(memory);
        }

        @Override
        public String name() {
            return "counting";
        }
    }

    @Test
    void roundsToAPowerOfTwoAndReusesTheFreedBlock() {
        CountingSource src = new CountingSource();
        try (CachingHostAllocator a = CachingHostAllocator.create(src)) {
            PinnedBuffer b = a.allocate(1000);
            assertEquals(1000, b.segment().byteSize());
            assertEquals(1024, b.blockSize());
            long address = b.segment().address();
            a.free(b);
            PinnedBuffer again = a.allocate(600); // also rounds to 1024: same free list
            assertEquals(address, again.segment().address(), "test_caching_pinned_memory: reused at the same address");
            assertEquals(1, src.allocs.get());
            PinnedBuffer other = a.allocate(1025); // 2048: a new block
            assertEquals(2048, other.blockSize());
            assertEquals(2, src.allocs.get());
            SortedMap<String, Long> s = a.hostMemoryStats();
            assertEquals(2, s.get("allocations.current"));
            assertEquals(1024 + 2048, s.get("allocated_bytes.current"));
            assertEquals(2, s.get("active_requests.current"));
            assertEquals(3, s.get("active_requests.allocated"), "three hand-outs");
            assertEquals(2, s.get("num_host_alloc"));
            assertEquals(0, s.get("num_host_free"));
            assertEquals(2, s.get("host_alloc_time.count"));
            a.free(again);
            a.free(other);
        }
        assertEquals(2, src.frees.get(), "close gives everything back");
    }

    @Test
    void aBlockUsedByAStreamWaitsForItsEvent() {
        Stream copyStream = new Stream(0, 7);
        try (CachingHostAllocator a = CachingHostAllocator.create(new CountingSource())) {
            PinnedBuffer b = a.allocate(4096);
            assertTrue(a.recordEvent(b, copyStream));
            a.free(b);
            assertEquals(1, a.hostMemoryStats().get("active_requests.current"), "still in use by the stream");
            PinnedBuffer c = a.allocate(4096);
            assertNotEquals(b.segment().address(), c.segment().address(), "the copy may still be reading it");
            copyStream.synchronize();
            PinnedBuffer d = a.allocate(4096);
            assertEquals(b.segment().address(), d.segment().address(), "reusable once the stream passed the free");
            a.free(c);
            a.free(d);
            assertEquals(0, a.hostMemoryStats().get("active_requests.current"));
            assertEquals(0, a.hostMemoryStats().get("active_bytes.current"));
        }
    }

    @Test
    void emptyCacheReleasesOnlyFreeBlocks() {
        CountingSource src = new CountingSource();
        try (CachingHostAllocator a = CachingHostAllocator.create(src)) {
            PinnedBuffer kept = a.allocate(1 << 20);
            a.free(a.allocate(1 << 16));
            a.free(a.allocate(100));
            a.emptyCache();
            assertEquals(2, src.frees.get());
            SortedMap<String, Long> s = a.hostMemoryStats();
            assertEquals(1, s.get("allocations.current"));
            assertEquals(1 << 20, s.get("allocated_bytes.current"));
            assertEquals(3, s.get("allocations.peak"));
            assertEquals(2, s.get("num_host_free"));
            kept.segment().fill((byte) 3); // still usable
            a.resetPeakHostMemoryStats();
            assertEquals(1, a.hostMemoryStats().get("allocations.peak"));
            a.resetAccumulatedHostMemoryStats();
            assertEquals(0, a.hostMemoryStats().get("num_host_alloc"));
            assertEquals(0, a.hostMemoryStats().get("host_alloc_time.count"));
            a.free(kept);
        }
    }

    @Test
    void refusedCallsChangeNothing() {
        CountingSource src = new CountingSource();
        try (CachingHostAllocator a = CachingHostAllocator.create(src)) {
            PinnedBuffer b = a.allocate(64);
            a.free(b);
            Map<String, Long> before = a.hostMemoryStats();
            assertThrows(IllegalArgumentException.class, () -> a.free(b), "double free");
            assertThrows(IllegalArgumentException.class, () -> a.recordEvent(b, new Stream(0, 0)));
            assertThrows(IllegalArgumentException.class, () -> a.allocate(0));
            assertThrows(IllegalArgumentException.class, () -> a.allocate(-5));
            src.exhausted = true;
            OutOfMemoryError oom = assertThrows(OutOfMemoryError.class, () -> a.allocate(1 << 20));
            assertTrue(oom.getMessage().contains("tried to allocate 1048576 bytes"), oom.getMessage());
            Map<String, Long> after = a.hostMemoryStats();
            after.remove("host_alloc_time.total");
            before.remove("host_alloc_time.total");
            assertEquals(before, after);
            PinnedBuffer reused = a.allocate(64); // b's block, handed out again
            assertEquals(b.segment().address(), reused.segment().address());
            assertThrows(IllegalArgumentException.class, () -> a.free(b), "a stale buffer must not free its block's new owner");
            assertThrows(IllegalArgumentException.class, () -> a.recordEvent(b, new Stream(0, 0)));
            assertEquals(1, a.hostMemoryStats().get("active_requests.current"), "the new owner still holds it");
            a.free(reused);
            try (CachingHostAllocator other = CachingHostAllocator.create(new CountingSource())) {
                src.exhausted = false;
                PinnedBuffer mine = a.allocate(64);
                assertThrows(IllegalArgumentException.class, () -> other.free(mine), "another allocator's buffer");
                a.free(mine);
            }
        }
        CachingHostAllocator closed = CachingHostAllocator.create(src);
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.allocate(8));
    }

    @Test
    void threadsNeverShareABlockAndTheStatsAddUp() throws InterruptedException {
        CountingSource src = new CountingSource();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        try (CachingHostAllocator a = CachingHostAllocator.create(src)) {
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                final byte mark = (byte) (t + 1);
                threads.add(Thread.ofPlatform().start(() -> {
                    Random rnd = new Random(mark);
                    List<PinnedBuffer> mine = new ArrayList<>();
                    try {
                        for (int i = 0; i < 3_000; i++) {
                            if (mine.isEmpty() || rnd.nextBoolean()) {
                                PinnedBuffer b = a.allocate(1 + rnd.nextInt(1 << 16));
                                b.segment().fill(mark);
                                mine.add(b);
                            } else {
                                PinnedBuffer b = mine.remove(rnd.nextInt(mine.size()));
                                MemorySegment seg = b.segment();
                                for (long j = 0; j < seg.byteSize(); j += 511) {
                                    if (seg.get(ValueLayout.JAVA_BYTE, j) != mark) {
                                        throw new AssertionError("block shared with another thread");
                                    }
                                }
                                a.free(b);
                            }
                        }
                        mine.forEach(a::free);
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            assertTrue(failures.isEmpty(), () -> failures.peek().toString());
            SortedMap<String, Long> s = a.hostMemoryStats();
            assertEquals(0, s.get("active_requests.current"));
            assertEquals(0, s.get("active_bytes.current"));
            assertEquals(src.allocs.get(), s.get("allocations.current"));
            assertEquals(s.get("active_requests.allocated"), s.get("active_requests.freed"));
        }
        assertEquals(src.allocs.get(), src.frees.get());
    }
}
