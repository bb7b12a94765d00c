package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.BlockState;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.memory.snapshot.SnapshotWriter;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** History recording and snapshots, after upstream's test_memory_snapshot and test_memory_plots_* (spec 11.8). */
class HistorySnapshotTest {
    private DeviceBackend device;
    private CachingAllocator alloc;

    @BeforeEach
    void open() {
        device = Devices.open("sim:16GiB");
        alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
    }

    @AfterEach
    void close() {
        device.close();
    }

    private long allocateTheTensor() {
        return alloc.malloc(311 * 411 * 4);
    }

    private void freeTheTensor(long p) {
        alloc.free(p);
    }

    private void releaseEverything() {
        alloc.emptyCache();
    }

    private static boolean mentions(List<TraceEntry> entries, String name) {
        return entries.stream().flatMap(e -> e.frames().stream()).anyMatch(f -> f.name().contains(name));
    }

    @Test
    void segmentsAreTheSnapshotsSegmentsAndRecordNothing() {
        alloc.recordMemoryHistory("all", "state", "java", 100_000);
        long big = alloc.malloc(5 * 1024 * 1024 + 3);
        long small = alloc.malloc(1000);
        long gone = alloc.malloc(2000);
        alloc.free(gone);
        int entries = alloc.snapshot().trace(0).size();

        List<SegmentInfo> live = alloc.segments();
        List<SegmentInfo> again = alloc.segments();
        MemorySnapshot snap = alloc.snapshot();
        assertEquals(entries + 1, snap.trace(0).size(), "segments() recorded no snapshot entry; snapshot() one");
        assertEquals(snap.segments(), live, "one model: the same records as the snapshot's");
        assertEquals(live, again);
        assertThrows(UnsupportedOperationException.class, () -> live.clear());

        assertEquals(2, live.size(), "one small and one large segment");
        SegmentInfo smallSeg = live.stream().filter(s -> !s.isLarge()).findFirst().orElseThrow();
        assertEquals(2 * 1024 * 1024, smallSeg.totalSize());
        assertEquals(1024, smallSeg.allocatedSize(), "1000 B rounds to 1024 B");
        assertEquals(1000, smallSeg.requestedSize(), "the freed 2000 B block no longer counts");
        BlockInfo first = smallSeg.blocks().get(0);
        assertEquals(small, first.address());
        assertEquals(BlockState.ACTIVE_ALLOCATED, first.state());
        assertTrue(mentions(first.frames()), "the live block carries its allocation stack");
        BlockInfo freed = smallSeg.blocks().get(1);
        assertEquals(BlockState.INACTIVE, freed.state());
        assertEquals(0, freed.requestedSize(), "inactive: no requested size");
        assertTrue(freed.frames().isEmpty(), "inactive: no stack");
        assertEquals(big, live.stream().filter(SegmentInfo::isLarge).findFirst().orElseThrow().address());

        alloc.free(big);
        alloc.free(small);
        alloc.close();
        assertThrows(IllegalStateException.class, () -> alloc.segments(), "closed");
    }

    private static boolean mentions(List<Frame> frames) {
        return frames.stream().anyMatch(f -> f.name().contains("segmentsAreTheSnapshotsSegmentsAndRecordNothing"));
    }

    @Test
    void memorySnapshotLikeUpstream() {
        alloc.recordMemoryHistory("all", "state", "java", 100_000);
        long a = alloc.malloc(2 * 311 * 411 * 4);
        long b = alloc.malloc(310 * 410 * 4);
        long x = allocateTheTensor();
        List<Long> small = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            small.add(alloc.malloc(128 * 4));
        }
        Collections.shuffle(small, new Random(1));
        for (long p : small) {
            alloc.free(p);
        }
        long c = alloc.malloc(640 * 4);
        MemorySnapshot snap = alloc.snapshot();
        BlockInfo found = null;
        for (SegmentInfo seg : snap.segments()) {
            for (BlockInfo bl : seg.blocks()) {
                if (bl.requestedSize() == 511_284 && bl.state() == BlockState.ACTIVE_ALLOCATED) {
                    found = bl;
                }
            }
        }
        assertTrue(found != null, "the 311x411 block is in the snapshot");
        assertEquals(x, found.address());
        assertTrue(found.frames().get(0).filename().contains("HistorySnapshotTest"), found.frames().toString());
        assertEquals("HistorySnapshotTest.allocateTheTensor", found.frames().get(0).name());
        assertTrue(snap.segments().stream().allMatch(s -> s.blocks().stream().mapToLong(BlockInfo::size).sum() == s.totalSize()));
        for (long p : new long[] {a, b, x, c}) {
            alloc.free(p);
        }
        alloc.emptyCache();
        List<TraceEntry> trace = alloc.snapshot().deviceTraces().get(0);
        TraceAction last = trace.get(trace.size() - 2).action(); // the newest entry is this snapshot's own
        assertEquals(TraceAction.SEGMENT_FREE, last);
        assertEquals(TraceAction.SNAPSHOT, trace.get(trace.size() - 1).action());
        assertTrue(trace.stream().allMatch(e -> e.frames().isEmpty()), "context 'state' keeps no stacks in the trace");
    }

    @ParameterizedTest(name = "context {0}")
    @ValueSource(strings = {"alloc", "all", "state"})
    void freeAndAllocStacks(String context) {
        alloc.recordMemoryHistory("all", context, "java", 100_000);
        long p = allocateTheTensor();
        freeTheTensor(p);
        releaseEverything();
        List<TraceEntry> trace = alloc.snapshot().deviceTraces().get(0);
        List<String> actions = trace.stream().map(e -> e.action().pytorchName()).collect(Collectors.toList());
        assertEquals(List.of("segment_alloc", "alloc", "free_requested", "free_completed", "segment_free", "snapshot"), actions);
        assertEquals(!context.equals("state"), mentions(trace, "allocateTheTensor"), "allocating function");
        assertEquals(context.equals("all"), mentions(trace, "freeTheTensor"), "freeing function");
        assertEquals(context.equals("all"), mentions(trace, "releaseEverything"), "empty_cache caller in segment_free");
        assertEquals(511_284, trace.get(1).size(), "alloc carries the requested size");
        assertEquals(2_097_152, trace.get(0).size(), "segment_alloc carries the segment size");
    }

    @Test
    void ringBufferKeepsNewestAndStateKeepsOne() {
        alloc.recordMemoryHistory("all", "all", "none", 3);
        for (int i = 0; i < 5; i++) {
            alloc.free(alloc.malloc(1000 + i));
        }
        List<TraceEntry> t = alloc.snapshot().deviceTraces().get(0);
        assertEquals(3, t.size());
        assertEquals(TraceAction.SNAPSHOT, t.get(2).action());
        assertEquals(1004, t.get(1).size());
        assertTrue(t.stream().allMatch(e -> e.frames().isEmpty()), "stacks 'none'");
        alloc.recordMemoryHistory("state", "all", "java", 100);
        alloc.free(alloc.malloc(77));
        assertEquals(1, alloc.snapshot().deviceTraces().get(0).size(), "enabled='state' keeps a ring of 1");
        alloc.stopMemoryHistory();
        assertTrue(alloc.snapshot().deviceTraces().get(0).isEmpty());
    }

    @Test
    void historyContextSwitching() {
        alloc.recordMemoryHistory("all", "all", "java", 1000);
        long on = allocateTheTensor();
        alloc.stopMemoryHistory();
        long off = alloc.malloc(5000);
        alloc.recordMemoryHistory("all", "all", "java", 1000);
        long on2 = alloc.malloc(6000);
        List<TraceEntry> t = alloc.snapshot().deviceTraces().get(0);
        assertFalse(t.stream().anyMatch(e -> e.action() == TraceAction.ALLOC && e.addr() == off));
        assertTrue(t.stream().anyMatch(e -> e.action() == TraceAction.ALLOC && e.addr() == on2));
        alloc.free(on);
        alloc.free(off);
        alloc.free(on2);
    }

    @Test
    void invalidHistoryArgumentsAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> alloc.recordMemoryHistory("everything", "all", "java", 10));
        assertTrue(e.getMessage().startsWith("expected state to be 'state', 'all', or None"));
        e = assertThrows(IllegalArgumentException.class, () -> alloc.recordMemoryHistory("all", "most", "java", 10));
        assertTrue(e.getMessage().startsWith("expected context to be 'state', 'alloc', 'all', or None"));
        assertThrows(IllegalArgumentException.class, () -> alloc.recordMemoryHistory("all", "all", "cpp", 10));
        assertThrows(IllegalArgumentException.class, () -> alloc.recordMemoryHistory("all", "all", "java", 0));
    }

    @Test
    void snapshotRoundTripsThroughPickleAndOomIsTraced() throws Exception {
        DeviceBackend small = Devices.open("sim:64MiB");
        CachingAllocator a = CachingAllocator.create(small, AllocatorConfig.DEFAULT.parse("expandable_segments:True"));
        a.recordMemoryHistory(1000);
        long p = a.malloc(30L << 20);
        long q = a.malloc(1000);
        assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(60L << 20));
        MemorySnapshot snap = a.snapshot();
        List<TraceEntry> t = snap.deviceTraces().get(0);
        TraceEntry oom = t.stream().filter(e -> e.action() == TraceAction.OOM).findFirst().orElseThrow();
        assertEquals(60L << 20, oom.size(), "oom carries the rounded request");
        assertEquals(small.memGetInfo().free(), oom.deviceFree());
        assertTrue(t.stream().anyMatch(e -> e.action() == TraceAction.SEGMENT_MAP));
        assertTrue(snap.segments().stream().allMatch(SegmentInfo::isExpandable));
        assertEquals(true, snap.allocatorSettings().get("expandable_segments"));
        byte[] pickle = SnapshotWriter.toPickle(snap);
        MemorySnapshot back = SnapshotReader.read(pickle, "ours.pickle");
        assertEquals(snap, back);
        a.free(p);
        a.free(q);
        a.close();
        small.close();
    }
}
