package io.vram4j.replay;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.DeviceOutOfMemoryException;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.alloc.config.AllocatorConfigException;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Replays of traces recorded by vram4j itself, where the truth is known. */
class SyntheticReplayTest {
    private static final long MiB = 1L << 20;

    /** A workload with two streams, an explicit empty_cache, the OOM path's release-and-retry, and a real OOM. */
    private static MemorySnapshot record(String conf, long capacity, boolean withOom) {
        try (DeviceBackend device = Devices.open("sim:" + capacity)) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse(conf));
            a.recordMemoryHistory(1_000_000);
            Stream side = device.newStream();
            Random rnd = new Random(5);
            List<Long> live = new ArrayList<>();
            for (int i = 0; i < 3000; i++) {
                if (live.size() < 40 && (live.isEmpty() || rnd.nextInt(3) > 0)) {
                    long size = rnd.nextInt(4) == 0 ? MiB + rnd.nextLong(30 * MiB) : 1 + rnd.nextLong(MiB);
                    try {
                        live.add(a.malloc(size, rnd.nextInt(5) == 0 ? side : device.defaultStream()));
                    } catch (DeviceOutOfMemoryException e) {
                        // keeps going, as a program that catches OOM would
                    }
                } else {
                    a.free(live.remove(rnd.nextInt(live.size())));
                }
                if (i == 1500) {
                    a.emptyCache();
                }
            }
            if (withOom) {
                assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(capacity));
            }
            MemorySnapshot s = a.snapshot();
            for (long p : live) {
                a.free(p);
            }
            a.close();
            return s;
        }
    }

    @Test
    void ownRecordingReplaysExactlyWithOomPathAndEmptyCache() {
        MemorySnapshot s = record("", 512 * MiB, true);
        List<TraceEntry> t = s.deviceTraces().get(0);
        assertTrue(t.stream().anyMatch(e -> e.action() == TraceAction.SEGMENT_FREE), "the workload released segments");
        ReplayReport r = Replayer.replay(s, ReplayOptions.EXACT).get(0);
        assertTrue(r.bursts().stream().anyMatch(b -> b.kind() == ReleaseBurst.Kind.EMPTY_CACHE), r.bursts().toString());
        assertEquals(512 * MiB, r.capacity(), "capacity from the oom entry: reserved then + device_free");
        assertEquals(r.recordedSegmentSizes(), r.replayedSegmentSizes());
        assertEquals(0, r.allocsAtOtherAddress());
        assertEquals(r.recordedPeakReserved(), r.replayedPeakReserved());
        assertEquals(r.recordedOoms(), r.predictedOoms());
        assertTrue(r.finalStateEqual(), String.join("\n", r.finalStateDifferences()));
    }

    @Test
    void oomPathBurstsAreExplainedAndCapacityInferred() {
        MemorySnapshot s;
        try (DeviceBackend device = Devices.open("sim:256MiB")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            a.recordMemoryHistory(1000);
            long x = a.malloc(100 * MiB);
            long y = a.malloc(100 * MiB);
            long small = a.malloc(1000);
            a.free(x);
            a.free(y);
            long z = a.malloc(150 * MiB); // no cached block fits, 200 + 150 > 256: release cached segments, retry
            a.emptyCache();                // releases nothing whole: both segments hold live blocks
            a.free(small);
            a.emptyCache();                // an explicit empty_cache burst: the small segment
            a.free(z);
            long w = a.malloc(60 * MiB);   // served from the cached 150 MiB block
            s = a.snapshot();
            a.free(w);
            a.close();
        }
        ReplayReport r = Replayer.replay(s, ReplayOptions.EXACT).get(0);
        assertEquals(2, r.bursts().size(), r.bursts().toString());
        assertEquals(ReleaseBurst.Kind.OOM_PATH, r.bursts().get(0).kind());
        assertEquals(200 * MiB, r.bursts().get(0).bytes());
        assertEquals(ReleaseBurst.Kind.EMPTY_CACHE, r.bursts().get(1).kind());
        assertTrue(r.bursts().stream().anyMatch(b -> b.kind() == ReleaseBurst.Kind.OOM_PATH), r.bursts().toString());
        assertEquals(CapacityEstimate.Source.OOM_PATH_BURSTS, r.capacityEstimate().source());
        assertTrue(r.capacity() <= 256 * MiB && r.capacity() >= 152 * MiB, "in [reserved after + 150 MiB, 256 MiB]");
        assertTrue(r.capacityEstimate().lower() <= 256 * MiB && 256 * MiB <= r.capacityEstimate().upper(),
                r.capacityEstimate().describe());
        assertEquals(r.recordedSegmentSizes(), r.replayedSegmentSizes());
        assertTrue(r.finalStateEqual(), String.join("\n", r.finalStateDifferences()));
    }

    @Test
    void expandableRecordingReplaysExactlyWhenTheCapacityIsKnown() {
        // Best fit measures an expandable block together with the unmapped rest of its reservation, whose size
        // is 9/8 of the device capacity: exactness needs the recorded capacity (here from the oom entry).
        MemorySnapshot s = record("expandable_segments:True", 512 * MiB, true);
        assertTrue(s.deviceTraces().get(0).stream().anyMatch(e -> e.action() == TraceAction.SEGMENT_MAP));
        ReplayReport r = Replayer.replay(s, ReplayOptions.EXACT).get(0);
        assertEquals(512 * MiB, r.capacity());
        assertEquals(r.recordedSegmentSizes(), r.replayedSegmentSizes());
        assertEquals(r.recordedPeakReserved(), r.replayedPeakReserved());
        assertEquals(0, r.allocsAtOtherAddress());
        assertTrue(r.finalStateEqual(), String.join("\n", r.finalStateDifferences()));
    }

    /** An empty_cache() directly before a malloc that needs a new segment, which the released segment could serve. */
    private static MemorySnapshot emptyCacheThenMalloc() {
        try (DeviceBackend device = Devices.open("sim:1GiB")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            a.recordMemoryHistory(1000);
            long x = a.malloc(100 * MiB);
            a.free(x);
            a.emptyCache();
            long y = a.malloc(50 * MiB); // the cached 100 MiB block would have served this: not the OOM path
            MemorySnapshot s = a.snapshot();
            a.free(y);
            a.close();
            return s;
        }
    }

    @Test
    void anEmptyCacheBeforeAMallocTheCacheCouldServeIsExplicitAndPerformedInWhatIfs() {
        MemorySnapshot s = emptyCacheThenMalloc();
        ReplayReport exact = Replayer.replay(s, ReplayOptions.EXACT).get(0);
        assertEquals(1, exact.bursts().size(), exact.bursts().toString());
        assertEquals(ReleaseBurst.Kind.EMPTY_CACHE, exact.bursts().get(0).kind());
        assertEquals(CapacityEstimate.Source.UNBOUNDED, exact.capacityEstimate().source());
        assertTrue(exact.exact());
        // a large device: the empty_cache() still happens at its place, so the 50 MiB malloc opens its own segment
        ReplayReport big = Replayer.replay(s, ReplayOptions.whatIf(null, 80L << 30)).get(0);
        assertEquals(List.of(100 * MiB, 50 * MiB), big.replayedSegmentSizes());
        assertEquals(100 * MiB, big.replayedPeakReserved());
    }

    @Test
    void whatIfSmallerDevicePredictsOom() {
        MemorySnapshot s = record("", 512 * MiB, false);
        ReplayReport r = Replayer.replay(s, ReplayOptions.whatIf(null, 64 * MiB)).get(0);
        assertTrue(r.predictedOoms() > 0);
        assertTrue(r.firstPredictedOomEntry() >= 0);
        assertTrue(r.skipped() > 0);
        ReplayReport roomy = Replayer.replay(s, ReplayOptions.whatIf("expandable_segments:True", 4096 * MiB)).get(0);
        assertEquals(0, roomy.predictedOoms());
    }

    @Test
    void inconsistentTraceNamesTheEntry() {
        MemorySnapshot s = record("", 512 * MiB, false);
        List<TraceEntry> t = new ArrayList<>(s.deviceTraces().get(0));
        int at = t.size() / 2;
        t.add(at, TraceEntry.of(TraceAction.FREE_COMPLETED, 0xdead000L, 512, 0, TraceEntry.NO_TIME, List.of()));
        MemorySnapshot bad = new MemorySnapshot(s.segments(), List.of(t), s.allocatorSettings(), List.of());
        ReplayException e = assertThrows(ReplayException.class, () -> Replayer.replay(bad, ReplayOptions.EXACT));
        assertEquals(at, e.entryIndex());
        assertTrue(e.getMessage().contains("entry " + at), e.getMessage());
        ReplayReport lenient = Replayer.replay(bad, new ReplayOptions(null, 0, true, true)).get(0);
        assertTrue(lenient.skipped() >= 1);
    }

    @Test
    void structuredSettingsAreUsedWhenTheConfStringIsEmpty() {
        String conf = "roundup_power2_divisions:4,max_split_size_mb:64,garbage_collection_threshold:0.5";
        MemorySnapshot s = record(conf, 512 * MiB, false);
        Map<String, Object> settings = new LinkedHashMap<>(s.allocatorSettings());
        assertEquals(conf, settings.get("PYTORCH_CUDA_ALLOC_CONF"));
        settings.put("PYTORCH_CUDA_ALLOC_CONF", ""); // as when set by _set_allocator_settings or another route
        MemorySnapshot blank = new MemorySnapshot(s.segments(), s.deviceTraces(), settings, List.of());
        AllocatorConfig c = Replayer.config(blank, ReplayOptions.EXACT);
        assertEquals(64 * MiB, c.maxSplitSize());
        assertEquals(0.5, c.garbageCollectionThreshold());
        assertEquals(4, c.roundupPower2Divisions(0));
        assertEquals(4, c.roundupPower2Divisions(15));
        assertEquals(AllocatorConfig.DEFAULT.parse(conf).toSettingsMap().entrySet().stream()
                .filter(e -> !e.getKey().equals("PYTORCH_CUDA_ALLOC_CONF")).toList(),
                c.toSettingsMap().entrySet().stream().filter(e -> !e.getKey().equals("PYTORCH_CUDA_ALLOC_CONF")).toList());
        ReplayReport r = Replayer.replay(blank, ReplayOptions.EXACT).get(0);
        assertTrue(r.exact(), String.join("\n", r.finalStateDifferences()) + " " + r.allocsAtOtherAddress());

        settings.put("expandable_segments", true);
        settings.put("max_split_size", -1L);
        settings.remove("roundup_power2_divisions");
        AllocatorConfig e = Replayer.config(new MemorySnapshot(s.segments(), s.deviceTraces(), settings, List.of()),
                ReplayOptions.EXACT);
        assertTrue(e.expandableSegments());
        assertEquals(AllocatorConfig.UNLIMITED, e.maxSplitSize());
        assertEquals(0, e.roundupPower2Divisions(3));

        settings.put("roundup_power2_divisions", Map.of("4", 3L));
        AllocatorConfigException bad = assertThrows(AllocatorConfigException.class, () -> Replayer.config(
                new MemorySnapshot(s.segments(), s.deviceTraces(), settings, List.of()), ReplayOptions.EXACT));
        assertEquals("allocator_settings.roundup_power2_divisions['4']: expected 0 or a power of two, got 3", bad.getMessage());
        settings.put("expandable_segments", "yes");
        bad = assertThrows(AllocatorConfigException.class, () -> Replayer.config(
                new MemorySnapshot(s.segments(), s.deviceTraces(), settings, List.of()), ReplayOptions.EXACT));
        assertEquals("allocator_settings.expandable_segments: expected True or False, got yes", bad.getMessage());
    }
}
