package io.vram4j.device;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The contract every {@link DeviceBackend} meets; subclasses run it against one backend.
 */
public abstract class AbstractDeviceBackendTest {
    protected static final long MIB = ByteSize.MIB;
    protected static final long G = 2 * MIB;
    protected static final long CAPACITY = 64 * MIB;

    protected DeviceBackend device;

    /** @return a new device of the backend under test with the given capacity */
    protected abstract DeviceBackend open(long capacity);

    /** @return the backend's {@link DeviceBackend#type()} */
    protected abstract String expectedType();

    /** Marks a live segment so that {@link #checkMark} can tell whether anyone else wrote over it. */
    protected void mark(DeviceBackend d, long address, long size, long tag) {
    }

    /** Checks what {@link #mark} wrote. */
    protected void checkMark(DeviceBackend d, long address, long size, long tag) {
    }

    @BeforeEach
    void openDevice() {
        device = open(CAPACITY);
    }

    @AfterEach
    void closeDevice() {
        device.close();
    }

    @Test
    void describesItself() {
        assertEquals(expectedType(), device.type());
        assertEquals(0, device.index());
        assertEquals(CAPACITY, device.totalMemory());
        assertEquals(2 * MIB, device.granularity());
        assertEquals(new MemInfo(CAPACITY, CAPACITY), device.memGetInfo());
        assertTrue(device.description().startsWith(expectedType()), device.description());
    }

    @Test
    void mallocReturnsAlignedDisjointSegments() {
        long[] sizes = {1, 100, 511, 512, 513, 4096, 65536, G - 1, G, G + 1, 3 * MIB, 10 * MIB};
        TreeMap<Long, Long> segments = new TreeMap<>();
        long total = 0;
        for (long size : sizes) {
            long address = device.malloc(size);
            assertNotEquals(0, address, "malloc(" + size + ")");
            assertEquals(0, address % 512, "address " + Long.toHexString(address) + " of size " + size);
            assertEquals(null, segments.put(address, size), "address handed out twice");
            total += size;
        }
        long previousEnd = Long.MIN_VALUE;
        for (Map.Entry<Long, Long> e : segments.entrySet()) {
            assertTrue(e.getKey() >= previousEnd, "segments overlap at 0x" + Long.toHexString(e.getKey()));
            previousEnd = e.getKey() + e.getValue();
        }
        assertEquals(new MemInfo(CAPACITY - total, CAPACITY), device.memGetInfo());
        for (long address : segments.keySet()) {
            device.free(address);
        }
        assertEquals(new MemInfo(CAPACITY, CAPACITY), device.memGetInfo());
    }

    @Test
    void mallocRejectsSizesThatAreNotPositive() {
        assertThrows(IllegalArgumentException.class, () -> device.malloc(0));
        assertThrows(IllegalArgumentException.class, () -> device.malloc(-1));
        assertThrows(IllegalArgumentException.class, () -> device.malloc(-1, 0));
        assertEquals(CAPACITY, device.memGetInfo().free());
    }

    @Test
    void exhaustionReturnsZeroAndFreeingRestoresRoom() {
        long a = device.malloc(40 * MIB);
        long b = device.malloc(24 * MIB);
        assertNotEquals(0, a);
        assertNotEquals(0, b);
        assertEquals(new MemInfo(0, CAPACITY), device.memGetInfo());
        assertEquals(0, device.malloc(1));
        assertEquals(0, device.malloc(512, a));
        assertEquals(new MemInfo(0, CAPACITY), device.memGetInfo());

        device.free(a);
        assertEquals(40 * MIB, device.memGetInfo().free());
        assertEquals(0, device.malloc(40 * MIB + 1));
        assertEquals(40 * MIB, device.memGetInfo().free());
        long c = device.malloc(40 * MIB);
        assertNotEquals(0, c);
        assertEquals(0, device.memGetInfo().free());
    }

    @Test
    void theWholeCapacityCanBeAllocatedButNotOneByteMore() {
        assertEquals(0, device.malloc(CAPACITY + 1));
        assertEquals(CAPACITY, device.memGetInfo().free());
        long all = device.malloc(CAPACITY);
        assertNotEquals(0, all);
        assertEquals(0, device.memGetInfo().free());
        device.free(all);
        assertEquals(CAPACITY, device.memGetInfo().free());
    }

    @Test
    void freeOfAnUnknownAddressThrowsAndChangesNothing() {
        long a = device.malloc(4 * MIB);
        MemInfo before = device.memGetInfo();
        IllegalArgumentException inside = assertThrows(IllegalArgumentException.class, () -> device.free(a + 512));
        assertTrue(inside.getMessage().contains(Long.toHexString(a + 512)), inside.getMessage());
        assertTrue(inside.getMessage().contains("inside the segment at 0x" + Long.toHexString(a)),
                inside.getMessage());
        assertThrows(IllegalArgumentException.class, () -> device.free(0));
        assertThrows(IllegalArgumentException.class, () -> device.free(12345));
        assertEquals(before, device.memGetInfo());

        device.free(a);
        assertEquals(CAPACITY, device.memGetInfo().free());
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class, () -> device.free(a));
        assertTrue(twice.getMessage().contains("not the base of a live segment"), twice.getMessage());
        assertEquals(CAPACITY, device.memGetInfo().free());
    }

    @Test
    void reserveMapAndUnmapAccountOnlyMappedBytes() {
        long base = device.reserveAddressRange(16 * MIB, 0);
        assertNotEquals(0, base);
        assertEquals(0, base % G, "reservations are aligned to the granularity");
        assertEquals(CAPACITY, device.memGetInfo().free(), "reserving costs no capacity");

        assertTrue(device.map(base, 4 * MIB));
        assertEquals(CAPACITY - 4 * MIB, device.memGetInfo().free());
        assertTrue(device.map(base + 4 * MIB, G));
        assertEquals(CAPACITY - 6 * MIB, device.memGetInfo().free());

        device.unmap(base + G, 4 * MIB); // spans both maps
        assertEquals(CAPACITY - G, device.memGetInfo().free());
        device.unmap(base, G);
        assertEquals(CAPACITY, device.memGetInfo().free());

        device.releaseAddressRange(base, 16 * MIB);
        assertThrows(IllegalArgumentException.class, () -> device.releaseAddressRange(base, 16 * MIB));
        assertEquals(CAPACITY, device.memGetInfo().free());
    }

    @Test
    void reservationsDoNotOverlapSegmentsOrEachOther() {
        long a = device.malloc(3 * MIB);
        long r1 = device.reserveAddressRange(8 * MIB, 0);
        long r2 = device.reserveAddressRange(8 * MIB, 0);
        long b = device.malloc(G);
        long[][] ranges = {{a, 3 * MIB}, {r1, 8 * MIB}, {r2, 8 * MIB}, {b, G}};
        for (int i = 0; i < ranges.length; i++) {
            for (int j = i + 1; j < ranges.length; j++) {
                boolean disjoint = ranges[i][0] + ranges[i][1] <= ranges[j][0]
                        || ranges[j][0] + ranges[j][1] <= ranges[i][0];
                assertTrue(disjoint, "ranges " + i + " and " + j + " overlap");
            }
        }
    }

    @Test
    void mapAndUnmapValidateTheirRanges() {
        long base = device.reserveAddressRange(8 * MIB, 0);
        assertThrows(IllegalArgumentException.class, () -> device.reserveAddressRange(G + 1, 0));
        assertThrows(IllegalArgumentException.class, () -> device.reserveAddressRange(0, 0));
        assertThrows(IllegalArgumentException.class, () -> device.map(base + 512, G), "misaligned address");
        assertThrows(IllegalArgumentException.class, () -> device.map(base, G + 512), "size not granular");
        assertThrows(IllegalArgumentException.class, () -> device.map(base + 8 * MIB, G), "past the reservation");
        assertThrows(IllegalArgumentException.class, () -> device.map(base + 6 * MIB, 4 * MIB), "across its end");
        assertThrows(IllegalArgumentException.class, () -> device.map(base - G, 4 * MIB), "across its start");

        assertTrue(device.map(base, 4 * MIB));
        IllegalArgumentException overlap = assertThrows(IllegalArgumentException.class,
                () -> device.map(base + G, G));
        assertTrue(overlap.getMessage().contains("already mapped"), overlap.getMessage());
        assertThrows(IllegalArgumentException.class, () -> device.unmap(base + 4 * MIB, G), "not mapped");
        assertThrows(IllegalArgumentException.class, () -> device.unmap(base + G, 4 * MIB), "partly mapped");
        IllegalStateException stillMapped = assertThrows(IllegalStateException.class,
                () -> device.releaseAddressRange(base, 8 * MIB));
        assertTrue(stillMapped.getMessage().contains("still mapped"), stillMapped.getMessage());
        assertThrows(IllegalArgumentException.class, () -> device.releaseAddressRange(base, 4 * MIB), "wrong size");
        assertThrows(IllegalArgumentException.class, () -> device.releaseAddressRange(base + G, 6 * MIB));
        assertEquals(CAPACITY - 4 * MIB, device.memGetInfo().free(), "failed calls change nothing");

        device.unmap(base, 4 * MIB);
        device.releaseAddressRange(base, 8 * MIB);
        assertEquals(CAPACITY, device.memGetInfo().free());
    }

    @Test
    void mapFailsWithoutRoomAndMallocAndMapShareTheCapacity() {
        long base = device.reserveAddressRange(CAPACITY + 16 * MIB, 0);
        assertNotEquals(0, base);
        assertTrue(device.map(base, CAPACITY - G));
        long a = device.malloc(G);
        assertNotEquals(0, a);
        assertEquals(0, device.memGetInfo().free());

        long next = base + CAPACITY - G;
        assertFalse(device.map(next, G));
        assertEquals(0, device.memGetInfo().free());
        assertThrows(IllegalArgumentException.class, () -> device.unmap(next, G), "a failed map maps nothing");
        assertEquals(0, device.malloc(1));

        device.free(a);
        assertTrue(device.map(next, G));
        assertEquals(0, device.memGetInfo().free());
        device.unmap(base, CAPACITY);
        assertEquals(CAPACITY, device.memGetInfo().free());
    }

    @Test
    void streamsAreRegisteredByHandle() {
        Stream defaultStream = device.defaultStream();
        assertEquals(0, defaultStream.handle());
        assertTrue(defaultStream.isDefault());
        assertSame(defaultStream, device.defaultStream());
        assertSame(defaultStream, device.stream(0));

        Stream s1 = device.newStream();
        Stream s2 = device.newStream();
        assertNotEquals(0, s1.handle());
        assertNotEquals(s1.handle(), s2.handle());
        assertFalse(s1.isDefault());
        assertSame(s1, device.stream(s1.handle()));

        long recorded = 0x55d0_1234_5670L;
        Stream r = device.stream(recorded);
        assertEquals(recorded, r.handle());
        assertSame(r, device.stream(recorded));
        assertEquals(device.index(), r.deviceIndex());
    }

    @Test
    void newStreamsSkipHandlesAlreadyInUse() {
        try (DeviceBackend d = open(CAPACITY)) {
            Stream one = d.stream(1);
            Stream two = d.stream(2);
            Stream fresh = d.newStream();
            assertFalse(fresh.handle() == 0 || fresh.handle() == 1 || fresh.handle() == 2,
                    "fresh handle " + fresh.handle());
            assertSame(one, d.stream(1));
            assertSame(two, d.stream(2));
        }
    }

    @Test
    void eventsStayPendingUntilTheirStreamIsSynchronized() {
        Stream s = device.newStream();
        Stream other = device.newStream();
        Event e = s.recordEvent();
        Event onOther = other.recordEvent();
        assertSame(s, e.stream());
        assertFalse(e.query());
        assertFalse(s.query());

        s.synchronize();
        assertTrue(e.query());
        assertTrue(s.query());
        assertFalse(onOther.query(), "synchronizing one stream leaves the others pending");

        Event later = s.recordEvent();
        assertFalse(later.query());
        assertTrue(e.query());
        later.synchronize();
        assertTrue(later.query());
    }

    @Test
    void waitingForAnEventOfAnotherStreamCompletesItHereWhereNothingRunsAsynchronously() {
        Stream side = device.newStream();
        Event copied = side.recordEvent();
        Event after = side.recordEvent();
        device.defaultStream().waitEvent(copied);
        assertTrue(copied.query(), "the host waited for it");
        assertTrue(device.defaultStream().query(), "nothing was queued on the waiting stream");
        Event later = side.recordEvent();
        device.defaultStream().waitEvent(copied); // complete already: nothing to do
        assertFalse(later.query(), "work recorded after the wait is untouched");
        assertTrue(after.query(), "the counting model completes what the stream had recorded when it was waited on");
    }

    @Test
    void deviceSynchronizeCompletesEveryStream() {
        List<Event> events = new ArrayList<>();
        events.add(device.defaultStream().recordEvent());
        events.add(device.newStream().recordEvent());
        events.add(device.newStream().recordEvent());
        events.add(device.stream(0x7f00_dead_b000L).recordEvent());
        for (Event e : events) {
            assertFalse(e.query());
        }
        device.synchronize();
        for (Event e : events) {
            assertTrue(e.query(), "event on " + e.stream());
        }
    }

    @Test
    void closeReleasesEverythingAndLaterCallsFail() {
        DeviceBackend d = open(CAPACITY);
        long a = d.malloc(3 * MIB);
        long base = d.reserveAddressRange(8 * MIB, 0);
        assertTrue(d.map(base, 4 * MIB));
        assertEquals(CAPACITY - 7 * MIB, d.memGetInfo().free());

        d.close();
        assertEquals(new MemInfo(CAPACITY, CAPACITY), d.memGetInfo());
        assertThrows(IllegalStateException.class, () -> d.malloc(1));
        assertThrows(IllegalStateException.class, () -> d.free(a));
        assertThrows(IllegalStateException.class, () -> d.map(base + 4 * MIB, G));
        assertThrows(IllegalStateException.class, () -> d.reserveAddressRange(G, 0));
        d.close(); // idempotent
    }

    @Test
    void concurrentMallocFreeAndMapKeepAccountingConsistent() throws Exception {
        int threads = 4;
        int iterations = 1500;
        long capacity = 32 * MIB; // the workers want about 50 MiB at a time, so some calls must fail
        ConcurrentSkipListMap<Long, Long> live = new ConcurrentSkipListMap<>();
        ExecutorService pool = Executors.newFixedThreadPool(threads + 1);
        try (DeviceBackend d = open(capacity)) {
            List<Future<Integer>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long seed = 1000 + t;
                results.add(pool.submit(() -> mallocFreeWorker(d, seed, iterations, live)));
            }
            results.add(pool.submit(() -> mapWorker(d, iterations / 3)));
            int failures = 0;
            for (Future<Integer> f : results) {
                failures += f.get(2, TimeUnit.MINUTES);
            }
            assertTrue(failures > 0, "the workload should have hit the capacity at times");
            assertTrue(live.isEmpty());
            assertEquals(new MemInfo(capacity, capacity), d.memGetInfo());
        } finally {
            pool.shutdownNow();
        }
    }

    /** Allocates and frees random sizes; checks that live segments never overlap. @return failed mallocs */
    private int mallocFreeWorker(DeviceBackend device, long seed, int iterations, ConcurrentSkipListMap<Long, Long> live) {
        SplittableRandom random = new SplittableRandom(seed);
        List<long[]> mine = new ArrayList<>();
        int failures = 0;
        for (int i = 0; i < iterations; i++) {
            if (mine.size() < 12 && (mine.isEmpty() || random.nextInt(3) > 0)) {
                long size = random.nextInt(8) == 0 ? G * (1 + random.nextInt(4)) : 1 + random.nextInt((int) MIB);
                long address = device.malloc(size);
                if (address == 0) {
                    failures++;
                    continue;
                }
                Map.Entry<Long, Long> below = live.floorEntry(address);
                Map.Entry<Long, Long> above = live.ceilingEntry(address);
                if (below != null && below.getKey() + below.getValue() > address
                        || above != null && above.getKey() < address + size) {
                    fail("segment 0x" + Long.toHexString(address) + " (" + size + " bytes) overlaps a live one");
                }
                live.put(address, size);
                mark(device, address, size, seed * 1_000_003 + i);
                mine.add(new long[] {address, size, seed * 1_000_003 + i});
            } else {
                long[] victim = mine.remove(random.nextInt(mine.size()));
                checkMark(device, victim[0], victim[1], victim[2]);
                live.remove(victim[0]);
                device.free(victim[0]);
            }
            MemInfo info = device.memGetInfo();
            assertTrue(info.free() >= 0 && info.free() <= info.total(), info.toString());
        }
        for (long[] s : mine) {
            checkMark(device, s[0], s[1], s[2]);
            live.remove(s[0]);
            device.free(s[0]);
        }
        return failures;
    }

    /** Reserves, maps, unmaps and releases ranges alongside the mallocs. @return failed maps */
    private int mapWorker(DeviceBackend device, int iterations) {
        int failures = 0;
        for (int i = 0; i < iterations; i++) {
            long base = device.reserveAddressRange(8 * MIB, 0);
            assertNotEquals(0, base);
            int mapped = 0;
            for (int page = 0; page < 4; page++) {
                if (!device.map(base + page * G, G)) {
                    failures++;
                    break;
                }
                mapped++;
            }
            for (int page = mapped - 1; page >= 0; page--) {
                device.unmap(base + page * G, G);
            }
            device.releaseAddressRange(base, 8 * MIB);
        }
        return failures;
    }
}
