package io.vram4j.memory.viz;

import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.BlockState;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.PoolId;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.ReplayReport;
import io.vram4j.replay.Replayer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.vram4j.memory.snapshot.TraceAction.ALLOC;
import static io.vram4j.memory.snapshot.TraceAction.FREE_COMPLETED;
import static io.vram4j.memory.snapshot.TraceAction.FREE_REQUESTED;
import static io.vram4j.memory.snapshot.TraceAction.SEGMENT_ALLOC;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MemoryTimelineTest {
    static final long MIB = 1L << 20;
    static final long BASE = 0x7f0000000000L;

    static TraceEntry e(TraceAction a, long addr, long size, String site) {
        return TraceEntry.of(a, addr, size, 0, TraceEntry.NO_TIME, site == null ? List.of()
                : List.of(new Frame("linear", "/usr/lib/python3/site-packages/torch/nn/functional.py", 12),
                        new Frame(site, "/home/me/model.py", 40)));
    }

    /** One 20 MiB segment: A, B, C allocated; A freed; D reuses A's block without splitting it; C freed; an OOM. */
    static List<TraceEntry> trace() {
        return List.of(
                e(SEGMENT_ALLOC, BASE, 20 * MIB, null),
                e(ALLOC, BASE, 2 * MIB, "a"),
                e(ALLOC, BASE + 2 * MIB, 3 * MIB, "b"),
                e(ALLOC, BASE + 5 * MIB, 3 * MIB / 2, "c"),
                e(FREE_REQUESTED, BASE, 2 * MIB, "a"),
                e(FREE_COMPLETED, BASE, 2 * MIB, "a"),
                e(ALLOC, BASE, 5 * MIB / 4, "d"),
                e(FREE_REQUESTED, BASE + 5 * MIB, 3 * MIB / 2, "c"),
                e(FREE_COMPLETED, BASE + 5 * MIB, 3 * MIB / 2, "c"),
                TraceEntry.oom(64 * MIB, 0, TraceEntry.NO_TIME, 100, List.of()));
    }

    static BlockInfo block(long addr, long size, long req, BlockState st) {
        return new BlockInfo(addr, size, req, st, List.of());
    }

    static SegmentInfo segment(long addr, long size, List<BlockInfo> blocks) {
        long alloc = blocks.stream().filter(BlockInfo::isAllocated).mapToLong(BlockInfo::size).sum();
        long active = blocks.stream().filter(BlockInfo::isActive).mapToLong(BlockInfo::size).sum();
        long req = blocks.stream().filter(BlockInfo::isActive).mapToLong(BlockInfo::requestedSize).sum();
        return new SegmentInfo(0, addr, size, alloc, active, req, 0, size == 2 * MIB ? SegmentInfo.SMALL : SegmentInfo.LARGE,
                PoolId.DEFAULT, false, List.of(), blocks);
    }

    static MemorySnapshot dumpAfterTrace() {
        SegmentInfo s = segment(BASE, 20 * MIB, List.of(
                block(BASE, 2 * MIB, 5 * MIB / 4, BlockState.ACTIVE_ALLOCATED),
                block(BASE + 2 * MIB, 3 * MIB, 3 * MIB, BlockState.ACTIVE_ALLOCATED),
                block(BASE + 5 * MIB, 15 * MIB, 0, BlockState.INACTIVE)));
        return new MemorySnapshot(List.of(s), List.of(trace()), Map.of(), List.of());
    }

    @Test
    void bandsStackInAllocationOrderAndStepDownWhenOneBelowIsFreed() {
        MemoryTimeline t = MemoryTimeline.of(dumpAfterTrace(), 0, 100);
        assertEquals(6, t.steps());
        assertEquals(4, t.bands().size());
        Band a = t.bands().get(0), b = t.bands().get(1), c = t.bands().get(2), d = t.bands().get(3);
        assertEquals(1, a.start());
        assertEquals(4, a.end());
        assertEquals(0, a.offsetAt(3));
        assertEquals(2 * MIB, b.offsetAt(2), "B sits on A");
        assertEquals(0, b.offsetAt(4), "and drops when A is freed");
        assertEquals(7, b.end(), "B is alive at the end");
        assertEquals(5 * MIB, c.offsetAt(3));
        assertEquals(3 * MIB, c.offsetAt(5));
        assertEquals(6, c.end());
        assertEquals(9 * MIB / 2, d.offsetAt(5), "D goes on top of B and C");
        assertEquals(3 * MIB, d.offsetAt(6), "and drops when C below it is freed");
        assertEquals(2 * MIB, d.blockSize(), "the 0.75 MiB remainder stays in D's block (large pool, not > 1 MiB)");
        assertEquals(5 * MIB / 4, d.size());
        long[] total = new long[7];
        for (int s = 0; s <= 6; s++) {
            total[s] = t.total(s);
        }
        assertArrayEquals(new long[] {0, 2 * MIB, 5 * MIB, 13 * MIB / 2, 9 * MIB / 2, 23 * MIB / 4, 17 * MIB / 4}, total);
        for (int s = 0; s <= 6; s++) {
            long sum = 0;
            for (Band x : t.bands()) {
                if (x.start() <= s && s < x.end()) {
                    assertTrue(x.offsetAt(s) + x.size() <= t.total(s));
                    sum += x.size();
                }
            }
            assertEquals(t.total(s), sum, "bands fill the stack exactly at step " + s);
        }
        assertEquals("a (model.py:40)", t.sites().get(t.siteOf(a.stack())), "the site is the innermost non-torch frame");
    }

    @Test
    void headlineFiguresAndStateAtAMoment() {
        MemoryTimeline t = MemoryTimeline.of(dumpAfterTrace(), 0, 100);
        Headline h = t.headline();
        assertEquals(13 * MIB / 2, h.peakAllocated());
        assertEquals(3, h.peakAllocatedEntry(), "first reached when C was allocated");
        assertEquals(20 * MIB, h.peakReserved());
        assertEquals(0, h.peakReservedEntry());
        assertEquals(27 * MIB / 2, h.fragmentationAtPeak());
        assertEquals(27 * MIB / 2, h.largestFreeAtPeak());
        assertEquals(1, h.freeBlocksAtPeak());
        assertEquals(1, h.ooms());
        assertEquals(4, h.allocs());
        assertEquals(1, t.ooms().size());
        assertEquals(9, t.ooms().get(0)[0]);
        assertEquals(6, t.ooms().get(0)[1]);
        assertEquals(0, t.inconsistencies());

        SegmentInfo at4 = t.stateAt(4).get(0);
        assertEquals(List.of("0x7f0000000000 2097152 inactive", "0x7f0000200000 3145728 active_allocated",
                "0x7f0000500000 1572864 active_allocated", "0x7f0000680000 14155776 inactive"), lines(at4));
        assertEquals(9 * MIB / 2, at4.allocatedSize());
        assertTrue(t.stateAt(0).isEmpty(), "before the trace: nothing");
        assertEquals(RealSnapshotTimelineTest.describe(dumpAfterTrace().segments()),
                RealSnapshotTimelineTest.describe(t.stateAt(6)), "the end is the dump");
    }

    static List<String> lines(SegmentInfo s) {
        List<String> out = new ArrayList<>();
        for (BlockInfo b : s.blocks()) {
            out.add("0x" + Long.toHexString(b.address()) + " " + b.size() + " " + b.state().pytorchName());
        }
        return out;
    }

    @Test
    void allocationsBeyondMaxEntriesGoToTheSummaryBand() {
        MemoryTimeline t = MemoryTimeline.of(dumpAfterTrace(), 0, 1);
        assertEquals(1, t.bands().size());
        Band b = t.bands().get(0);
        assertEquals(3 * MIB, b.size(), "the largest allocation keeps its band");
        assertEquals(0, b.offsetAt(2), "and sits at the bottom: the others are summarized on top");
        assertEquals(7 * MIB / 2, t.summary(3));
        assertEquals(13 * MIB / 2, t.total(3));
        assertEquals(11 * MIB / 4, t.summary(5));
    }

    @Test
    void midRunTraceStartsFromTheDumpMinusTheTrace() {
        // X (4 MiB) was allocated before the trace and is freed in it; P stays allocated throughout
        SegmentInfo dump = segment(BASE, 20 * MIB, List.of(
                block(BASE, 4 * MIB, 0, BlockState.INACTIVE),
                block(BASE + 4 * MIB, 2 * MIB, 2 * MIB, BlockState.ACTIVE_ALLOCATED),
                block(BASE + 6 * MIB, 14 * MIB, 0, BlockState.INACTIVE)));
        MemorySnapshot s = new MemorySnapshot(List.of(dump), List.of(List.of(
                e(FREE_REQUESTED, BASE, 4 * MIB - 100, null), e(FREE_COMPLETED, BASE, 4 * MIB - 100, null))), Map.of(), List.of());
        MemoryTimeline t = MemoryTimeline.of(s, 0, 100);
        assertEquals(0, t.inconsistencies(), t.firstInconsistency());
        assertEquals(List.of("0x7f0000000000 4194304 active_allocated", "0x7f0000400000 2097152 active_allocated",
                "0x7f0000600000 14680064 inactive"), lines(t.initialState().get(0)));
        assertEquals(2, t.bands().size());
        Band p = t.bands().get(1);
        assertEquals(BASE + 4 * MIB, p.address());
        assertEquals(4 * MIB - 100, p.offsetAt(0), "P sits on X before the trace");
        assertEquals(0, p.offsetAt(1));
        assertEquals(6 * MIB, t.headline().peakAllocated());
        assertEquals(RealSnapshotTimelineTest.describe(List.of(dump)), RealSnapshotTimelineTest.describe(t.finalState()));
    }

    @Test
    void smallPoolBlocksSplitAtHalfAKilobyte() {
        MemorySnapshot s = new MemorySnapshot(List.of(), List.of(List.of(
                e(SEGMENT_ALLOC, BASE, 2 * MIB, null), e(ALLOC, BASE, 1000, "s"), e(ALLOC, BASE + 1024, 1, "t"))),
                Map.of(), List.of());
        MemoryTimeline t = MemoryTimeline.of(s, 0, 100);
        assertEquals(List.of("0x7f0000000000 1024 active_allocated", "0x7f0000000400 512 active_allocated",
                "0x7f0000000600 2095616 inactive"), lines(t.finalState().get(0)));
        assertEquals("small", t.finalState().get(0).segmentType());
        assertEquals(1536, t.headline().peakAllocated());
    }

    @Test
    void inconsistentEntriesAreCountedNotFatal() {
        MemorySnapshot s = new MemorySnapshot(List.of(), List.of(List.of(
                e(SEGMENT_ALLOC, BASE, 2 * MIB, null), e(ALLOC, BASE + 4 * MIB, 1000, "s"))), Map.of(), List.of());
        MemoryTimeline t = MemoryTimeline.of(s, 0, 100);
        assertEquals(1, t.inconsistencies());
        assertTrue(t.firstInconsistency().startsWith("entry 1: alloc at 0x7f0000400000"), t.firstInconsistency());
    }

    @Test
    void badArgumentsAreRefusedWithTheReason() {
        MemorySnapshot s = dumpAfterTrace();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MemoryTimeline.of(s, 3, 100));
        assertTrue(e.getMessage().contains("device 3") && e.getMessage().contains("[0]"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> MemoryTimeline.of(s, 0, 0));
        IllegalArgumentException conf = assertThrows(IllegalArgumentException.class, () -> MemoryTimeline.of(
                new MemorySnapshot(s.segments(), s.deviceTraces(), Map.of("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:x"),
                        List.of()), 0, 100));
        assertTrue(conf.getMessage().contains("max_split_size_mb"), conf.getMessage());
    }

    @Test
    void ourOwnRecordingMatchesTheReplayAndEndsAtTheDump() {
        MemorySnapshot s = SyntheticSnapshots.training(20_000, 7);
        MemoryTimeline t = MemoryTimeline.of(s, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES);
        ReplayReport r = Replayer.replay(s, ReplayOptions.EXACT).get(0);
        assertEquals(0, t.inconsistencies(), t.firstInconsistency());
        assertEquals(r.recordedPeakReserved(), t.headline().peakReserved());
        assertEquals(r.replayedPeakAllocated(), t.headline().peakAllocated());
        assertEquals(r.atPeak().largestFreeBlock(), t.headline().largestFreeAtPeak());
        assertEquals(RealSnapshotTimelineTest.describe(RealSnapshotTimelineTest.sorted(s.segments(0))),
                RealSnapshotTimelineTest.describe(t.finalState()));
        int mid = t.steps() / 2;
        assertEquals(t.allocated(mid), t.stateAt(mid).stream().mapToLong(SegmentInfo::allocatedSize).sum());
        assertEquals(t.reserved(mid), t.stateAt(mid).stream().mapToLong(SegmentInfo::totalSize).sum());
    }
}
