package io.vram4j.predict;

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
import java.util.function.LongUnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PredictorTest {
    static final List<Frame> INPUT = List.of(new Frame("load", "Data.java", 10));
    static final List<Frame> ACT = List.of(new Frame("forward", "Model.java", 20));
    static final List<Frame> SCORES = List.of(new Frame("attention", "Model.java", 30));
    static final List<Frame> WEIGHT = List.of(new Frame("init", "Model.java", 5));
    static final List<Frame> WORKSPACE = List.of(new Frame("workspace", "Lib.java", 99));

    /** A program's trace at parameter p: a weight, then steps of input, activation and scores allocated and freed. */
    static final class Program {
        final List<TraceEntry> trace = new ArrayList<>();
        long next = 1 << 20;

        long alloc(long size, List<Frame> frames) {
            long addr = next;
            next += (size + 511) / 512 * 512 + 512;
            trace.add(TraceEntry.of(TraceAction.ALLOC, addr, size, 0, trace.size(), frames));
            return addr;
        }

        void free(long addr) {
            trace.add(TraceEntry.of(TraceAction.FREE_COMPLETED, addr, 0, 0, trace.size(), List.of()));
        }

        MemorySnapshot snapshot() {
            return new MemorySnapshot(List.of(), List.of(trace), Map.of(), List.of());
        }
    }

    /** Weight of 3 MiB, then 3 steps: input (p x 3,000 bytes), activation (p x 40,000 + 4,096), scores(p). */
    static MemorySnapshot program(long p, LongUnaryOperator scores, boolean workspace) {
        Program g = new Program();
        g.alloc(3 << 20, WEIGHT);
        for (int step = 0; step < 3; step++) {
            long x = g.alloc(p * 3_000, INPUT);
            if (workspace && step == 1) {
                g.free(g.alloc(1 << 16, WORKSPACE));
            }
            long a = g.alloc(p * 40_000 + 4096, ACT);
            long s = g.alloc(scores.applyAsLong(p), SCORES);
            g.free(s);
            g.free(a);
            g.free(x);
        }
        return g.snapshot();
    }

    static ReplayReport replay(MemorySnapshot s, long capacity) {
        return Replayer.replay(s, ReplayOptions.whatIf(null, capacity)).getFirst();
    }

    static final LongUnaryOperator LINEAR = p -> 512 * p;
    static final LongUnaryOperator SQUARE = p -> 1_000 + 64 * p * p;

    @Test
    void affinePredictionEqualsTheReplayOfTheProgramAtTheTarget() {
        Predictor p = new Predictor(List.of(new Recording("b2", program(2, LINEAR, false), 2),
                new Recording("b4", program(4, LINEAR, false), 4)), Growth.AFFINE);
        for (long target : new long[] {32, 128, 1000}) {
            Prediction pred = p.predict(target, null, 0);
            ReplayReport truth = replay(program(target, LINEAR, false), 0);
            assertEquals(truth.replayedPeakReserved(), pred.peakReserved(), "at " + target);
            assertEquals(truth.replayedPeakAllocated(), pred.peakAllocated(), "at " + target);
            assertEquals(truth.atPeak(), pred.atPeak(), "at " + target);
            assertTrue(pred.fits());
        }
    }

    @Test
    void quadraticPredictionFollowsTheSequenceLength() {
        List<Recording> r = List.of(new Recording("t8", program(8, SQUARE, false), 8), new Recording("t16", program(16, SQUARE, false), 16),
                new Recording("t24", program(24, SQUARE, false), 24));
        Prediction pred = new Predictor(r, Growth.QUADRATIC).predict(512, null, 0);
        ReplayReport truth = replay(program(512, SQUARE, false), 0);
        assertEquals(truth.replayedPeakReserved(), pred.peakReserved());
        assertEquals(truth.replayedPeakAllocated(), pred.peakAllocated());
        // the affine model refuses the quadratic sizes, naming the allocation
        PredictionException e = assertThrows(PredictionException.class, () -> new Predictor(r, Growth.AFFINE));
        assertTrue(e.getMessage().contains("attention (Model.java:30)") && e.getMessage().contains("not affine"), e.getMessage());
        // and two recordings are not enough for a quadratic model
        PredictionException two = assertThrows(PredictionException.class, () -> new Predictor(r.subList(0, 2), Growth.QUADRATIC));
        assertTrue(two.getMessage().contains("three recordings"), two.getMessage());
    }

    @Test
    void outOfMemoryVerdictNamesTheFramesOfTheFailingAllocation() {
        Predictor p = new Predictor(List.of(new Recording("b2", program(2, LINEAR, false), 2),
                new Recording("b4", program(4, LINEAR, false), 4)), Growth.AFFINE);
        long target = 512;
        long peak = replay(program(target, LINEAR, false), 0).replayedPeakReserved();
        for (long capacity : new long[] {peak - (2 << 20), peak, peak + (20 << 20)}) {
            Prediction pred = p.predict(target, null, capacity);
            ReplayReport truth = replay(program(target, LINEAR, false), capacity);
            assertEquals(truth.predictedOoms() == 0, pred.fits(), "capacity " + capacity);
        }
        Prediction oom = p.predict(target, null, peak - (2 << 20));
        assertFalse(oom.fits());
        assertTrue(List.of(INPUT, ACT, SCORES).contains(oom.oomFrames()), oom.oomFrames().toString());
        assertTrue(oom.oomSize() > 0);
        Predictor.Search s = p.largestFitting(null, peak, 1 << 20);
        assertTrue(s.largest() >= target && !s.hitUpperBound(), s.toString());
        assertTrue(replay(program(s.largest(), LINEAR, false), peak).predictedOoms() == 0);
        assertTrue(replay(program(s.largest() + 1, LINEAR, false), peak).predictedOoms() > 0);
    }

    @Test
    void aOneOffAllocationIsPassedOver() {
        Predictor p = new Predictor(List.of(new Recording("b2", program(2, LINEAR, true), 2),
                new Recording("b4", program(4, LINEAR, false), 4)), Growth.AFFINE);
        assertEquals(1, p.oneOffs());
        assertEquals(replay(program(64, LINEAR, false), 0).replayedPeakReserved(), p.predict(64, null, 0).peakReserved());
    }

    @Test
    void tracesOfDifferentProgramsAreRefused() {
        Program other = new Program();
        other.free(other.alloc(100, WEIGHT));
        other.free(other.alloc(100, ACT));
        PredictionException e = assertThrows(PredictionException.class, () -> new Predictor(List.of(
                new Recording("a.pickle", program(2, LINEAR, false), 2), new Recording("b.pickle", other.snapshot(), 4)), Growth.AFFINE));
        assertTrue(e.getMessage().startsWith("the traces do not align: "), e.getMessage());
        assertTrue(e.getMessage().contains("b.pickle event "), e.getMessage());
    }

    @Test
    void badRecordingsAreRefused() {
        MemorySnapshot s = program(2, LINEAR, false);
        assertThrows(PredictionException.class, () -> new Predictor(List.of(new Recording("a", s, 2), new Recording("b", s, 2)), Growth.AFFINE));
        assertThrows(PredictionException.class, () -> new Predictor(List.of(new Recording("a", s, 2)), Growth.AFFINE));
        assertThrows(IllegalArgumentException.class, () -> new Recording("a", s, 0));
        PredictionException noTrace = assertThrows(PredictionException.class, () -> new Predictor(List.of(new Recording("a", s, 2),
                new Recording("segments.pickle", MemorySnapshot.ofSegments(List.of()), 4)), Growth.AFFINE));
        assertTrue(noTrace.getMessage().startsWith("segments.pickle: the snapshot has no trace"), noTrace.getMessage());
        // a trace recorded mid-run: the dump holds a segment no entry created
        SegmentInfo seg = new SegmentInfo(0, 0x7000_0000L, 2 << 20, 0, 0, 0, 0, SegmentInfo.LARGE, PoolId.DEFAULT, false, List.of(), List.of());
        MemorySnapshot mid = new MemorySnapshot(List.of(seg), s.deviceTraces(), Map.of(), List.of());
        PredictionException e = assertThrows(PredictionException.class, () -> new Predictor(List.of(new Recording("a", s, 2),
                new Recording("mid.pickle", mid, 4)), Growth.AFFINE));
        assertTrue(e.getMessage().contains("mid.pickle: the trace starts mid-run (2,097,152 bytes reserved"), e.getMessage());
        // a size that would be negative at the target
        Program shrink2 = new Program();
        shrink2.free(shrink2.alloc(20_000, ACT));
        Program shrink4 = new Program();
        shrink4.free(shrink4.alloc(10_000, ACT));
        Predictor p = new Predictor(List.of(new Recording("a", shrink2.snapshot(), 2), new Recording("b", shrink4.snapshot(), 4)), Growth.AFFINE);
        Program at3 = new Program();
        at3.free(at3.alloc(15_000, ACT));
        assertEquals(replay(at3.snapshot(), 0).replayedPeakAllocated(), p.predict(3, null, 0).peakAllocated(), "between the recordings");
        PredictionException neg = assertThrows(PredictionException.class, () -> p.predict(100, null, 0));
        assertTrue(neg.getMessage().contains("its size would be -470,000 bytes at 100"), neg.getMessage());
    }
}
