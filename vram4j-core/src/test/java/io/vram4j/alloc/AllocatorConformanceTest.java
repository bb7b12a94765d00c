package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.stats.MemoryStats;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Conformance with PyTorch's caching allocator: the concrete numbers of spec section 2.3 and the upstream
 * tests of section 11 that apply without CUDA graphs.
 */
public class AllocatorConformanceTest {
    private static final long MiB = 1L << 20;
    private final List<AutoCloseable> open = new ArrayList<>();

    /**
     * @return the device of the scenarios that need a large device whatever its size: an 80 GiB {@code sim} here,
     *     a real GPU in {@link io.vram4j.device.cuda.GpuAllocatorConformanceTest}
     */
    protected String largeDevice() {
        return "sim:80GiB";
    }

    private CachingAllocator allocator(String device, String conf) {
        DeviceBackend d = Devices.open(device);
        CachingAllocator a = CachingAllocator.create(d, AllocatorConfig.DEFAULT.parse(conf));
        open.add(d);
        open.add(() -> {
            try {
                a.close();
            } catch (IllegalStateException ignored) {
                // tests may leave blocks live on purpose
            }
        });
        return a;
    }

    private CachingAllocator allocator() {
        return allocator(largeDevice(), "");
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    // ---- spec 2.3: worked allocation table ----

    @ParameterizedTest(name = "request {0}")
    @CsvSource({
        // request, rounded, block handed out, small?, new segment, split?, remainder
        "1, 512, 512, true, 2097152, true, 2096640",
        "513, 1024, 1024, true, 2097152, true, 2096128",
        "1048575, 1048576, 1048576, true, 2097152, true, 1048576",
        "1048577, 1049088, 1049088, false, 20971520, true, 19922432",
        "5242880, 5242880, 5242880, false, 20971520, true, 15728640",
        "10485248, 10485248, 10485248, false, 20971520, true, 10486272",
        "10485759, 10485760, 10485760, false, 10485760, false, 0",
        "10486272, 10486272, 10486272, false, 12582912, true, 2096640",
        // not split: the 1,048,064-byte rest (<= 1 MiB) stays inside the 20 MiB block handed out
        "19922945, 19923456, 20971520, false, 20971520, false, 0",
        "209715200, 209715200, 209715200, false, 209715200, false, 0",
    })
    void workedAllocationTable(long request, long rounded, long block, boolean small, long segment, boolean split,
            long remainder) {
        CachingAllocator a = allocator();
        assertEquals(rounded, SizeRules.roundSize(request, a.config()), "round_size");
        assertEquals(small, SizeRules.isSmall(rounded), "pool");
        assertEquals(segment, SizeRules.allocationSize(rounded), "get_allocation_size");
        if (!split) {
            assertTrue(block - rounded <= SizeRules.SMALL_SIZE, "a large block is not split for a rest <= 1 MiB");
        }
        long ptr = a.malloc(request);
        MemoryStats s = a.memoryStats();
        String pool = small ? "small_pool" : "large_pool";
        assertEquals(block, a.blockSize(ptr), "block size");
        assertEquals(segment, s.get("reserved_bytes." + pool + ".current"), "segment size");
        assertEquals(1, s.get("segment." + pool + ".current"));
        assertEquals(block, s.get("allocated_bytes.all.current"), "allocated includes an unsplit remainder");
        assertEquals(block, s.get("active_bytes.all.current"));
        assertEquals(request, s.get("requested_bytes.all.current"));
        assertEquals(split ? 1 : 0, s.get("inactive_split." + pool + ".current"), "split");
        assertEquals(remainder, s.get("inactive_split_bytes." + pool + ".current"), "remainder");
        List<SegmentInfo> segs = a.segments();
        assertEquals(1, segs.size());
        assertEquals(split ? 2 : 1, segs.get(0).blocks().size());
        assertEquals(ptr, segs.get(0).address(), "the allocation takes the low-address part");
        StatsInvariants.check(a);
        a.free(ptr);
        StatsInvariants.check(a);
        assertEquals(0, a.memoryStats().get("inactive_split.all.current"));
        assertEquals(segment, a.memoryReserved(), "free never returns a segment");
    }

    @Test
    void freedBlockIsReusedAtSameAddressAndNeighboursMerge() {
        CachingAllocator a = allocator();
        long p1 = a.malloc(1000);
        long p2 = a.malloc(1000);
        long p3 = a.malloc(1000);
        assertEquals(p1 + 1024, p2);
        assertEquals(p2 + 1024, p3);
        a.free(p2);
        StatsInvariants.check(a);
        assertEquals(p2, a.malloc(600), "best fit takes the freed 1024-byte hole");
        a.free(p1);
        a.free(p3);
        StatsInvariants.check(a);
        a.free(p2);
        List<SegmentInfo> segs = a.segments();
        assertEquals(1, segs.get(0).blocks().size(), "all neighbours merged back into one block");
        StatsInvariants.check(a);
    }

    @Test
    void bestFitPrefersSmallestThenLowestAddress() {
        CachingAllocator a = allocator();
        long a1 = a.malloc(4096);
        long sep1 = a.malloc(512);
        long a2 = a.malloc(2048);
        long sep2 = a.malloc(512);
        long a3 = a.malloc(2048);
        long sep3 = a.malloc(512);
        a.free(a1);
        a.free(a3);
        a.free(a2);
        assertEquals(a2, a.malloc(2048), "smallest fitting block, lowest address among equals");
        assertEquals(a3, a.malloc(1536));
        assertEquals(a1, a.malloc(3000));
        a.free(sep1);
        a.free(sep2);
        a.free(sep3);
        StatsInvariants.check(a);
    }

    @Test
    void poolsNeverLendToEachOther() {
        CachingAllocator a = allocator();
        long big = a.malloc(2 * MiB);
        a.free(big);
        long small = a.malloc(512 * 1024);
        MemoryStats s = a.memoryStats();
        assertEquals(1, s.get("segment.small_pool.current"));
        assertEquals(1, s.get("segment.large_pool.current"));
        assertEquals(22 * MiB, a.memoryReserved());
        a.free(small);
    }

    // ---- 11.1 basic stats and caching ----

    @Test
    void memoryAllocationAndDelete() {
        CachingAllocator a = allocator();
        long before = a.memoryAllocated();
        long p = a.malloc(1);
        assertTrue(a.memoryAllocated() > before);
        a.free(p);
        assertEquals(before, a.memoryAllocated());
    }

    @Test
    void memoryStatsActiveBytesDelta() {
        CachingAllocator a = allocator();
        a.emptyCache();
        a.resetPeakMemoryStats();
        a.resetAccumulatedMemoryStats();
        assertEquals(a.memoryAllocated(), a.maxMemoryAllocated());
        assertEquals(a.memoryReserved(), a.maxMemoryReserved());
        long before = a.memoryStats().get("active_bytes.all.current");
        long p = a.malloc(256 * 4);
        assertEquals(before + 1024, a.memoryStats().get("active_bytes.all.current"));
        assertEquals(0, a.memoryStats().get("active_bytes.all.freed"));
        long maxAlloc = a.maxMemoryAllocated();
        long maxRes = a.maxMemoryReserved();
        a.free(p);
        a.emptyCache();
        assertEquals(before, a.memoryStats().get("active_bytes.all.current"));
        assertEquals(1024, a.memoryStats().get("active_bytes.all.freed"));
        assertEquals(maxAlloc, a.maxMemoryAllocated(), "empty_cache does not change peaks");
        assertEquals(maxRes, a.maxMemoryReserved());
        a.resetPeakMemoryStats();
        assertEquals(a.memoryAllocated(), a.maxMemoryAllocated());
        assertEquals(a.memoryReserved(), a.maxMemoryReserved());
    }

    @Test
    void allKeysPresentAndMaxSplitSizeCaptured() {
        CachingAllocator a = allocator();
        assertEquals(122, a.memoryStats().asMap().size());
        assertEquals(-1, a.memoryStats().get("max_split_size"));
        CachingAllocator b = allocator(largeDevice(), "max_split_size_mb:40");
        assertEquals(40 * MiB, b.memoryStats().get("max_split_size"));
        b.setSettings("max_split_size_mb:100");
        assertEquals(40 * MiB, b.memoryStats().get("max_split_size"), "captured at creation, as PyTorch");
    }

    @Test
    void emptyCacheCountsSyncAndReleasesOnlyWholeSegments() {
        CachingAllocator a = allocator();
        long keep = a.malloc(1000);
        long drop = a.malloc(2000);
        long large = a.malloc(30 * MiB);
        a.free(drop);
        a.free(large);
        long syncs = a.memoryStats().get("num_sync_all_streams");
        long frees = a.memoryStats().get("num_device_free");
        a.emptyCache();
        MemoryStats s = a.memoryStats();
        assertEquals(syncs + 1, s.get("num_sync_all_streams"));
        assertEquals(frees + 1, s.get("num_device_free"), "only the whole 30 MiB segment goes");
        assertEquals(2 * MiB, a.memoryReserved(), "the small segment holds a live block");
        assertEquals(2 * MiB - 1024, s.get("inactive_split_bytes.all.current"));
        a.free(keep);
        a.emptyCache();
        assertEquals(0, a.memoryReserved());
        StatsInvariants.check(a);
    }

    @Test
    void resetAccumulatedZeroesTotalsAndCountersButKeepsCurrentAndPeak() {
        CachingAllocator a = allocator("sim:1GiB", "max_split_size_mb:40");
        Stream side = a.device().newStream();
        long keepSmall = a.malloc(1000);
        long keepBig = a.malloc(100 * MiB);          // oversize allocation and segment
        long gone = a.malloc(5 * MiB);
        long pending = a.malloc(3000);
        a.recordStream(pending, side);
        a.free(gone);
        a.free(pending);
        a.emptyCache();                              // num_sync_all_streams, num_device_free
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(2L << 30)); // num_alloc_retries, num_ooms
        long peakMaker = a.malloc(300 * MiB);
        a.free(peakMaker);
        a.emptyCache();
        MemoryStats before = a.memoryStats();
        for (String counter : List.of("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
                "num_device_free", "allocated_bytes.all.allocated", "allocated_bytes.all.freed",
                "allocation.small_pool.freed", "segment.large_pool.freed", "oversize_allocations.allocated",
                "oversize_segments.allocated", "requested_bytes.large_pool.freed")) {
            assertTrue(before.get(counter) > 0, counter + " was exercised");
        }

        a.resetAccumulatedMemoryStats();

        MemoryStats after = a.memoryStats();
        assertEquals(before.asMap().keySet(), after.asMap().keySet());
        for (String key : before.asMap().keySet()) {
            if (key.endsWith(".allocated") || key.endsWith(".freed") || key.startsWith("num_")) {
                assertEquals(0, after.get(key), key + " is accumulated: reset to 0");
            } else {
                assertEquals(before.get(key), after.get(key), key + " is not accumulated: unchanged");
            }
        }
        assertEquals(40 * MiB, after.get("max_split_size"));
        assertTrue(after.get("allocated_bytes.all.current") > 0 && after.get("reserved_bytes.all.peak")
                > after.get("reserved_bytes.all.current"), "current and peak values stayed non-trivial");
        // Counting resumes from zero.
        long smallBlock = a.blockSize(keepSmall);
        a.free(keepSmall);
        assertEquals(smallBlock, a.memoryStats().get("allocated_bytes.all.freed"));
        assertEquals(1, a.memoryStats().get("allocation.all.freed"));
        a.free(keepBig);
        StatsInvariants.check(a);
    }

    // ---- 11.2 OOM and fraction ----

    @Test
    void outOfMemoryMessageAndRecovery() {
        CachingAllocator a = allocator("sim:16GiB", "");
        DeviceOutOfMemoryException e = assertThrows(DeviceOutOfMemoryException.class,
                () -> a.malloc((1L << 30) * 800000000L));
        assertTrue(e.getMessage().contains("Tried to allocate 800000000.00 GiB. GPU 0 has a total capacity of 16.00 GiB"),
                e.getMessage());
        DeviceOutOfMemoryException eb = assertThrows(DeviceOutOfMemoryException.class,
                () -> a.malloc((1L << 30) * 8000000000L));
        assertTrue(eb.getMessage().contains("Tried to allocate more than 1EB memory"), eb.getMessage());
        assertEquals(1, a.memoryStats().get("num_ooms"), "the 1 EB check does not count");
        long p = a.malloc(1000);
        a.free(p);
    }

    @Test
    void outOfMemoryMessageLayout() {
        CachingAllocator a = allocator("sim:64MiB", "");
        long p = a.malloc(30 * MiB);
        long q = a.malloc(100);
        DeviceOutOfMemoryException e = assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(40 * MiB));
        assertEquals("sim device out of memory. Tried to allocate 40.00 MiB. GPU 0 has a total capacity of 64.00 MiB"
                + " of which 32.00 MiB is free. Of the allocated memory 30.00 MiB is allocated by vram4j, and"
                + " 2.00 MiB is reserved by vram4j but unallocated. If reserved but unallocated memory is large try"
                + " setting VRAM4J_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for"
                + " Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
                // vram4j's one added line: the small segment's free remainder, 2 MiB - 512 B, is the only cached block
                + "\nFragmentation: the largest free cached block is 2.00 MiB; 2.00 MiB is free in 1 cached block.",
                e.getMessage());
        assertEquals(40 * MiB, e.allocationBytes());
        a.free(p);
        a.free(q);
    }

    @Test
    void outOfMemoryReportsSegmentSizeForSmallRequests() {
        CachingAllocator a = allocator("sim:2MiB", "");
        long p = a.malloc(100);
        a.setPerProcessMemoryFraction(0.5);
        a.free(p);
        // the cached 2 MiB segment exceeds the 1 MiB allowance, so the OOM path releases it and fails again
        DeviceOutOfMemoryException e = assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(4 * MiB));
        assertTrue(e.getMessage().contains("Tried to allocate 20.00 MiB"), e.getMessage());
        assertTrue(e.getMessage().contains("1024.00 KiB allowed; "), e.getMessage());
        DeviceOutOfMemoryException e2 = assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(4));
        assertTrue(e2.getMessage().contains("Tried to allocate 2.00 MiB"), e2.getMessage());
    }

    @Test
    void outOfMemoryRetryReusesCachedBlock() {
        CachingAllocator a = allocator("sim:8GiB", "");
        long total = a.memGetInfo().total();
        long size = total / 10 * 6;
        long first = a.malloc(size);
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(size));
        a.free(first);
        long second = a.malloc(size);
        assertEquals(first, second, "served from the cache");
        a.free(second);
        StatsInvariants.check(a);
    }

    @Test
    void perProcessMemoryFraction() {
        // 8,000,000,000 bytes: half of it is not a multiple of 2 MiB, so a request of exactly the allowed
        // maximum rounds above it, as on a real GPU.
        CachingAllocator a = allocator("sim:8000MB", "");
        assertEquals(1.0, a.getPerProcessMemoryFraction());
        assertThrows(IllegalArgumentException.class, () -> a.setPerProcessMemoryFraction(-0.1));
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> a.setPerProcessMemoryFraction(2.0));
        assertEquals("Invalid fraction value: 2.0. Allowed range: 0~1", bad.getMessage());
        assertEquals(1.0, a.getPerProcessMemoryFraction(), "refused call changes nothing");
        a.setPerProcessMemoryFraction(0.5);
        long total = a.memGetInfo().total();
        long okSize = (long) (total * 0.499) - a.maxMemoryReserved();
        long p = a.malloc(okSize);
        a.free(p);
        DeviceOutOfMemoryException e = assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc((long) (total * 0.5)));
        assertTrue(e.getMessage().contains("out of memory"));
        long q = a.malloc(1000);
        a.free(q);
        for (double f : new double[] {1.0, 0.0, 0.3141592653589793, 0.75, 0.123456789}) {
            a.setPerProcessMemoryFraction(f);
            assertEquals(Math.floor(f * total) / total, a.getPerProcessMemoryFraction(), 1e-15);
        }
        a.setPerProcessMemoryFraction(0.0);
        long cached = a.malloc(1);
        a.free(cached);
        assertEquals(q, cached, "cached blocks are still served");
        a.emptyCache();
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(1), "fraction 0 refuses every new segment");
    }

    @Test
    void perProcessMemoryFractionFromTheConfString() {
        CachingAllocator a = allocator("sim:1GiB", "per_process_memory_fraction:0.5");
        assertEquals(0.5, a.getPerProcessMemoryFraction(), "the config key applies it at creation");
        long p = a.malloc(500 * MiB);
        DeviceOutOfMemoryException e = assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(20 * MiB));
        assertTrue(e.getMessage().contains("512.00 MiB allowed; "), e.getMessage());
        assertTrue(a.memGetInfo().free() > 500 * MiB, "the device itself had room: the fraction refused it");
        a.free(p);

        a.setSettings("per_process_memory_fraction:0.25");
        assertEquals(0.25, a.getPerProcessMemoryFraction(), "setSettings applies it");
        a.emptyCache();
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(300 * MiB));
        long q = a.malloc(250 * MiB);
        a.free(q);

        AllocatorConfig settings = a.config();
        assertThrows(IllegalArgumentException.class, () -> a.setSettings("per_process_memory_fraction:1.1"));
        assertEquals(0.25, a.getPerProcessMemoryFraction(), "a refused string changes nothing");
        assertEquals(settings, a.config());

        a.setPerProcessMemoryFraction(0.75);
        a.setSettings("max_split_size_mb:40");
        assertEquals(0.75, a.getPerProcessMemoryFraction(), "a string without the key keeps the fraction");
        a.setSettings("per_process_memory_fraction:1.0,max_split_size_mb:40");
        assertEquals(1.0, a.getPerProcessMemoryFraction());
        long all = a.malloc(900 * MiB);
        a.free(all);

        CachingAllocator none = allocator("sim:1GiB", "per_process_memory_fraction:0.0");
        assertEquals(0.0, none.getPerProcessMemoryFraction());
        assertThrows(DeviceOutOfMemoryException.class, () -> none.malloc(1), "fraction 0 refuses every segment");
    }

    @Test
    void fractionCapsReservedNotAllocated() {
        CachingAllocator a = allocator("sim:1GiB", "");
        a.setPerProcessMemoryFraction(0.1); // 107,374,182 bytes allowed
        long p = a.malloc(100 * MiB);
        assertEquals(100 * MiB, a.memoryReserved());
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(2 * MiB), "22 MiB more would exceed the cap");
        long small = a.malloc(1000); // a 2 MiB small segment still fits: 102 MiB <= 102.4 MiB
        a.free(small);
        a.free(p);
    }

    @ParameterizedTest
    @CsvSource({"''", "max_split_size_mb:1024"})
    void raisesOom(String conf) {
        CachingAllocator a = allocator(largeDevice(), conf);
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc((1L << 40) * 4));
        assertEquals(1, a.memoryStats().get("num_ooms"));
        assertEquals(1, a.memoryStats().get("num_alloc_retries"));
    }

    @Test
    void notifiesOomObservers() {
        CachingAllocator a = allocator("sim:1GiB", "");
        AtomicReference<long[]> seen = new AtomicReference<>();
        a.attachOutOfMemoryObserver((dev, size, allowed, free) -> seen.set(new long[] {dev, size, allowed, free}));
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(2L << 30));
        assertEquals(0, seen.get()[0]);
        assertEquals(2L << 30, seen.get()[1]);
        assertEquals(1L << 30, seen.get()[2]);
        assertEquals(1L << 30, seen.get()[3]);
    }

    @Test
    void recordStreamOomPathReclaimsPendingBlocks() {
        CachingAllocator a = allocator("sim:1GiB", "");
        Stream side = a.device().newStream();
        for (int i = 0; i < 100; i++) {
            long p = a.malloc(40L * MiB * 4);
            a.recordStream(p, side);
            a.free(p);
        }
        assertTrue(a.memoryStats().get("num_alloc_retries") > 0, "the last-resort path synchronized the events");
        assertEquals(0, a.memoryStats().get("num_ooms"));
        StatsInvariants.check(a);
    }

    // ---- 11.3 streams ----

    @Test
    void recordStreamDefersReuseUntilOtherStreamSynchronizes() {
        CachingAllocator a = allocator();
        Stream main = a.device().defaultStream();
        Stream side = a.device().newStream();
        long p = a.malloc(50 * 4, side);
        a.recordStream(p, main);
        a.free(p);
        MemoryStats s = a.memoryStats();
        assertEquals(0, s.get("allocation.all.current"));
        assertEquals(1, s.get("active.all.current"), "pending free stays active");
        assertEquals("active_pending_free", a.segments().get(0).blocks().get(0).state().pytorchName());
        StatsInvariants.check(a);
        long q = a.malloc(50 * 4, side);
        assertNotEquals(p, q, "allocation reused too soon");
        a.free(q);
        main.synchronize();
        long r = a.malloc(50 * 4, side);
        assertEquals(p, r, "after the main stream synchronized the block is reused");
        a.free(r);
        StatsInvariants.check(a);
    }

    @Test
    void blocksAreOnlyReusedOnTheirStream() {
        CachingAllocator a = allocator();
        Stream s1 = a.device().newStream();
        Stream s2 = a.device().newStream();
        long p = a.malloc(1 << 16, s1);
        a.free(p);
        long q = a.malloc(1 << 16, s2);
        assertNotEquals(p, q);
        assertEquals(2, a.memoryStats().get("segment.all.current"));
        a.free(q);
        a.emptyCache();
        assertEquals(0, a.memoryReserved());
    }

    @Test
    void recordStreamOnSameStreamIsNoOp() {
        CachingAllocator a = allocator();
        long p = a.malloc(1000);
        a.recordStream(p, a.device().defaultStream());
        a.recordStream(0, a.device().newStream()); // the null address is ignored, as PyTorch's null data pointers
        a.free(p);
        assertEquals(0, a.memoryStats().get("active.all.current"));
        assertEquals(p, a.malloc(1000), "no event held the block back");
    }

    @Test
    void recordStreamRefusesAddressesThatAreNotALiveBlock() {
        CachingAllocator a = allocator();
        Stream side = a.device().newStream();
        long p = a.malloc(4096);
        long freed = a.malloc(4096);
        a.free(freed);
        MemoryStats before = a.memoryStats();
        List<SegmentInfo> segsBefore = a.segments();
        // an address inside the block (a shifted view), a freed block, an address no block ever had
        for (long bad : new long[] {p + 512, freed, 0x1234_0000L}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.recordStream(bad, side),
                    Long.toHexString(bad));
            assertTrue(e.getMessage().contains("No allocated block can be found"), e.getMessage());
            assertTrue(e.getMessage().contains("0x" + Long.toHexString(bad)), e.getMessage());
        }
        assertEquals(before, a.memoryStats());
        assertEquals(segsBefore, a.segments());
        // The block itself was not marked: freeing it completes at once and it is reused on the next malloc.
        a.free(p);
        assertEquals(0, a.memoryStats().get("active.all.current"));
        assertEquals(p, a.malloc(4096));
        // A shifted view is protected by recording its block's base address (test_record_stream_on_shifted_view).
        long q = a.malloc(4096, side);
        a.recordStream(q, a.device().defaultStream());
        a.free(q);
        assertNotEquals(q, a.malloc(4096, side), "the whole block stays protected until the other stream passes");
    }

    // ---- 11.4 settings ----

    @Test
    void allocatorSettingsDeltas() {
        long nbytes = 21 * MiB * 4;       // 84 MiB
        long nbytesBig = 100 * MiB * 4;   // 400 MiB
        CachingAllocator a = allocator();
        assertEquals(nbytes, activeDelta(a, nbytes));
        a.setSettings("roundup_power2_divisions:4");
        long before = a.memoryStats().get("requested_bytes.all.allocated");
        assertEquals(96 * MiB, activeDelta(a, nbytes));
        assertEquals(nbytes, a.memoryStats().get("requested_bytes.all.allocated") - before);
        a.setSettings("garbage_collection_threshold:0.5");
        a.setSettings("garbage_collection_threshold:0.5,max_split_size_mb:40");
        assertEquals(nbytes, activeDelta(a, nbytes), "divisions reset by the new parse");
        a.setSettings("garbage_collection_threshold:0.5,roundup_power2_divisions:[64:8,128:2,256:2,512:2,1024:1,>:1]");
        assertEquals(88 * MiB, activeDelta(a, nbytes));
        assertEquals(512 * MiB, activeDelta(a, nbytesBig));
        a.setSettings("release_lock_on_cudamalloc:True");
        assertEquals(nbytes, activeDelta(a, nbytes));
    }

    private static long activeDelta(CachingAllocator a, long bytes) {
        long before = a.memoryStats().get("active_bytes.all.allocated");
        long p = a.malloc(bytes);
        long delta = a.memoryStats().get("active_bytes.all.allocated") - before;
        a.free(p);
        return delta;
    }

    @Test
    void invalidSettingsKeepPreviousConfig() {
        CachingAllocator a = allocator(largeDevice(), "max_split_size_mb:40");
        AllocatorConfig before = a.config();
        for (String bad : new String[] {"foo:1,bar:2", "garbage_collection_threshold:1.2", "max_split_size_mb:2",
                "release_lock_on_cudamalloc:none", "pinned_use_cuda_host_register:none",
                "pinned_num_register_threads:none", "pinned_num_register_threads:1024"}) {
            assertThrows(IllegalArgumentException.class, () -> a.setSettings(bad), bad);
            assertEquals(before, a.config(), bad);
        }
    }

    // ---- 11.9 max_split_size ----

    @Test
    void maxSplitSizeOversizeRules() {
        CachingAllocator a = allocator(largeDevice(), "max_split_size_mb:40");
        long big = a.malloc(100 * MiB);
        assertEquals(1, a.memoryStats().get("oversize_segments.current"));
        assertEquals(1, a.memoryStats().get("oversize_allocations.current"));
        a.free(big);
        assertEquals(0, a.memoryStats().get("oversize_allocations.current"));
        long p90 = a.malloc(90 * MiB);
        assertEquals(big, p90, "90 MiB may use the cached 100 MiB block (90 + 20 > 100)");
        assertEquals(100 * MiB, a.blockSize(p90), "oversize blocks are never split");
        a.free(p90);
        long p80 = a.malloc(80 * MiB);
        assertNotEquals(big, p80, "80 + 20 <= 100: a new segment");
        a.free(p80);
        long p30 = a.malloc(30 * MiB);
        assertFalse(p30 == big || p30 == p80, "small requests never take oversize blocks");
        a.free(p30);
        StatsInvariants.check(a);
    }

    @Test
    void maxNonSplitRoundingWidensOrNarrowsOversizeReuse() {
        // Default tolerance R = 20 MiB: a cached 100 MiB oversize block serves 81..100 MiB requests only.
        CachingAllocator d = allocator(largeDevice(), "max_split_size_mb:40");
        long cached = d.malloc(100 * MiB);
        d.free(cached);
        long p70 = d.malloc(70 * MiB);
        assertNotEquals(cached, p70, "70 + 20 <= 100: a new segment");
        d.free(p70);

        // R = 50 MiB: the same 70 MiB request now takes the cached 100 MiB block whole ...
        CachingAllocator w = allocator(largeDevice(), "max_split_size_mb:40,max_non_split_rounding_mb:50");
        assertEquals(50 * MiB, w.config().maxNonSplitRounding());
        long big = w.malloc(100 * MiB);
        w.free(big);
        long reused = w.malloc(70 * MiB);
        assertEquals(big, reused, "70 + 50 > 100: the cached block is reused");
        assertEquals(100 * MiB, w.blockSize(reused), "oversize blocks are not split");
        assertEquals(1, w.memoryStats().get("segment.all.current"));
        w.free(reused);
        // ... but not a 50 MiB request (50 + 50 <= 100), and requests below max_split_size never take it.
        long p50 = w.malloc(50 * MiB);
        assertNotEquals(big, p50);
        long p30 = w.malloc(30 * MiB);
        assertNotEquals(big, p30);
        w.free(p50);
        w.free(p30);

        // Set at run time: R = 30 MiB makes 70 MiB miss again, 71 MiB hit.
        w.setSettings("max_split_size_mb:40,max_non_split_rounding_mb:30");
        long p70b = w.malloc(70 * MiB);
        assertNotEquals(big, p70b, "70 + 30 <= 100");
        long p71 = w.malloc(71 * MiB);
        assertEquals(big, p71, "71 + 30 > 100");
        w.free(p70b);
        w.free(p71);
        StatsInvariants.check(w);
    }

    @Test
    void releaseAvailableCachedBlocksFreesOversizeBlocksBeforeRetrying() {
        CachingAllocator a = allocator("sim:300MiB", "max_split_size_mb:40");
        long x = a.malloc(100 * MiB);
        long y = a.malloc(100 * MiB);
        a.free(x);
        a.free(y);
        long z = a.malloc(150 * MiB);
        assertEquals(0, a.memoryStats().get("num_alloc_retries"), "released oversize blocks, no full retry");
        assertEquals(150 * MiB, a.memoryReserved());
        assertEquals(2, a.memoryStats().get("num_device_free"));
        a.free(z);
        StatsInvariants.check(a);
    }

    // ---- 4.3 garbage collection ----

    @Test
    void garbageCollectionNeedsAFractionAndFreesAgedBlocks() {
        CachingAllocator a = allocator("sim:1GiB", "garbage_collection_threshold:0.5");
        long p = a.malloc(300 * MiB);
        a.free(p);
        long q = a.malloc(400 * MiB);
        assertEquals(700 * MiB, a.memoryReserved(), "inert without a memory fraction");
        a.free(q);
        a.emptyCache();

        CachingAllocator b = allocator("sim:1GiB", "garbage_collection_threshold:0.5");
        b.setPerProcessMemoryFraction(1.0); // allowed 1 GiB, GC limit 512 MiB
        long p1 = b.malloc(300 * MiB);
        b.free(p1);
        long q1 = b.malloc(400 * MiB); // reserved 300 MiB <= 512 MiB: no GC
        assertEquals(700 * MiB, b.memoryReserved());
        b.free(q1);
        // 700 MiB > 512 MiB: GC frees whole cached segments whose age is at least the average; the 300 MiB
        // block was freed first (age 2 against 1), and reclaiming it reaches the 188 MiB target.
        long r = b.malloc(500 * MiB);
        assertEquals(900 * MiB, b.memoryReserved());
        assertEquals(1, b.memoryStats().get("num_device_free"));
        assertEquals(0, b.memoryStats().get("num_alloc_retries"));
        assertEquals(0, b.memoryStats().get("num_sync_all_streams"), "GC does not synchronize");
        b.free(r);
        StatsInvariants.check(b);
    }

    // ---- 11.5 expandable segments ----

    @Test
    void expandableSegmentsMapPagesInsteadOfSegments() {
        CachingAllocator a = allocator(largeDevice(), "expandable_segments:True");
        long s = a.malloc(1000);
        MemoryStats st = a.memoryStats();
        assertEquals(0, st.get("segment.all.current"), "maps are not segments");
        assertEquals(2 * MiB, st.get("reserved_bytes.small_pool.current"));
        assertEquals(1, st.get("num_device_alloc"));
        long l1 = a.malloc(30 * MiB);
        assertEquals(40 * MiB, a.memoryStats().get("reserved_bytes.large_pool.current"), "two 20 MiB pages");
        long l2 = a.malloc(5 * MiB);
        assertEquals(l1 + 30 * MiB, l2, "allocations tile contiguously");
        assertEquals(40 * MiB, a.memoryStats().get("reserved_bytes.large_pool.current"));
        long l3 = a.malloc(10 * MiB);
        assertEquals(l2 + 5 * MiB, l3);
        assertEquals(60 * MiB, a.memoryStats().get("reserved_bytes.large_pool.current"));
        assertEquals(0, a.memoryStats().get("inactive_split.all.current"), "expandable blocks never count");
        StatsInvariants.check(a);
        a.free(l3);
        a.emptyCache();
        // l3 freed: [35, 60) MiB free; only the whole page [40, 60) can be unmapped
        assertEquals(40 * MiB, a.memoryStats().get("reserved_bytes.large_pool.current"));
        a.free(l1);
        a.free(l2);
        a.free(s);
        a.emptyCache();
        assertEquals(0, a.memoryReserved());
        StatsInvariants.check(a);
        List<SegmentInfo> none = a.segments();
        assertTrue(none.isEmpty());
    }

    @Test
    void maxSplitWithExpandable() {
        CachingAllocator a = allocator("sim:1GiB", "max_split_size_mb:40");
        a.setPerProcessMemoryFraction((120.0 * MiB) / a.memGetInfo().total());
        long x = a.malloc(40 * MiB);
        a.setSettings("max_split_size_mb:40,expandable_segments:True");
        long y = a.malloc(40 * MiB);
        a.setSettings("max_split_size_mb:40,expandable_segments:False");
        long z = a.malloc(40 * MiB);
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(40 * MiB));
        a.free(x);
        a.free(y);
        a.free(z);
        long big = a.malloc(120 * MiB);
        a.free(big);
        StatsInvariants.check(a);
    }

    @Test
    void garbageCollectSkipsExpandable() {
        CachingAllocator a = allocator("sim:1GiB", "garbage_collection_threshold:0.5");
        a.setPerProcessMemoryFraction((120.0 * MiB) / a.memGetInfo().total());
        long x = a.malloc(40 * MiB);
        a.setSettings("garbage_collection_threshold:0.5,expandable_segments:True");
        long y = a.malloc(40 * MiB);
        a.free(x);
        a.free(y);
        long big = a.malloc(80 * MiB);
        a.free(big);
        StatsInvariants.check(a);
    }

    // ---- refused calls leave the state unchanged ----

    @Test
    void refusedCallsChangeNothing() {
        CachingAllocator a = allocator();
        long p = a.malloc(5000);
        MemoryStats before = a.memoryStats();
        List<SegmentInfo> segsBefore = a.segments();
        assertThrows(IllegalArgumentException.class, () -> a.malloc(-1));
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(1L << 60));
        assertThrows(IllegalArgumentException.class, () -> a.free(p + 512));
        assertThrows(IllegalArgumentException.class, () -> a.free(42));
        assertEquals(0, a.malloc(0), "zero bytes give the null address");
        a.free(0);
        assertEquals(before, a.memoryStats());
        assertEquals(segsBefore, a.segments());
        a.free(p);
        IllegalArgumentException df = assertThrows(IllegalArgumentException.class, () -> a.free(p));
        assertTrue(df.getMessage().contains("invalid device pointer"), df.getMessage());
        a.close();
        IllegalStateException closed = assertThrows(IllegalStateException.class, () -> a.malloc(10));
        assertTrue(closed.getMessage().contains("closed"));
    }

    @Test
    void closeReportsLiveAllocations() {
        CachingAllocator a = allocator("sim:1GiB", "");
        a.malloc(3000);
        IllegalStateException e = assertThrows(IllegalStateException.class, a::close);
        assertTrue(e.getMessage().contains("1 live allocation"), e.getMessage());
        assertEquals(1L << 30, a.device().memGetInfo().free(), "close returned everything to the device");
    }
}
