package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Helpers for the compute tests: segments of random floats, element access, comparisons. */
final class TestData {

    static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** Sizes every range kernel is tried on: tails, single vectors and both sides of vector multiples. */
    static final int[] SIZES = {0, 1, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 100, 1000, 4099};

    private TestData() {
    }

    /** @return the kernels under test: scalar, and vector when the incubator module is present */
    static List<Kernels> kernels() {
        List<Kernels> ks = new ArrayList<>();
        ks.add(Kernels.scalar());
        if (Kernels.vectorAvailable()) {
            ks.add(Kernels.vector());
            ks.add(Kernels.vector().withThreads(1));
            ks.add(Kernels.vector().withThreads(3));
        }
        return ks;
    }

    /** A native segment of {@code n} floats, uniformly random in {@code [lo, hi)}. */
    static MemorySegment random(Arena arena, Random rnd, long n, float lo, float hi) {
        MemorySegment s = arena.allocate(Math.max(1, n) * Float.BYTES, 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(F, i, lo + (hi - lo) * rnd.nextFloat());
        }
        return s;
    }

    static MemorySegment filled(Arena arena, long n, float v) {
        MemorySegment s = arena.allocate(Math.max(1, n) * Float.BYTES, 64);
        for (long i = 0; i < n; i++) {
            s.setAtIndex(F, i, v);
        }
        return s;
    }

    static MemorySegment copyOf(Arena arena, MemorySegment src) {
        MemorySegment s = arena.allocate(src.byteSize(), 64);
        s.copyFrom(src);
        return s;
    }

    static float get(MemorySegment s, long i) {
        return s.getAtIndex(F, i);
    }

    static void set(MemorySegment s, long i, float v) {
        s.setAtIndex(F, i, v);
    }

    static double[] toDoubles(MemorySegment s, long off, int n) {
        double[] d = new double[n];
        for (int i = 0; i < n; i++) {
            d[i] = get(s, off + i);
        }
        return d;
    }

    static MemorySegment of(Arena arena, double[] d) {
        MemorySegment s = arena.allocate(Math.max(1, d.length) * (long) Float.BYTES, 64);
        for (int i = 0; i < d.length; i++) {
            set(s, i, (float) d[i]);
        }
        return s;
    }

    /**
     * Asserts that {@code actual[aOff + i]} is within {@code abs + rel * |expected|} of
     * {@code expected[eOff + i]} for all {@code i < n}; NaN must match NaN and infinities must match exactly.
     */
    static void assertClose(MemorySegment expected, long eOff, MemorySegment actual, long aOff, long n,
                            double rel, double abs, String what) {
        for (long i = 0; i < n; i++) {
            float e = get(expected, eOff + i);
            float a = get(actual, aOff + i);
            if (!close(e, a, rel, abs)) {
                fail(what + ": element " + i + " of " + n + ": expected " + e + " but got " + a);
            }
        }
    }

    static boolean close(double e, double a, double rel, double abs) {
        if (Double.isNaN(e) || Double.isNaN(a)) {
            return Double.isNaN(e) && Double.isNaN(a);
        }
        if (Double.isInfinite(e) || Double.isInfinite(a)) {
            return e == a;
        }
        return Math.abs(e - a) <= abs + rel * Math.abs(e);
    }

    static void assertClose(double e, double a, double rel, double abs, String what) {
        if (!close(e, a, rel, abs)) {
            fail(what + ": expected " + e + " but got " + a);
        }
    }
}
