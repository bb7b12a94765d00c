package io.vram4j.memory.viz;

import io.vram4j.testsupport.SharedData;
import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.replay.Fragmentation;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.ReplayReport;
import io.vram4j.replay.Replayer;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The timeline of the real PyTorch snapshots in {@code shared/data/snapshots} (skipped when absent). */
class RealSnapshotTimelineTest {

    static MemorySnapshot load(String name) throws Exception {
        return SnapshotReader.read(SharedData.snapshot(name));
    }

    /** Segments and blocks as comparable lines: address, size, state (and per block its requested size). */
    static List<String> describe(List<SegmentInfo> segments) {
        List<String> out = new ArrayList<>();
        for (SegmentInfo s : segments) {
            out.add("segment 0x" + Long.toHexString(s.address()) + " " + s.totalSize() + " " + s.segmentType()
                    + " allocated " + s.allocatedSize());
            for (BlockInfo b : s.blocks()) {
                out.add("  block 0x" + Long.toHexString(b.address()) + " " + b.size() + " " + b.state().pytorchName()
                        + (b.isActive() ? " requested " + b.requestedSize() : ""));
            }
        }
        return out;
    }

    static List<SegmentInfo> sorted(List<SegmentInfo> segments) {
        List<SegmentInfo> s = new ArrayList<>(segments);
        s.sort((a, b) -> Long.compareUnsigned(a.address(), b.address()));
        return s;
    }

    @Test
    void decomflPeaksEqualTheReplayAndFinalStateEqualsTheDump() throws Exception {
        MemorySnapshot s = load("decomfl-opt-zo-finetune_from-empty.pickle");
        MemoryTimeline t = MemoryTimeline.of(s, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES);
        ReplayReport r = Replayer.replay(s, ReplayOptions.EXACT).get(0);
        Headline h = t.headline();
        assertEquals(0, t.inconsistencies(), t.firstInconsistency());
        assertEquals(1_897_922_560L, h.peakReserved());
        assertEquals(r.recordedPeakReserved(), h.peakReserved());
        assertEquals(r.replayedPeakAllocated(), h.peakAllocated(), "peak allocated (block bytes) as the replay's");
        assertEquals(r.recordedPeakRequested(), h.peakRequested(), "top of the timeline = recorded peak requested");
        Fragmentation atPeak = r.atPeak();
        assertEquals(atPeak.reserved(), h.reservedAtPeak());
        assertEquals(atPeak.reservedUnallocated(), h.fragmentationAtPeak());
        assertEquals(atPeak.largestFreeBlock(), h.largestFreeAtPeak());
        assertEquals(atPeak.freeBlocks(), h.freeBlocksAtPeak());
        assertEquals(r.recordedOoms(), h.ooms());
        assertTrue(t.initialState().isEmpty(), "a from-empty trace starts with no segments");
        assertEquals(describe(sorted(s.segments(0))), describe(t.finalState()));
        assertEquals(describe(t.finalState()), describe(t.stateAt(t.steps())), "replaying the ops gives the same end");
    }

    @Test
    void cs336RebuildsTheStateBeforeTheTraceAndEndsAtTheDump() throws Exception {
        MemorySnapshot s = load("cs336-medium-ctx512_train-step_steady-state.pickle");
        MemoryTimeline t = MemoryTimeline.of(s, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES);
        ReplayReport r = Replayer.replay(s, ReplayOptions.EXACT).get(0);
        assertEquals(0, t.inconsistencies(), t.firstInconsistency());
        assertEquals(12_593_397_760L, t.initialState().stream().mapToLong(SegmentInfo::totalSize).sum());
        assertEquals(12_660_506_624L, t.headline().peakReserved());
        assertEquals(r.replayedPeakAllocated(), t.headline().peakAllocated());
        assertEquals(r.atPeak().reservedUnallocated(), t.headline().fragmentationAtPeak());
        assertEquals(describe(sorted(s.segments(0))), describe(t.finalState()));
        assertEquals(describe(t.finalState()), describe(t.stateAt(t.steps())));
        assertFalse(t.bands().isEmpty());
    }

    @Test
    void verlWithoutTraceShowsItsState() throws Exception {
        MemorySnapshot s = load("verl-megatron-vllm_segments-only.pickle");
        MemoryTimeline t = MemoryTimeline.of(s, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES);
        assertEquals(0, t.steps());
        assertEquals(describe(sorted(s.segments(0))), describe(t.stateAt(0)));
        assertEquals(s.reservedBytes(0), t.headline().peakReserved());
        assertEquals(s.allocatedBytes(0), t.headline().peakAllocated());
        assertEquals(Fragmentation.ofSnapshot(s.segments(0)).largestFreeBlock(), t.headline().largestFreeAtPeak());
    }

    /**
     * Bands are labelled by the first user frame; stacks without one (the backward pass on the autograd engine's
     * thread) by the autograd node or the operator the engine ran, never by the allocator's own C++ frames.
     */
    @Test
    void cs336BandsAreLabelledByUserFramesOrTheAutogradStep() throws Exception {
        MemoryTimeline t = MemoryTimeline.of(load("cs336-medium-ctx512_train-step_steady-state.pickle"), 0,
                MemoryTimeline.DEFAULT_MAX_ENTRIES);
        java.util.Map<String, Long> bytesBySite = new java.util.HashMap<>();
        for (Band b : t.bands()) {
            if (b.stack() >= 0) {
                bytesBySite.merge(t.sites().get(t.siteOf(b.stack())), b.size(), Long::sum);
            }
        }
        for (String site : bytesBySite.keySet()) {
            assertFalse(site.contains("(??:0)") || site.startsWith("at::") || site.startsWith("c10::"),
                    "no band is labelled by a C++ frame: " + site);
        }
        // the engine thread's allocations: gradient accumulation and the casts in validate_outputs
        assertTrue(bytesBySite.containsKey("AccumulateGrad (autograd)"), bytesBySite.keySet().toString());
        assertTrue(bytesBySite.containsKey("aten::to_dtype (autograd engine)"), bytesBySite.keySet().toString());
        assertTrue(bytesBySite.keySet().stream().anyMatch(s -> s.startsWith("log_softmax (nn_utils.py:13)")),
                bytesBySite.keySet().toString());
    }
}
