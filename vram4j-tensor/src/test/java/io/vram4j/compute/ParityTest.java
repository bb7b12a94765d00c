package io.vram4j.compute;

import static io.vram4j.compute.TestData.get;
import static io.vram4j.compute.TestData.set;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The vector kernels against the scalar reference, kernel by kernel: random data, odd sizes (tails of every
 * length), non-zero offsets, in-place use, special values (NaN, infinities, signed zeros), and no writes
 * outside the output range.
 */
class ParityTest {

    private static final Kernels REF = Kernels.scalar();
    private Kernels vec;

    @BeforeEach
    void vectorAvailable() {
        assertTrue(Kernels.vectorAvailable(), "the tests run with --add-modules jdk.incubator.vector (pom.xml)");
        vec = Kernels.vector();
    }

    /** A unary-shaped kernel: out = f(x) (or dx = f(dy, x) for the two-input backward ones). */
    @FunctionalInterface
    interface Op {
        void run(Kernels k, long n, MemorySegment x, long xo, MemorySegment y, long yo, MemorySegment out, long oo);
    }

    record Case(String name, Op op, float lo, float hi, double rel, double abs, boolean specials) {
        @Override
        public String toString() {
            return name;
        }
    }

    static List<Case> cases() {
        List<Case> c = new ArrayList<>();
        c.add(new Case("add", (k, n, x, xo, y, yo, o, oo) -> k.add(n, x, xo, y, yo, o, oo), -10, 10, 0, 0, true));
        c.add(new Case("sub", (k, n, x, xo, y, yo, o, oo) -> k.sub(n, x, xo, y, yo, o, oo), -10, 10, 0, 0, true));
        c.add(new Case("mul", (k, n, x, xo, y, yo, o, oo) -> k.mul(n, x, xo, y, yo, o, oo), -10, 10, 0, 0, true));
        c.add(new Case("div", (k, n, x, xo, y, yo, o, oo) -> k.div(n, x, xo, y, yo, o, oo), -10, 10, 0, 0, true));
        c.add(new Case("axpy", (k, n, x, xo, y, yo, o, oo) -> {
            k.copy(n, y, yo, o, oo);
            k.axpy(n, -1.75f, x, xo, o, oo);
        }, -10, 10, 0, 0, true));
        c.add(new Case("scale", (k, n, x, xo, y, yo, o, oo) -> k.scale(n, 0.3f, x, xo, o, oo), -10, 10, 0, 0, true));
        c.add(new Case("addScalar", (k, n, x, xo, y, yo, o, oo) -> k.addScalar(n, 2.5f, x, xo, o, oo), -10, 10, 0, 0, true));
        c.add(new Case("fill", (k, n, x, xo, y, yo, o, oo) -> k.fill(n, 1.25f, o, oo), -1, 1, 0, 0, false));
        c.add(new Case("fillZero", (k, n, x, xo, y, yo, o, oo) -> k.fill(n, 0f, o, oo), -1, 1, 0, 0, false));
        c.add(new Case("copy", (k, n, x, xo, y, yo, o, oo) -> k.copy(n, x, xo, o, oo), -1, 1, 0, 0, true));
        c.add(new Case("neg", (k, n, x, xo, y, yo, o, oo) -> k.neg(n, x, xo, o, oo), -10, 10, 0, 0, true));
        // subnormal results (inputs below -87.3) carry fewer bits: allow two units of the smallest subnormal there
        c.add(new Case("exp", (k, n, x, xo, y, yo, o, oo) -> k.exp(n, x, xo, o, oo), -90, 90, 3e-7, 2 * Float.MIN_VALUE, true));
        c.add(new Case("log", (k, n, x, xo, y, yo, o, oo) -> k.log(n, x, xo, o, oo), 1e-6f, 1e6f, 3e-7, 1e-7, true));
        c.add(new Case("sqrt", (k, n, x, xo, y, yo, o, oo) -> k.sqrt(n, x, xo, o, oo), 0, 1e6f, 0, 0, true));
        c.add(new Case("tanh", (k, n, x, xo, y, yo, o, oo) -> k.tanh(n, x, xo, o, oo), -12, 12, 3e-7, 0, true));
        c.add(new Case("sigmoid", (k, n, x, xo, y, yo, o, oo) -> k.sigmoid(n, x, xo, o, oo), -90, 90, 5e-7, 2 * Float.MIN_VALUE, true));
        c.add(new Case("relu", (k, n, x, xo, y, yo, o, oo) -> k.relu(n, x, xo, o, oo), -10, 10, 0, 0, true));
        c.add(new Case("reluBackward", (k, n, x, xo, y, yo, o, oo) -> k.reluBackward(n, y, yo, x, xo, o, oo),
                -10, 10, 0, 0, true));
        c.add(new Case("gelu", (k, n, x, xo, y, yo, o, oo) -> k.gelu(n, x, xo, o, oo), -12, 12, 2e-5, 1e-30, false));
        c.add(new Case("geluBackward", (k, n, x, xo, y, yo, o, oo) -> k.geluBackward(n, y, yo, x, xo, o, oo),
                -12, 12, 2e-5, 2e-6, false));
        return c;
    }

    static Stream<Arguments> sizedCases() {
        List<Arguments> out = new ArrayList<>();
        for (Case c : cases()) {
            for (int n : TestData.SIZES) {
                out.add(Arguments.of(c, n));
            }
        }
        return out.stream();
    }

    private static final long GUARD = 19;
    private static final float SENTINEL = -12345.5f;

    /** Fills x with random values in [lo, hi) and, when asked, some special values at fixed places. */
    static MemorySegment input(Arena arena, Random rnd, long off, int n, float lo, float hi, boolean specials) {
        MemorySegment s = TestData.random(arena, rnd, off + n + GUARD, lo, hi);
        if (specials && n >= 12) {
            float[] sp = {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f, Float.MIN_VALUE,
                Float.MAX_VALUE, -Float.MAX_VALUE, 1e-40f, -1e-30f, 1f, -1f};
            for (int i = 0; i < sp.length; i++) {
                set(s, off + (long) i * (n / sp.length), sp[i]);
            }
        }
        return s;
    }

    @ParameterizedTest(name = "{0} n={1}")
    @MethodSource("sizedCases")
    void vectorMatchesScalar(Case c, int n) {
        Random rnd = new Random(n * 131L + c.name().hashCode());
        try (Arena arena = Arena.ofConfined()) {
            for (long[] offs : new long[][] {{0, 0, 0}, {3, 5, 1}, {17, 2, 9}}) {
                long xo = offs[0];
                long yo = offs[1];
                long oo = offs[2];
                MemorySegment x = input(arena, rnd, xo, n, c.lo(), c.hi(), c.specials());
                MemorySegment y = input(arena, rnd, yo, n, -3, 3, false);
                if (c.name().equals("div") && n > 5) {
                    set(y, yo + n / 2, 0f);
                    set(y, yo + n / 3, -0f);
                }
                MemorySegment expected = TestData.filled(arena, oo + n + GUARD, SENTINEL);
                MemorySegment actual = TestData.filled(arena, oo + n + GUARD, SENTINEL);
                c.op().run(REF, n, x, xo, y, yo, expected, oo);
                c.op().run(vec, n, x, xo, y, yo, actual, oo);
                TestData.assertClose(expected, oo, actual, oo, n, c.rel(), c.abs(), c.name() + " n=" + n + " offsets " + xo);
                for (long i = 0; i < actual.byteSize() / 4; i++) {
                    if (i < oo || i >= oo + n) {
                        assertEquals(SENTINEL, get(actual, i), c.name() + " wrote outside its range at " + i);
                    }
                }
            }
        }
    }

    /** The cases with an input that can also be the output (fill has no input; axpy's output is an input). */
    static Stream<Case> inPlaceCases() {
        return cases().stream().filter(c -> !c.name().startsWith("fill") && !c.name().equals("axpy"));
    }

    @ParameterizedTest(name = "{0} in place")
    @MethodSource("inPlaceCases")
    void inPlaceMatchesOutOfPlace(Case c) {
        int n = 1000;
        Random rnd = new Random(c.name().hashCode());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = input(arena, rnd, 3, n, c.lo(), c.hi(), c.specials());
            MemorySegment y = input(arena, rnd, 3, n, -3, 3, false);
            MemorySegment expected = arena.allocate((n + 3) * 4L);
            c.op().run(vec, n, x, 3, y, 3, expected, 3);
            c.op().run(vec, n, x, 3, y, 3, x, 3);
            TestData.assertClose(expected, 3, x, 3, n, 0, 0, c.name() + " in place");
        }
    }

    // ------------------------------------------------------------------------------------------------ reductions

    @Test
    void reductionsMatchScalar() {
        Random rnd = new Random(11);
        try (Arena arena = Arena.ofConfined()) {
            for (int n : TestData.SIZES) {
                for (long off : new long[] {0, 5}) {
                    MemorySegment x = TestData.random(arena, rnd, off + n, -2, 3);
                    MemorySegment y = TestData.random(arena, rnd, off + n + 1, -2, 3);
                    double absSum = 0;
                    double absDot = 0;
                    for (int i = 0; i < n; i++) {
                        absSum += Math.abs(get(x, off + i));
                        absDot += Math.abs(get(x, off + i) * get(y, off + 1 + i));
                    }
                    String at = " n=" + n + " off=" + off;
                    TestData.assertClose(REF.sum(n, x, off), vec.sum(n, x, off), 0, 1e-6 * absSum + 1e-30, "sum" + at);
                    TestData.assertClose(REF.sumOfSquares(n, x, off), vec.sumOfSquares(n, x, off), 1e-6, 1e-30, "sumsq" + at);
                    TestData.assertClose(REF.dot(n, x, off, y, off + 1), vec.dot(n, x, off, y, off + 1), 0,
                            1e-6 * absDot + 1e-30, "dot" + at);
                    assertEquals(REF.max(n, x, off), vec.max(n, x, off), "max" + at);
                    assertFalse(vec.anyNonFinite(n, x, off), "anyNonFinite" + at);
                }
            }
            assertEquals(Float.NEGATIVE_INFINITY, vec.max(0, arena.allocate(4), 0));
            assertEquals(0f, vec.sum(0, arena.allocate(4), 0));
        }
    }

    @Test
    void specialValuesInReductions() {
        try (Arena arena = Arena.ofConfined()) {
            for (int n : new int[] {1, 15, 16, 17, 100, 70000, 200_003}) {
                for (int at : new int[] {0, n / 2, n - 1}) {
                    for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
                        Float.intBitsToFloat(0xFF800001)}) {
                        MemorySegment x = TestData.filled(arena, n + 2, 1.5f);
                        set(x, 1 + at, bad);
                        String what = "n=" + n + " at=" + at + " bad=" + bad;
                        assertTrue(vec.anyNonFinite(n, x, 1), "anyNonFinite " + what);
                        assertTrue(REF.anyNonFinite(n, x, 1), "scalar anyNonFinite " + what);
                        set(x, 0, bad);
                        set(x, n + 1, bad);
                        set(x, 1 + at, Float.MAX_VALUE);
                        assertFalse(vec.anyNonFinite(n, x, 1), "outside the range " + what);
                        set(x, 1 + at, bad);
                        assertEquals(REF.max(n, x, 1), vec.max(n, x, 1), "max " + what);
                        assertEquals(REF.sum(n, x, 1), vec.sum(n, x, 1), "sum " + what);
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ rows

    static Stream<Arguments> rowShapes() {
        List<Arguments> out = new ArrayList<>();
        for (int cols : new int[] {1, 3, 16, 17, 63, 65, 1000}) {
            for (int rows : new int[] {1, 3, 7}) {
                out.add(Arguments.of(rows, cols));
            }
        }
        out.add(Arguments.of(0, 5));
        out.add(Arguments.of(4, 0));
        return out.stream();
    }

    @ParameterizedTest(name = "{0}x{1}")
    @MethodSource("rowShapes")
    void rowKernelsMatchScalar(int rows, int cols) {
        Random rnd = new Random(rows * 1000L + cols);
        int n = rows * cols;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = TestData.random(arena, rnd, 3 + n, -30, 30);
            MemorySegment dy = TestData.random(arena, rnd, 1 + n, -1, 1);
            MemorySegment gamma = TestData.random(arena, rnd, 2 + cols, 0.5f, 1.5f);
            MemorySegment beta = TestData.random(arena, rnd, 1 + cols, -1, 1);
            MemorySegment e = TestData.filled(arena, 2 + n + GUARD, SENTINEL);
            MemorySegment a = TestData.filled(arena, 2 + n + GUARD, SENTINEL);
            String at = " " + rows + "x" + cols;

            REF.softmaxRows(rows, cols, x, 3, e, 2);
            vec.softmaxRows(rows, cols, x, 3, a, 2);
            TestData.assertClose(e, 0, a, 0, 2 + n + GUARD, 2e-6, 1e-12, "softmax" + at);
            MemorySegment y = TestData.copyOf(arena, e); // softmax output at offset 2
            REF.softmaxBackwardRows(rows, cols, y, 2, dy, 1, e, 2);
            vec.softmaxBackwardRows(rows, cols, y, 2, dy, 1, a, 2);
            TestData.assertClose(e, 0, a, 0, 2 + n + GUARD, 1e-5, 1e-7, "softmax backward" + at);

            REF.logSoftmaxRows(rows, cols, x, 3, e, 2);
            vec.logSoftmaxRows(rows, cols, x, 3, a, 2);
            TestData.assertClose(e, 0, a, 0, 2 + n + GUARD, 1e-6, 1e-5, "log-softmax" + at);
            y = TestData.copyOf(arena, e);
            REF.logSoftmaxBackwardRows(rows, cols, y, 2, dy, 1, e, 2);
            vec.logSoftmaxBackwardRows(rows, cols, y, 2, dy, 1, a, 2);
            TestData.assertClose(e, 0, a, 0, 2 + n + GUARD, 1e-5, 1e-5, "log-softmax backward" + at);

            MemorySegment me = TestData.filled(arena, rows + 1, SENTINEL);
            MemorySegment re = TestData.filled(arena, rows + 1, SENTINEL);
            MemorySegment ma = TestData.filled(arena, rows + 1, SENTINEL);
            MemorySegment ra = TestData.filled(arena, rows + 1, SENTINEL);
            REF.layerNormRows(rows, cols, x, 3, gamma, 2, beta, 1, 1e-5f, e, 2, me, 1, re, 1);
            vec.layerNormRows(rows, cols, x, 3, gamma, 2, beta, 1, 1e-5f, a, 2, ma, 1, ra, 1);
            TestData.assertClose(e, 0, a, 0, 2 + n + GUARD, 1e-5, 1e-5, "layer norm" + at);
            TestData.assertClose(me, 0, ma, 0, rows + 1, 1e-5, 1e-5, "layer norm mean" + at);
            TestData.assertClose(re, 0, ra, 0, rows + 1, 1e-5, 0, "layer norm rstd" + at);

            MemorySegment dge = TestData.filled(arena, cols + 1, SENTINEL);
            MemorySegment dga = TestData.filled(arena, cols + 1, SENTINEL);
            MemorySegment dbe = TestData.filled(arena, cols + 1, SENTINEL);
            MemorySegment dba = TestData.filled(arena, cols + 1, SENTINEL);
            REF.layerNormBackwardRows(rows, cols, dy, 1, x, 3, me, 1, re, 1, gamma, 2, e, 2, dge, 1, dbe, 1);
            vec.layerNormBackwardRows(rows, cols, dy, 1, x, 3, me, 1, re, 1, gamma, 2, a, 2, dga, 1, dba, 1);
            TestData.assertClose(e, 0, a, 0, 2 + n + GUARD, 1e-4, 1e-5, "layer norm dx" + at);
            TestData.assertClose(dge, 0, dga, 0, cols + 1, 1e-4, 1e-5, "layer norm dgamma" + at);
            TestData.assertClose(dbe, 0, dba, 0, cols + 1, 1e-5, 1e-6, "layer norm dbeta" + at);
        }
    }

    @Test
    void rowKernelsInPlace() {
        Random rnd = new Random(3);
        int rows = 4;
        int cols = 77;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = TestData.random(arena, rnd, rows * cols, -5, 5);
            MemorySegment e = arena.allocate(rows * cols * 4L);
            for (int kind = 0; kind < 3; kind++) {
                MemorySegment inPlace = TestData.copyOf(arena, x);
                switch (kind) {
                    case 0 -> {
                        vec.softmaxRows(rows, cols, x, 0, e, 0);
                        vec.softmaxRows(rows, cols, inPlace, 0, inPlace, 0);
                    }
                    case 1 -> {
                        vec.logSoftmaxRows(rows, cols, x, 0, e, 0);
                        vec.logSoftmaxRows(rows, cols, inPlace, 0, inPlace, 0);
                    }
                    default -> {
                        vec.layerNormRows(rows, cols, x, 0, null, 0, null, 0, 1e-5f, e, 0, null, 0, null, 0);
                        vec.layerNormRows(rows, cols, inPlace, 0, null, 0, null, 0, 1e-5f, inPlace, 0, null, 0, null, 0);
                    }
                }
                TestData.assertClose(e, 0, inPlace, 0, rows * cols, 0, 0, "row kernel " + kind + " in place");
            }
        }
    }

    @Test
    void softmaxOfRowWithInfinityOrNaN() {
        try (Arena arena = Arena.ofConfined()) {
            for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY}) {
                MemorySegment x = TestData.filled(arena, 40, 0.5f);
                set(x, 33, bad);
                MemorySegment e = arena.allocate(40 * 4);
                MemorySegment a = arena.allocate(40 * 4);
                REF.softmaxRows(2, 20, x, 0, e, 0);
                vec.softmaxRows(2, 20, x, 0, a, 0);
                TestData.assertClose(e, 0, a, 0, 40, 1e-6, 0, "softmax with " + bad);
                assertTrue(Float.isNaN(get(a, 25)));
                assertEquals(0.05f, get(a, 3), 1e-6f);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ gemm

    @Test
    void gemmMatchesScalarOnOddShapes() {
        Random rnd = new Random(21);
        int[] dims = {1, 3, 17, 63, 65};
        try (Arena arena = Arena.ofShared()) {
            for (int m : dims) {
                for (int n : dims) {
                    for (int k : dims) {
                        for (int t = 0; t < 4; t++) {
                            boolean ta = (t & 1) != 0;
                            boolean tb = (t & 2) != 0;
                            MemorySegment a = TestData.random(arena, rnd, 2 + (long) m * k, -1, 1);
                            MemorySegment b = TestData.random(arena, rnd, 3 + (long) k * n, -1, 1);
                            MemorySegment c = TestData.random(arena, rnd, 1 + (long) m * n, -1, 1);
                            MemorySegment c2 = TestData.copyOf(arena, c);
                            REF.sgemm(ta, tb, m, n, k, 0.5f, a, 2, ta ? m : k, b, 3, tb ? k : n, -1f, c, 1, n);
                            vec.sgemm(ta, tb, m, n, k, 0.5f, a, 2, ta ? m : k, b, 3, tb ? k : n, -1f, c2, 1, n);
                            double tol = 4 * k * Math.ulp(1f);
                            for (int i = 0; i < m * n; i++) {
                                double e = get(c, 1 + i);
                                double v = get(c2, 1 + i);
                                if (Math.abs(e - v) > tol * (1 + Math.abs(e))) {
                                    fail(m + "x" + n + "x" + k + " t=" + t + " at " + i + ": " + e + " vs " + v);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void argumentChecksMatchScalar() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(40);
            for (Kernels k : List.of(REF, vec)) {
                assertThrows(IndexOutOfBoundsException.class, () -> k.add(10, s, 1, s, 0, s, 0));
                assertThrows(IndexOutOfBoundsException.class, () -> k.exp(11, s, 0, s, 0));
                assertThrows(IndexOutOfBoundsException.class, () -> k.sum(5, s, -1));
                assertThrows(IllegalArgumentException.class, () -> k.relu(-1, s, 0, s, 0));
                assertThrows(IndexOutOfBoundsException.class, () -> k.softmaxRows(3, 4, s, 0, s, 0));
                assertThrows(IllegalArgumentException.class, () -> k.softmaxRows(-1, 4, s, 0, s, 0));
                assertThrows(IndexOutOfBoundsException.class,
                        () -> k.layerNormRows(2, 5, s, 0, s, 6, null, 0, 1e-5f, s, 0, null, 0, null, 0));
                assertThrows(NullPointerException.class, () -> k.add(1, null, 0, s, 0, s, 0));
                assertThrows(IllegalArgumentException.class, () -> k.fill(2, 1f, s.asReadOnly(), 0));
                assertThrows(IllegalArgumentException.class, () -> k.exp(2, s, 0, s.asReadOnly(), 0));
                assertThrows(IllegalArgumentException.class,
                        () -> k.sgemm(false, false, 2, 2, 2, 1f, s, 0, 2, s, 0, 2, 0f, s.asReadOnly(), 0, 2));
            }
        }
    }
}
