package io.vram4j.compute;

import static io.vram4j.compute.TestData.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** sgemm of every implementation against a naive triple loop evaluated in double precision. */
class GemmTest {

    static Stream<Kernels> kernels() {
        return TestData.kernels().stream();
    }

    /** Shapes: tiny, odd, around tile and block edges (MR/NR, KC = 256, MC), and a few larger ones. */
    static final int[][] SHAPES = {
        {1, 1, 1}, {1, 1, 7}, {3, 1, 5}, {1, 17, 3}, {2, 3, 4}, {5, 7, 0}, {0, 4, 4}, {4, 0, 4},
        {6, 32, 16}, {7, 33, 17}, {17, 63, 65}, {63, 65, 17}, {65, 17, 63}, {13, 48, 1},
        {100, 130, 257}, {193, 97, 300}, {31, 300, 513}, {250, 33, 70}, {1, 500, 300}, {300, 1, 200},
    };

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (Kernels k : TestData.kernels()) {
            for (int[] s : SHAPES) {
                for (int t = 0; t < 4; t++) {
                    out.add(Arguments.of(k, s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0));
                }
            }
        }
        return out.stream();
    }

    /** Reference C = alpha op(A) op(B) + beta C in double, and the bound sum_p |alpha a b| + |beta c|. */
    static double[][] reference(boolean ta, boolean tb, int m, int n, int k, float alpha,
                                MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                                float beta, MemorySegment c, long cOff, int ldc) {
        float[] av = a.toArray(TestData.F.withOrder(java.nio.ByteOrder.nativeOrder()));
        float[] bv = b.toArray(TestData.F.withOrder(java.nio.ByteOrder.nativeOrder()));
        double[] ref = new double[m * n];
        double[] mag = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                double g = 0;
                for (int p = 0; p < k; p++) {
                    double x = av[(int) (aOff + (ta ? (long) p * lda + i : (long) i * lda + p))];
                    double y = bv[(int) (bOff + (tb ? (long) j * ldb + p : (long) p * ldb + j))];
                    s += x * y;
                    g += Math.abs(x * y);
                }
                double cv = beta == 0 ? 0 : (double) beta * get(c, cOff + (long) i * ldc + j);
                ref[i * n + j] = alpha * s + cv;
                mag[i * n + j] = Math.abs(alpha) * g + Math.abs(cv);
            }
        }
        return new double[][] {ref, mag};
    }

    static void check(double[][] ref, MemorySegment c, long cOff, int ldc, int m, int n, int k, String what) {
        double eps = Math.ulp(1f);
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double e = ref[0][i * n + j];
                double a = get(c, cOff + (long) i * ldc + j);
                double bound = (k + 2) * eps * ref[1][i * n + j] + 1e-30;
                if (!(Math.abs(e - a) <= bound)) {
                    fail(what + ": C[" + i + "][" + j + "] expected " + e + " but got " + a + " (bound " + bound + ")");
                }
            }
        }
    }

    static void run(Kernels kern, int m, int n, int k, boolean ta, boolean tb, float alpha, float beta,
                    boolean nanC, long seed) {
        Random rnd = new Random(seed);
        try (Arena arena = Arena.ofShared()) {
            // padded leading dimensions and non-zero offsets
            int lda = (ta ? m : k) + 3;
            int ldb = (tb ? k : n) + 1;
            int ldc = n + 5;
            long aOff = 7;
            long bOff = 3;
            long cOff = 11;
            int aRows = ta ? k : m;
            int bRows = tb ? n : k;
            MemorySegment a = TestData.random(arena, rnd, aOff + (long) aRows * lda, -1, 1);
            MemorySegment b = TestData.random(arena, rnd, bOff + (long) bRows * ldb, -1, 1);
            MemorySegment c = nanC ? TestData.filled(arena, cOff + (long) m * ldc, Float.NaN)
                    : TestData.random(arena, rnd, cOff + (long) m * ldc, -1, 1);
            MemorySegment before = TestData.copyOf(arena, c);
            double[][] ref = reference(ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            kern.sgemm(ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            String what = kern + " " + m + "x" + n + "x" + k + " tA=" + ta + " tB=" + tb + " alpha=" + alpha
                    + " beta=" + beta;
            check(ref, c, cOff, ldc, m, n, k, what);
            // the padding between rows and around C is untouched
            for (long i = 0; i < c.byteSize() / 4; i++) {
                long r = (i - cOff) / ldc;
                long col = (i - cOff) % ldc;
                boolean inside = i >= cOff && r < m && col < n;
                if (!inside) {
                    assertEquals(Float.floatToRawIntBits(get(before, i)), Float.floatToRawIntBits(get(c, i)),
                            what + ": wrote outside C at element " + i);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}x{2}x{3} tA={4} tB={5}")
    @MethodSource("cases")
    void matchesDoubleReference(Kernels kern, int m, int n, int k, boolean ta, boolean tb) {
        run(kern, m, n, k, ta, tb, 1f, 0f, false, m * 31L + n * 7L + k);
        run(kern, m, n, k, ta, tb, 0.75f, 1f, false, m * 37L + n * 5L + k);
        run(kern, m, n, k, ta, tb, -1.5f, 0.5f, false, m * 41L + n * 3L + k);
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void betaZeroIgnoresNaNInC(Kernels kern) {
        for (int t = 0; t < 4; t++) {
            run(kern, 37, 45, 29, (t & 1) != 0, (t & 2) != 0, 1f, 0f, true, t);
            run(kern, 200, 70, 300, (t & 1) != 0, (t & 2) != 0, 2f, 0f, true, t);
        }
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void alphaZeroOrKZeroOnlyScalesC(Kernels kern) {
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(5);
            int m = 19;
            int n = 23;
            MemorySegment a = TestData.filled(arena, m * 8, Float.NaN); // must not be read
            MemorySegment b = TestData.filled(arena, 8 * n, Float.NaN);
            MemorySegment c = TestData.random(arena, rnd, m * n, -1, 1);
            MemorySegment c0 = TestData.copyOf(arena, c);
            kern.sgemm(false, false, m, n, 8, 0f, a, 0, 8, b, 0, n, 0.5f, c, 0, n);
            for (int i = 0; i < m * n; i++) {
                assertEquals(0.5f * get(c0, i), get(c, i), 0f);
            }
            kern.sgemm(false, false, m, n, 0, 1f, a, 0, 1, b, 0, n, 0f, c, 0, n);
            for (int i = 0; i < m * n; i++) {
                assertEquals(0f, get(c, i), 0f);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void batched(Kernels kern) {
        int batch = 5;
        int m = 21;
        int n = 35;
        int k = 19;
        for (int t = 0; t < 4; t++) {
            boolean ta = (t & 1) != 0;
            boolean tb = (t & 2) != 0;
            try (Arena arena = Arena.ofConfined()) {
                Random rnd = new Random(t);
                int lda = ta ? m : k;
                int ldb = tb ? k : n;
                long sa = (long) m * k + 3;
                long sb = t == 3 ? 0 : (long) k * n + 1; // stride 0: one B shared by the whole batch
                long sc = (long) m * n + 2;
                MemorySegment a = TestData.random(arena, rnd, 4 + batch * sa, -1, 1);
                MemorySegment b = TestData.random(arena, rnd, 2 + batch * Math.max(sb, (long) k * n), -1, 1);
                MemorySegment c = TestData.random(arena, rnd, 1 + batch * sc, -1, 1);
                List<double[][]> refs = new ArrayList<>();
                for (int i = 0; i < batch; i++) {
                    refs.add(reference(ta, tb, m, n, k, 1.25f, a, 4 + i * sa, lda, b, 2 + i * sb, ldb,
                            0.5f, c, 1 + i * sc, n));
                }
                kern.sgemmBatched(batch, ta, tb, m, n, k, 1.25f, a, 4, lda, sa, b, 2, ldb, sb, 0.5f, c, 1, n, sc);
                for (int i = 0; i < batch; i++) {
                    check(refs.get(i), c, 1 + i * sc, n, m, n, k, kern + " batch " + i + " t=" + t);
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void rejectsBadArguments(Kernels kern) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(100 * 4);
            assertThrows(IllegalArgumentException.class,
                    () -> kern.sgemm(false, false, -1, 2, 2, 1, s, 0, 2, s, 0, 2, 0, s, 0, 2));
            assertThrows(IllegalArgumentException.class,
                    () -> kern.sgemm(false, false, 2, 2, 3, 1, s, 0, 2, s, 0, 2, 0, s, 0, 2)); // lda < k
            assertThrows(IllegalArgumentException.class,
                    () -> kern.sgemm(true, false, 3, 2, 2, 1, s, 0, 2, s, 0, 2, 0, s, 0, 2)); // lda < m
            assertThrows(IndexOutOfBoundsException.class,
                    () -> kern.sgemm(false, false, 10, 10, 10, 1, s, 0, 10, s, 0, 10, 0, s, 1, 10));
            assertThrows(IndexOutOfBoundsException.class,
                    () -> kern.sgemmBatched(2, false, false, 5, 5, 5, 1, s, 0, 5, 80, s, 0, 5, 0, 0, s, 0, 5, 25));
        }
    }
}
