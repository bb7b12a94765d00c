package io.vram4j.compute;

import static io.vram4j.compute.TestData.get;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The fused attention kernels against the textbook formulation computed here in double with the whole
 * {@code t x t} matrix (scores, mask, softmax, products; the backward through {@code dP = dO V^T} and
 * {@code dS = P (dP - rowsum(dP P))}, not the kernels' {@code D_i = rowsum(dO O)}): every implementation, on shapes
 * with {@code t} on either side of the vector kernels' tiles (32 query rows, 64 keys) and odd head dimensions,
 * causal and not. The vector kernels also give the same bits on 1 and 3 threads and when repeated.
 */
class AttentionKernelsTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** {batchHeads, t, d}. */
    static final int[][] SHAPES = {{1, 1, 1}, {2, 5, 3}, {3, 33, 7}, {2, 65, 16}, {1, 100, 33}, {2, 130, 64}, {1, 0, 4}};

    static Stream<Arguments> cases() {
        List<Arguments> a = new ArrayList<>();
        for (Kernels k : TestData.kernels()) {
            for (int[] s : SHAPES) {
                for (boolean causal : new boolean[] {true, false}) {
                    a.add(Arguments.of(k, s[0], s[1], s[2], causal));
                }
            }
        }
        return a.stream();
    }

    /** The reference results: out, lse, dq, dk, dv. */
    record Expected(double[] out, double[] lse, double[] dq, double[] dk, double[] dv) {
    }

    static double[] read(MemorySegment s, long n) {
        double[] r = new double[Math.toIntExact(n)];
        for (int i = 0; i < r.length; i++) {
            r[i] = get(s, i);
        }
        return r;
    }

    static Expected textbook(int bh, int t, int d, double scale, boolean causal, double[] q, double[] k, double[] v,
                             double[] dout) {
        int n = bh * t * d;
        double[] out = new double[n];
        double[] lse = new double[bh * t];
        double[] dq = new double[n];
        double[] dk = new double[n];
        double[] dv = new double[n];
        for (int b = 0; b < bh; b++) {
            int o = b * t * d;
            double[][] p = new double[t][t];
            for (int i = 0; i < t; i++) {
                double max = Double.NEGATIVE_INFINITY;
                for (int j = 0; j < t; j++) {
                    double s = 0;
                    for (int c = 0; c < d; c++) {
                        s += q[o + i * d + c] * k[o + j * d + c];
                    }
                    p[i][j] = causal && j > i ? Double.NEGATIVE_INFINITY : s * scale;
                    max = Math.max(max, p[i][j]);
                }
                double sum = 0;
                for (int j = 0; j < t; j++) {
                    p[i][j] = Math.exp(p[i][j] - max);
                    sum += p[i][j];
                }
                lse[b * t + i] = max + Math.log(sum);
                for (int j = 0; j < t; j++) {
                    p[i][j] /= sum;
                    for (int c = 0; c < d; c++) {
                        out[o + i * d + c] += p[i][j] * v[o + j * d + c];
                    }
                }
            }
            for (int i = 0; i < t; i++) {
                double[] dp = new double[t];
                double rowsum = 0;
                for (int j = 0; j < t; j++) {
                    for (int c = 0; c < d; c++) {
                        dp[j] += dout[o + i * d + c] * v[o + j * d + c];
                    }
                    rowsum += dp[j] * p[i][j];
                }
                for (int j = 0; j < t; j++) {
                    double ds = p[i][j] * (dp[j] - rowsum) * scale;
                    for (int c = 0; c < d; c++) {
                        dv[o + j * d + c] += p[i][j] * dout[o + i * d + c];
                        dq[o + i * d + c] += ds * k[o + j * d + c];
                        dk[o + j * d + c] += ds * q[o + i * d + c];
                    }
                }
            }
        }
        return new Expected(out, lse, dq, dk, dv);
    }

    static void close(String what, double[] expected, MemorySegment actual, double tol) {
        for (int i = 0; i < expected.length; i++) {
            double a = get(actual, i);
            assertTrue(Math.abs(a - expected[i]) <= tol * (1 + Math.abs(expected[i])),
                    what + "[" + i + "]: expected " + expected[i] + ", got " + a);
        }
    }

    @ParameterizedTest(name = "{0} bh={1} t={2} d={3} causal={4}")
    @MethodSource("cases")
    void forwardAndBackwardEqualTheTextbookFormulation(Kernels kern, int bh, int t, int d, boolean causal) {
        Random rnd = new Random(31L * t + d);
        long n = (long) bh * t * d;
        float scale = (float) (1 / Math.sqrt(d));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment q = TestData.random(arena, rnd, n, -2, 2);
            MemorySegment k = TestData.random(arena, rnd, n, -2, 2);
            MemorySegment v = TestData.random(arena, rnd, n, -1, 1);
            MemorySegment dout = TestData.random(arena, rnd, n, -1, 1);
            MemorySegment out = TestData.filled(arena, n, Float.NaN);
            MemorySegment lse = TestData.filled(arena, (long) bh * t, Float.NaN);
            MemorySegment dq = TestData.filled(arena, n, Float.NaN);
            MemorySegment dk = TestData.filled(arena, n, Float.NaN);
            MemorySegment dv = TestData.filled(arena, n, Float.NaN);
            kern.attentionForward(bh, t, d, scale, causal, q, 0, k, 0, v, 0, out, 0, lse, 0);
            kern.attentionBackward(bh, t, d, scale, causal, q, 0, k, 0, v, 0, out, 0, lse, 0, dout, 0, dq, 0, dk, 0,
                    dv, 0);
            Expected e = textbook(bh, t, d, scale, causal, read(q, n), read(k, n), read(v, n), read(dout, n));
            double tol = kern.name().equals("scalar") ? 1e-6 : 2e-5;
            close("out", e.out(), out, tol);
            close("lse", e.lse(), lse, tol);
            close("dq", e.dq(), dq, tol);
            close("dk", e.dk(), dk, tol);
            close("dv", e.dv(), dv, tol);
        }
    }

    /** One pass of both kernels: out, lse, dq, dk, dv as arrays. */
    static List<float[]> run(Kernels kern, int bh, int t, int d, boolean causal) {
        Random rnd = new Random(5);
        long n = (long) bh * t * d;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment q = TestData.random(arena, rnd, n, -3, 3);
            MemorySegment k = TestData.random(arena, rnd, n, -3, 3);
            MemorySegment v = TestData.random(arena, rnd, n, -1, 1);
            MemorySegment dout = TestData.random(arena, rnd, n, -1, 1);
            MemorySegment[] o = {arena.allocate(n * 4), arena.allocate(bh * t * 4L), arena.allocate(n * 4),
                    arena.allocate(n * 4), arena.allocate(n * 4)};
            kern.attentionForward(bh, t, d, 0.2f, causal, q, 0, k, 0, v, 0, o[0], 0, o[1], 0);
            kern.attentionBackward(bh, t, d, 0.2f, causal, q, 0, k, 0, v, 0, o[0], 0, o[1], 0, dout, 0, o[2], 0, o[3], 0,
                    o[4], 0);
            List<float[]> r = new ArrayList<>();
            for (MemorySegment s : o) {
                r.add(s.toArray(F));
            }
            return r;
        }
    }

    @Test
    void vectorKernelsGiveTheSameBitsOnAnyThreadCountAndWhenRepeated() {
        for (boolean causal : new boolean[] {true, false}) {
            List<float[]> one = run(Kernels.vector().withThreads(1), 6, 97, 24, causal);
            List<float[]> three = run(Kernels.vector().withThreads(3), 6, 97, 24, causal);
            List<float[]> again = run(Kernels.vector().withThreads(3), 6, 97, 24, causal);
            assertEquals(5, one.size());
            for (int i = 0; i < one.size(); i++) {
                assertArrayEquals(one.get(i), three.get(i), "output " + i + " on 1 and 3 threads");
                assertArrayEquals(three.get(i), again.get(i), "output " + i + " repeated");
            }
        }
    }

    @Test
    void offsetsAreElementsIntoEachSegment() {
        int bh = 2;
        int t = 9;
        int d = 5;
        long n = (long) bh * t * d;
        Random rnd = new Random(3);
        for (Kernels kern : TestData.kernels()) {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment q = TestData.random(arena, rnd, n + 3, -1, 1);
                MemorySegment k = TestData.random(arena, rnd, n + 7, -1, 1);
                MemorySegment v = TestData.random(arena, rnd, n + 1, -1, 1);
                MemorySegment out = TestData.filled(arena, n + 2, 0);
                MemorySegment lse = TestData.filled(arena, bh * t + 4, 0);
                kern.attentionForward(bh, t, d, 0.5f, true, q, 3, k, 7, v, 1, out, 2, lse, 4);
                Expected e = textbook(bh, t, d, 0.5, true, read(q.asSlice(12), n), read(k.asSlice(28), n),
                        read(v.asSlice(4), n), new double[(int) n]);
                close(kern + " out", e.out(), out.asSlice(8), 2e-5);
                close(kern + " lse", e.lse(), lse.asSlice(16), 2e-5);
                assertEquals(0f, get(out, 0), "before the output");
                assertEquals(0f, get(lse, 3), "before the log-sum-exps");
            }
        }
    }
}
