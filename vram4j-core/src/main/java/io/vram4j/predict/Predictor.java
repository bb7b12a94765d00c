package io.vram4j.predict;

import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.ReplayReport;
import io.vram4j.replay.Replayer;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Predicts the memory of a run at another value of one size parameter (batch size, sequence length) from two or
 * three recordings of the same program at small values.
 *
 * <p>The recordings' traces are aligned event by event ({@link Alignment}: allocations by stack frames and
 * order, frees by the allocation they free, one-off allocations passed over); each allocation's requested size is
 * modelled as a function of the parameter ({@link Growth}: affine for the batch, up to quadratic for the sequence
 * length; sizes that do not follow the model are refused); the trace at the target value is synthesized from the
 * recording with the largest value (its order, streams and frames; one-offs at their recorded sizes) and replayed
 * from an empty allocator through the exact allocator ({@link Replayer}, what-if mode: the device's own addresses,
 * the recorded settings unless others are given). Alignment is done once, in the constructor; each
 * {@link #predict} synthesizes and replays, milliseconds for traces of thousands of events.
 *
 * <p>Immutable after construction; {@link #predict} and {@link #largestFitting} may run on several threads.
 */
public final class Predictor {
    private final Growth growth;
    private final EventTrace ref;
    /** Recorded values, the reference's first. */
    private final long[] values;
    /** Per reference allocation ordinal: its size in each recording (reference first), or a single size for a one-off. */
    private final long[][] sizes;
    private final int oneOffs;
    private final Map<String, Object> settings;

    /**
     * Aligns the recordings and checks every size against the model.
     *
     * @param recordings two or three recordings at distinct values ({@link Growth#recordings()} at least)
     * @param growth how sizes grow with the parameter
     * @throws PredictionException when there are too few or too many recordings, values repeat, a trace does not
     *     start from an empty allocator, the traces do not align, or a size does not follow the model
     */
    public Predictor(List<Recording> recordings, Growth growth) {
        this.growth = java.util.Objects.requireNonNull(growth, "growth");
        if (recordings.size() < growth.recordings() || recordings.size() > 3) {
            throw new PredictionException(growth == Growth.QUADRATIC
                    ? "a quadratic model (sequence length) needs three recordings, got " + recordings.size()
                    : "predict needs two or three recordings, got " + recordings.size());
        }
        List<Recording> sorted = new ArrayList<>(recordings);
        sorted.sort(Comparator.comparingLong(Recording::value).reversed());
        for (int k = 1; k < sorted.size(); k++) {
            if (sorted.get(k).value() == sorted.get(k - 1).value()) {
                throw new PredictionException(sorted.get(k).name() + " and " + sorted.get(k - 1).name()
                        + " are both at " + sorted.get(k).value() + "; the recordings need distinct values");
            }
        }
        Map<List<Frame>, Integer> keys = new HashMap<>();
        List<EventTrace> traces = sorted.stream().map(r -> EventTrace.of(r, keys)).toList();
        this.ref = traces.getFirst();
        this.values = sorted.stream().mapToLong(Recording::value).toArray();
        this.settings = sorted.getFirst().snapshot().allocatorSettings();
        int[][] pairs = new int[traces.size()][];
        int skipped = 0;
        for (int k = 1; k < traces.size(); k++) {
            pairs[k] = new int[ref.allocs()];
            skipped += Alignment.align(ref, traces.get(k), pairs[k]);
        }
        this.oneOffs = skipped;
        this.sizes = new long[ref.allocs()][];
        for (int a = 0; a < ref.allocs(); a++) {
            long[] s = new long[traces.size()];
            s[0] = ref.size[ref.allocEvent[a]];
            boolean all = true;
            for (int k = 1; k < traces.size() && all; k++) {
                int o = pairs[k][a];
                all = o >= 0;
                if (all) {
                    s[k] = traces.get(k).size[traces.get(k).allocEvent[o]];
                }
            }
            sizes[a] = all ? s : new long[] {s[0]};
            if (all && growth == Growth.AFFINE && s.length == 3
                    && BigInteger.valueOf(s[0] - s[1]).multiply(BigInteger.valueOf(values[0] - values[2]))
                    .compareTo(BigInteger.valueOf(s[0] - s[2]).multiply(BigInteger.valueOf(values[0] - values[1]))) != 0) {
                throw new PredictionException(String.format(Locale.ROOT, "%s: sizes %,d, %,d and %,d at %d, %d and %d are not affine "
                                + "in the parameter (for a sequence length use the quadratic model)", ref.describe(ref.allocEvent[a]),
                        s[0], s[1], s[2], values[0], values[1], values[2]));
            }
        }
    }

    /** @return the recorded values, largest first */
    public long[] values() {
        return values.clone();
    }

    /** @return allocations passed over as one-offs during alignment */
    public int oneOffs() {
        return oneOffs;
    }

    /**
     * Synthesizes the trace at {@code value} and replays it.
     *
     * @param value the parameter's value, at least 1
     * @param conf allocator settings ({@code PYTORCH_CUDA_ALLOC_CONF} format), or null for the recorded ones
     * @param capacity device capacity in bytes, or 0 for an unbounded device
     * @return the prediction
     * @throws PredictionException when an allocation's size at {@code value} would be below 1 byte
     * @throws io.vram4j.alloc.config.AllocatorConfigException when the settings are invalid
     */
    public Prediction predict(long value, String conf, long capacity) {
        long t0 = System.nanoTime();
        List<TraceEntry> trace = synthesize(value);
        MemorySnapshot snapshot = new MemorySnapshot(List.of(), List.of(trace), settings, List.of());
        ReplayReport r = Replayer.replay(snapshot, ReplayOptions.whatIf(conf, capacity)).getFirst();
        int oom = r.firstPredictedOomEntry();
        List<Frame> frames = oom >= 0 ? trace.get(oom).frames() : List.of();
        return new Prediction(value, r.replayedPeakAllocated(), r.replayedPeakReserved(), r.atPeak(), r.capacity(),
                r.capacitySource(), r.conf(), r.predictedOoms() == 0, oom, oom >= 0 ? trace.get(oom).size() : 0, frames,
                trace.size(), oneOffs, (System.nanoTime() - t0) / 1e9);
    }

    /**
     * The largest value that fits on {@code capacity}: doubling from the largest recorded value until a prediction
     * runs out of memory (or {@code upper} is reached), then binary search; below the recorded values when even
     * they do not fit.
     *
     * @param conf allocator settings, or null for the recorded ones
     * @param capacity device capacity in bytes, at least 1
     * @param upper the largest value to try
     * @return the largest value that fits (0 when not even 1 does), with the predictions tried, in order
     */
    public Search largestFitting(String conf, long capacity, long upper) {
        if (capacity < 1) {
            throw new IllegalArgumentException("the search needs a capacity, got " + capacity);
        }
        List<Prediction> tried = new ArrayList<>();
        long good = 0;
        long bad;
        long v = Math.min(values[0], upper);
        Prediction p = tryAt(v, conf, capacity, tried);
        if (p.fits()) {
            good = v;
            bad = -1;
            while (bad < 0 && good < upper) {
                long next = Math.min(upper, good > upper / 2 ? upper : 2 * good);
                if (tryAt(next, conf, capacity, tried).fits()) {
                    good = next;
                } else {
                    bad = next;
                }
            }
            if (bad < 0) {
                return new Search(good, true, tried);
            }
        } else {
            bad = v;
        }
        while (bad - good > 1) {
            long mid = good + (bad - good) / 2;
            if (tryAt(mid, conf, capacity, tried).fits()) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        return new Search(good, false, tried);
    }

    private Prediction tryAt(long v, String conf, long capacity, List<Prediction> tried) {
        Prediction p = predict(v, conf, capacity);
        tried.add(p);
        return p;
    }

    /**
     * A search for the largest value that fits.
     *
     * @param largest the largest value that fits, 0 when not even 1 does
     * @param hitUpperBound true when the upper bound itself fits (a larger value may fit too)
     * @param tried the predictions made, in order
     */
    public record Search(long largest, boolean hitUpperBound, List<Prediction> tried) {
        /** Copies the list. */
        public Search {
            tried = List.copyOf(tried);
        }
    }

    List<TraceEntry> synthesize(long value) {
        List<TraceEntry> out = new ArrayList<>(ref.events());
        for (int i = 0; i < ref.events(); i++) {
            if (ref.kind[i] == EventTrace.ALLOC) {
                int a = Alignment.ordinal(ref, i);
                long size = sizeAt(sizes[a], value);
                if (size < 1) {
                    throw new PredictionException(String.format(Locale.ROOT, "%s: its size would be %,d bytes at %d; the %s model "
                            + "does not hold that far from the recordings", ref.describe(i), size, value,
                            growth.name().toLowerCase(Locale.ROOT)));
                }
                out.add(new TraceEntry(TraceAction.ALLOC, address(a), size, ref.stream[i], i, 0, ref.frames.get(a), null, null));
            } else {
                int a = ref.ref[i];
                out.add(new TraceEntry(TraceAction.FREE_COMPLETED, address(a), 0, ref.stream[i], i, 0, List.of(), null, null));
            }
        }
        return out;
    }

    /** A synthetic address per allocation: unique, 512-byte aligned as the allocator's blocks. */
    private static long address(int ordinal) {
        return (ordinal + 1L) << 9;
    }

    /** The model's size at {@code t}, rounded up to a byte. */
    private long sizeAt(long[] s, long t) {
        if (s.length == 1) {
            return s[0];
        }
        if (growth == Growth.AFFINE) {
            // through the two largest values: s0 + (s0 - s1) * (t - v0) / (v0 - v1)
            BigInteger num = BigInteger.valueOf(s[0] - s[1]).multiply(BigInteger.valueOf(t - values[0]));
            return s[0] + ceilDiv(num, BigInteger.valueOf(values[0] - values[1]));
        }
        // Lagrange through the three points, exact in rationals: sum_k s_k * prod_{m != k} (t - v_m) / (v_k - v_m)
        BigInteger den = BigInteger.ONE;
        BigInteger num = BigInteger.ZERO;
        for (int k = 0; k < 3; k++) {
            BigInteger n = BigInteger.valueOf(s[k]);
            BigInteger d = BigInteger.ONE;
            for (int m = 0; m < 3; m++) {
                if (m != k) {
                    n = n.multiply(BigInteger.valueOf(t - values[m]));
                    d = d.multiply(BigInteger.valueOf(values[k] - values[m]));
                }
            }
            num = num.multiply(d).add(n.multiply(den));
            den = den.multiply(d);
        }
        return ceilDiv(num, den);
    }

    private static long ceilDiv(BigInteger num, BigInteger den) {
        if (den.signum() < 0) {
            num = num.negate();
            den = den.negate();
        }
        BigInteger[] qr = num.divideAndRemainder(den);
        BigInteger q = qr[1].signum() > 0 ? qr[0].add(BigInteger.ONE) : qr[0];
        return q.longValueExact();
    }
}
