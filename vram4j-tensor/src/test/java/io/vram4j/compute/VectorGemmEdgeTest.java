package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The packed Vector API sgemm against the scalar reference kernels on shapes placed around the micro-kernel's
 * edges: the register tile ({@code MR} rows by {@code NR = 2} vectors), one vector, and the depth block
 * {@code KC}. Each case runs with padded leading dimensions, element offsets, both transposes and several
 * {@code beta}, on 1, 2 and 3 threads; the three results must be bitwise equal and agree with the scalar
 * kernels within the float rounding bound {@code (k + 2) * eps * sum |alpha a b| + |beta c|}.
 */
class VectorGemmEdgeTest {

    @BeforeAll
    static void needsVector() {
        assumeTrue(Kernels.vectorAvailable(), "needs --add-modules jdk.incubator.vector");
    }

    static Stream<Arguments> shapes() {
        int mr = VectorGemm.MR;
        int l = VectorGemm.L;
        int nr = VectorGemm.NR;
        int kc = VectorGemm.KC;
        int[][] shapes = {
            {1, 1, 1}, {13, 17, 19}, {mr, nr, 8}, {mr - 1, nr - 1, 3}, {mr + 1, nr + 1, 5},
            {2 * mr + 5, l - 1, 9}, {3, l, 4}, {5, l + 1, 11}, {mr, 3 * nr + 7, kc + 1},
            {2 * mr - 1, nr, kc - 1}, {37, 2 * nr - 3, 2 * kc + 3}, {1, 3 * nr + 1, 64}, {4 * mr + 3, 1, 33},
            // large enough (m * n * k above the parallel threshold) to split over the threads
            {131, 149, 257}, {97, 2 * nr + 11, 600},
        };
        List<Arguments> out = new ArrayList<>();
        for (int[] s : shapes) {
            for (int t = 0; t < 4; t++) {
                out.add(Arguments.of(s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}x{1}x{2} tA={3} tB={4}")
    @MethodSource("shapes")
    void matchesScalarOnEveryThreadCount(int m, int n, int k, boolean ta, boolean tb) {
        float[][] coefficients = {{1f, 0f}, {0.5f, 1f}, {-1.25f, 0.75f}, {2f, -2f}};
        Random rnd = new Random(31L * m + 17L * n + k + (ta ? 5 : 0) + (tb ? 11 : 0));
        int lda = (ta ? m : k) + 2;
        int ldb = (tb ? k : n) + 3;
        int ldc = n + 1;
        long aOff = 5;
        long bOff = 1;
        long cOff = 9;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment a = TestData.random(arena, rnd, aOff + (long) (ta ? k : m) * lda, -1, 1);
            MemorySegment b = TestData.random(arena, rnd, bOff + (long) (tb ? n : k) * ldb, -1, 1);
            MemorySegment c0 = TestData.random(arena, rnd, cOff + (long) m * ldc, -1, 1);
            for (float[] ab : coefficients) {
                float alpha = ab[0];
                float beta = ab[1];
                String what = m + "x" + n + "x" + k + " tA=" + ta + " tB=" + tb + " alpha=" + alpha + " beta=" + beta;
                MemorySegment expected = TestData.copyOf(arena, c0);
                Kernels.scalar().sgemm(ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, expected, cOff, ldc);
                double[] bound = bounds(ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c0, cOff, ldc);
                MemorySegment first = null;
                for (int threads = 1; threads <= 3; threads++) {
                    MemorySegment c = TestData.copyOf(arena, c0);
                    Kernels.vector().withThreads(threads)
                            .sgemm(ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
                    for (long i = 0; i < c.byteSize() / Float.BYTES; i++) {
                        long row = (i - cOff) / ldc;
                        long col = (i - cOff) % ldc;
                        float got = TestData.get(c, i);
                        if (i < cOff || row >= m || col >= n) {
                            assertEquals(Float.floatToRawIntBits(TestData.get(c0, i)), Float.floatToRawIntBits(got),
                                    what + " threads=" + threads + ": wrote outside C at element " + i);
                            continue;
                        }
                        float want = TestData.get(expected, i);
                        double tol = 2 * bound[(int) (row * n + col)] + 1e-30;
                        if (!(Math.abs((double) want - got) <= tol)) {
                            fail(what + " threads=" + threads + ": C[" + row + "][" + col + "] = " + got
                                    + ", scalar gives " + want + " (tolerance " + tol + ")");
                        }
                    }
                    if (first == null) {
                        first = c;
                    } else {
                        assertEquals(-1L, first.mismatch(c), what + ": " + threads + " threads differ from 1 thread");
                    }
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}x{1}x{2} tA={3} tB={4}")
    @MethodSource("shapes")
    void segmentsThatEndWithTheMatrices(int m, int n, int k, boolean ta, boolean tb) {
        // no padding and no offsets: the last rows' vectors would pass the end of A and C, which the packing
        // and the masked C update must handle without reading or writing outside
        Random rnd = new Random(7L * m + 3L * n + k);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment a = TestData.random(arena, rnd, (long) m * k, -1, 1);
            MemorySegment b = TestData.random(arena, rnd, (long) k * n, -1, 1);
            MemorySegment c0 = TestData.random(arena, rnd, (long) m * n, -1, 1);
            MemorySegment expected = TestData.copyOf(arena, c0);
            Kernels.scalar().sgemm(ta, tb, m, n, k, 1f, a, 0, ta ? m : k, b, 0, tb ? k : n, 0.5f, expected, 0, n);
            double[] bound = bounds(ta, tb, m, n, k, 1f, a, 0, ta ? m : k, b, 0, tb ? k : n, 0.5f, c0, 0, n);
            for (int threads = 1; threads <= 2; threads++) {
                MemorySegment c = TestData.copyOf(arena, c0);
                Kernels.vector().withThreads(threads)
                        .sgemm(ta, tb, m, n, k, 1f, a, 0, ta ? m : k, b, 0, tb ? k : n, 0.5f, c, 0, n);
                for (int i = 0; i < m * n; i++) {
                    double diff = Math.abs((double) TestData.get(expected, i) - TestData.get(c, i));
                    if (!(diff <= 2 * bound[i] + 1e-30)) {
                        fail(m + "x" + n + "x" + k + " tA=" + ta + " tB=" + tb + " threads=" + threads + ": C[" + i / n
                                + "][" + i % n + "] = " + TestData.get(c, i) + ", scalar gives " + TestData.get(expected, i));
                    }
                }
            }
        }
    }

    /** Per element of C: the rounding bound of either kernel against the exact result. */
    private static double[] bounds(boolean ta, boolean tb, int m, int n, int k, float alpha,
                                   MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                                   float beta, MemorySegment c, long cOff, int ldc) {
        double eps = Math.ulp(1f);
        double[] out = new double[m * n];
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double g = 0;
                for (int p = 0; p < k; p++) {
                    double x = TestData.get(a, aOff + (ta ? (long) p * lda + i : (long) i * lda + p));
                    double y = TestData.get(b, bOff + (tb ? (long) j * ldb + p : (long) p * ldb + j));
                    g += Math.abs(x * y);
                }
                double cv = Math.abs((double) beta * TestData.get(c, cOff + (long) i * ldc + j));
                out[i * n + j] = (k + 2) * eps * (Math.abs(alpha) * g + cv);
            }
        }
        return out;
    }

    @Test
    void microKernelTileIsTheExactPanelProduct() {
        // one tile through kernel + update with small integers: every product and sum is exact in float
        int mr = VectorGemm.MR;
        int nr = VectorGemm.NR;
        int kc = 7;
        float[] ap = new float[kc * mr];
        float[] bp = new float[kc * nr];
        for (int p = 0; p < kc; p++) {
            for (int i = 0; i < mr; i++) {
                ap[p * mr + i] = (i + 2 * p) % 5 - 2;
            }
            for (int j = 0; j < nr; j++) {
                bp[p * nr + j] = (3 * j + p) % 7 - 3;
            }
        }
        float[] tile = new float[mr * nr];
        VectorGemm.kernel(ap, 0, bp, 0, kc, tile);
        for (int i = 0; i < mr; i++) {
            for (int j = 0; j < nr; j++) {
                float s = 0;
                for (int p = 0; p < kc; p++) {
                    s += ap[p * mr + i] * bp[p * nr + j];
                }
                assertEquals(s, tile[i * nr + j], "tile[" + i + "][" + j + "]");
            }
        }
        // a partial update (mr - 1 rows, nr - 3 columns) leaves the rest of C alone and adds alpha * tile
        int ldc = nr + 2;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment c = TestData.filled(arena, (long) mr * ldc, 10f);
            VectorGemm.update(tile, c, 0, ldc, 2f, false, mr - 1, nr - 3);
            for (int i = 0; i < mr; i++) {
                for (int j = 0; j < ldc; j++) {
                    boolean inside = i < mr - 1 && j < nr - 3;
                    float want = inside ? 10f + 2f * tile[i * nr + j] : 10f;
                    assertEquals(want, TestData.get(c, (long) i * ldc + j), "C[" + i + "][" + j + "]");
                }
            }
            VectorGemm.update(tile, c, 0, ldc, -1f, true, 1, 1);
            assertEquals(-tile[0], TestData.get(c, 0));
            assertEquals(10f + 2f * tile[1], TestData.get(c, 1));
        }
    }

    @Test
    void warmUpRunsEveryKernelOnBothImplementations() {
        for (Kernels k : List.of(Kernels.scalar(), Kernels.vector())) {
            long nanos = k.warmUp();
            assertTrue(nanos > 0, k + " warm-up reported " + nanos + " ns");
        }
    }
}
