package io.vram4j.replay;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.memory.stats.MemoryStats;
import io.vram4j.testsupport.SharedData;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Note [Peak capture] in TraceReplayer: the state at the allocated peak taken during the full pass equals the one a
 * second pass measures by stopping at the peak entry, and the full pass gives up (leaving it to that second pass)
 * exactly where it must.
 */
class PeakCaptureTest {
    private static final long MiB = 1L << 20;

    /** What a report says at the peak, and whether the full pass alone produced it. */
    private record AtPeak(Fragmentation fragmentation, MemoryStats stats, boolean fromFullPass, int peakEntry) {
    }

    /** The report's figures at the peak, against a second pass that stops at the full pass's peak entry. */
    private static AtPeak checkAgainstSecondPass(MemorySnapshot s, ReplayOptions options) {
        AllocatorConfig recorded = Replayer.config(s, ReplayOptions.EXACT);
        AllocatorConfig config = Replayer.config(s, options);
        TraceAnalysis analysis = new TraceAnalysis(s.deviceTraces().get(0), s.segments(0), recorded);
        TraceReplayer full = new TraceReplayer(0, analysis, options, recorded, config, Integer.MIN_VALUE);
        ReplayReport fullReport = full.run();
        TraceReplayer second = new TraceReplayer(0, analysis, options, recorded, config, full.peakAllocatedEntry());
        assertNull(second.run(), "a measuring pass has no report");
        assertNotNull(second.atPeak());

        ReplayReport report = Replayer.replay(s, options).get(0);
        assertEquals(second.atPeak(), report.atPeak(), "fragmentation at the peak");
        assertEquals(second.statsAtPeak(), report.statsAtPeak(), "memory_stats at the peak");
        assertEquals(report.replayedPeakAllocated(), report.atPeak().allocated(), "the captured state is at the peak");
        if (fullReport.atPeak() != null) {
            assertEquals(second.atPeak(), fullReport.atPeak());
            assertEquals(second.statsAtPeak(), fullReport.statsAtPeak());
        }
        return new AtPeak(report.atPeak(), report.statsAtPeak(), fullReport.atPeak() != null, full.peakAllocatedEntry());
    }

    /**
     * @param climbSteps allocations that each raise the peak and are followed by a free of a smaller block
     * @param liveBeforeHistory blocks allocated before history recording starts (a trace that starts mid-run)
     */
    private static MemorySnapshot record(int climbSteps, int liveBeforeHistory, long seed) {
        try (DeviceBackend device = Devices.open("sim:" + (4096 * MiB))) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            Random rnd = new Random(seed);
            List<Long> live = new ArrayList<>();
            for (int i = 0; i < liveBeforeHistory; i++) {
                live.add(a.malloc(1 + rnd.nextLong(3 * MiB), device.defaultStream()));
            }
            a.recordMemoryHistory(1_000_000);
            for (int i = 0; i < climbSteps; i++) {
                live.add(a.malloc(2 * MiB + rnd.nextLong(MiB), device.defaultStream()));
                live.add(a.malloc(1 + rnd.nextLong(4096), device.defaultStream()));
                a.free(live.remove(live.size() - 1)); // the peak was just raised; this free leaves it
            }
            for (int i = 0; i < 200 && !live.isEmpty(); i++) {
                if (rnd.nextBoolean()) {
                    a.free(live.remove(rnd.nextInt(live.size())));
                } else {
                    live.add(a.malloc(1 + rnd.nextLong(MiB), device.defaultStream()));
                }
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
    void aFewPeaksAreCapturedInTheFullPass() {
        AtPeak p = checkAgainstSecondPass(record(10, 0, 1), ReplayOptions.EXACT);
        assertTrue(p.fromFullPass(), "10 peaks need no second pass");
    }

    @Test
    void aPeakBeforeTheFirstEntryIsTheRebuiltInitialState() {
        // Mid-run trace whose first entries are frees: nothing raises allocated above the rebuilt initial state.
        try (DeviceBackend device = Devices.open("sim:" + (1024 * MiB))) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            List<Long> live = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                live.add(a.malloc((i + 1) * MiB, device.defaultStream()));
            }
            a.recordMemoryHistory(1000);
            for (int i = 0; i < 10; i++) {
                a.free(live.remove(live.size() - 1));
            }
            live.add(a.malloc(MiB, device.defaultStream()));
            MemorySnapshot s = a.snapshot();
            AtPeak p = checkAgainstSecondPass(s, ReplayOptions.EXACT);
            assertTrue(p.fromFullPass());
            assertEquals(-1, p.peakEntry(), "allocated memory peaked before the first entry");
            assertTrue(p.fragmentation().allocated() >= 210 * MiB, "1 + 2 + ... + 20 MiB live when the trace starts");
            for (long x : live) {
                a.free(x);
            }
            a.close();
        }
    }

    @Test
    void aTraceThatClimbsInManyStepsLeavesThePeakToASecondPass() {
        AtPeak p = checkAgainstSecondPass(record(TraceReplayer.MAX_PEAK_CAPTURES + 5, 0, 2), ReplayOptions.EXACT);
        assertTrue(!p.fromFullPass(), "more peaks than MAX_PEAK_CAPTURES");
        AtPeak below = checkAgainstSecondPass(record(TraceReplayer.MAX_PEAK_CAPTURES - 5, 0, 2), ReplayOptions.EXACT);
        assertTrue(below.fromFullPass(), "fewer peaks than MAX_PEAK_CAPTURES");
    }

    @Test
    void anAllocThatFailsAfterAPeakLeavesItToASecondPass() {
        // A what-if on a device too small for the trace: lenient, failed allocs are skipped. The out-of-memory path
        // may release cached segments after a peak was set, so the full pass cannot keep its capture.
        MemorySnapshot s = record(30, 8, 3);
        ReplayReport exact = Replayer.replay(s, ReplayOptions.EXACT).get(0);
        long tight = exact.replayedPeakReserved() * 3 / 4;
        AtPeak p = checkAgainstSecondPass(s, ReplayOptions.whatIf(null, tight));
        ReplayReport r = Replayer.replay(s, ReplayOptions.whatIf(null, tight)).get(0);
        assertTrue(r.predictedOoms() > 0, "the smaller device runs out of memory");
        assertNotNull(p.fragmentation());
    }

    @Test
    void anOomPathThatReleasesACachedSegmentAfterAPeakIsNotCapturedLate() {
        // Recorded without a limit: A (40 MiB) is freed and stays cached, B (50 MiB) sets the peak, C (60 MiB) follows.
        MemorySnapshot s;
        try (DeviceBackend device = Devices.open("sim:" + (1024 * MiB))) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            a.recordMemoryHistory(1000);
            a.free(a.malloc(40 * MiB, device.defaultStream()));
            long b = a.malloc(50 * MiB, device.defaultStream());
            long c = a.malloc(60 * MiB, device.defaultStream());
            a.free(b);
            a.free(c);
            s = a.snapshot();
            a.close();
        }
        // On 100 MiB, C's out-of-memory path releases A's cached segment and still fails: the peak is B's, with A's
        // segment reserved, a state the full pass no longer has when the next free comes.
        ReplayOptions small = ReplayOptions.whatIf(null, 100 * MiB);
        AtPeak p = checkAgainstSecondPass(s, small);
        assertEquals(1, Replayer.replay(s, small).get(0).predictedOoms(), "C does not fit");
        assertTrue(!p.fromFullPass(), "the failed alloc after the peak leaves it to a second pass");
        assertEquals(90 * MiB, p.fragmentation().reserved(), "A's cached segment and B's at the peak");
    }

    @Test
    void realSnapshotsGiveTheSecondPassFigures() throws IOException {
        for (String name : List.of("decomfl-opt-zo-finetune_from-empty.pickle",
                "cs336-medium-ctx512_train-step_steady-state.pickle")) {
            MemorySnapshot s = SnapshotReader.read(SharedData.snapshot(name));
            checkAgainstSecondPass(s, ReplayOptions.EXACT);
            checkAgainstSecondPass(s, ReplayOptions.whatIf("expandable_segments:True", 0));
        }
        MemorySnapshot decomfl = SnapshotReader.read(SharedData.snapshot("decomfl-opt-zo-finetune_from-empty.pickle"));
        assertTrue(checkAgainstSecondPass(decomfl, ReplayOptions.EXACT).fromFullPass(),
                "decomfl's allocated memory leaves a new peak 4 times: one pass");
    }

    @Test
    void aSearchPassStoppingAtTheFirstOomCapturesNothing() {
        MemorySnapshot s = record(10, 0, 4);
        ReplayReport once = Replayer.replayOnce(s, 0, ReplayOptions.EXACT);
        assertNull(once.atPeak());
        assertNull(once.statsAtPeak());
    }
}
