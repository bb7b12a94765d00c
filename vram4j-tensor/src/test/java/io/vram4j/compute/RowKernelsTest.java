package io.vram4j.compute;

import static io.vram4j.compute.TestData.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Properties of the row kernels (softmax sums to 1, log-softmax is the log of softmax, layer norm gives
 * mean 0 and variance 1) and every backward helper against central finite differences of a
 * double-precision forward pass.
 */
class RowKernelsTest {

    static Stream<Kernels> kernels() {
        return TestData.kernels().stream();
    }

    static final int[] COLS = {1, 3, 17, 63, 65, 1000};

    @ParameterizedTest
    @MethodSource("kernels")
    void softmaxRowsSumToOneAndLogSoftmaxIsItsLog(Kernels kern) {
        Random rnd = new Random(1);
        for (int cols : COLS) {
            int rows = 5;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment x = TestData.random(arena, rnd, 3 + rows * cols, -20, 20);
                MemorySegment sm = TestData.filled(arena, 1 + rows * cols, Float.NaN);
                MemorySegment lsm = TestData.filled(arena, 2 + rows * cols, Float.NaN);
                kern.softmaxRows(rows, cols, x, 3, sm, 1);
                kern.logSoftmaxRows(rows, cols, x, 3, lsm, 2);
                for (int r = 0; r < rows; r++) {
                    double s = 0;
                    for (int j = 0; j < cols; j++) {
                        float p = get(sm, 1 + r * cols + j);
                        assertTrue(p >= 0 && p <= 1, "probability " + p);
                        s += p;
                        float lp = get(lsm, 2 + r * cols + j);
                        assertTrue(lp <= 1e-6f, "log-probability " + lp);
                        TestData.assertClose(Math.log(p), lp, 1e-5, p < 1e-30 ? 1 : 2e-6,
                                kern + " log-softmax vs log(softmax) cols=" + cols);
                    }
                    assertEquals(1.0, s, 1e-5, kern + " softmax row sum, cols=" + cols);
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void softmaxIsStableForLargeInputs(Kernels kern) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment x = TestData.of(arena, new double[] {1000, 1000, -1000, 999});
            MemorySegment y = arena.allocate(16);
            kern.softmaxRows(1, 4, x, 0, y, 0);
            double e = Math.exp(-1);
            double z = 2 + e;
            assertEquals(1 / z, get(y, 0), 1e-6);
            assertEquals(0, get(y, 2), 0);
            assertEquals(e / z, get(y, 3), 1e-6);
            kern.logSoftmaxRows(1, 4, x, 0, y, 0);
            assertEquals(-Math.log(z), get(y, 0), 1e-5);
            assertEquals(-2000 - Math.log(z), get(y, 2), 1e-3);
        }
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void layerNormGivesZeroMeanUnitVariance(Kernels kern) {
        Random rnd = new Random(2);
        for (int cols : new int[] {3, 17, 63, 65, 1000}) {
            int rows = 4;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment x = TestData.random(arena, rnd, 1 + rows * cols, 5, 9);
                MemorySegment y = arena.allocate(rows * cols * 4L + 8);
                MemorySegment mean = arena.allocate(rows * 4L);
                MemorySegment rstd = arena.allocate(rows * 4L);
                kern.layerNormRows(rows, cols, x, 1, null, 0, null, 0, 0f, y, 2, mean, 0, rstd, 0);
                for (int r = 0; r < rows; r++) {
                    double m = 0;
                    double v = 0;
                    double xm = 0;
                    for (int j = 0; j < cols; j++) {
                        m += get(y, 2 + r * cols + j);
                        xm += get(x, 1 + r * cols + j);
                    }
                    m /= cols;
                    xm /= cols;
                    for (int j = 0; j < cols; j++) {
                        double d = get(y, 2 + r * cols + j) - m;
                        v += d * d;
                    }
                    v /= cols;
                    assertEquals(0, m, 1e-5, kern + " mean of row, cols=" + cols);
                    assertEquals(1, v, 1e-4, kern + " variance of row, cols=" + cols);
                    assertEquals(xm, get(mean, r), 1e-5 * Math.abs(xm), "saved mean");
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ gradients

    /** Central differences of L(x) = sum_i w_i f(x)_i, in double. */
    static double[] numericGradient(Function<double[], double[]> f, double[] x, double[] w) {
        double[] g = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            double h = 1e-6 * Math.max(1, Math.abs(x[i]));
            double[] xp = x.clone();
            double[] xm = x.clone();
            xp[i] += h;
            xm[i] -= h;
            double[] fp = f.apply(xp);
            double[] fm = f.apply(xm);
            double s = 0;
            for (int j = 0; j < fp.length; j++) {
                s += w[j] * (fp[j] - fm[j]);
            }
            g[i] = s / (2 * h);
        }
        return g;
    }

    static double[] softmaxD(double[] x, int rows, int cols, boolean log) {
        double[] y = new double[x.length];
        for (int r = 0; r < rows; r++) {
            double max = Double.NEGATIVE_INFINITY;
            for (int j = 0; j < cols; j++) {
                max = Math.max(max, x[r * cols + j]);
            }
            double s = 0;
            for (int j = 0; j < cols; j++) {
                s += Math.exp(x[r * cols + j] - max);
            }
            for (int j = 0; j < cols; j++) {
                double v = x[r * cols + j] - max;
                y[r * cols + j] = log ? v - Math.log(s) : Math.exp(v) / s;
            }
        }
        return y;
    }

    static double[] layerNormD(double[] x, int rows, int cols, double[] gamma, double[] beta, double eps) {
        double[] y = new double[x.length];
        for (int r = 0; r < rows; r++) {
            double m = 0;
            for (int j = 0; j < cols; j++) {
                m += x[r * cols + j];
            }
            m /= cols;
            double v = 0;
            for (int j = 0; j < cols; j++) {
                v += (x[r * cols + j] - m) * (x[r * cols + j] - m);
            }
            v /= cols;
            double rs = 1 / Math.sqrt(v + eps);
            for (int j = 0; j < cols; j++) {
                y[r * cols + j] = (x[r * cols + j] - m) * rs * gamma[j] + beta[j];
            }
        }
        return y;
    }

    static void assertGradient(double[] numeric, MemorySegment analytic, long off, double tol, String what) {
        double scale = 0;
        for (double v : numeric) {
            scale = Math.max(scale, Math.abs(v));
        }
        for (int i = 0; i < numeric.length; i++) {
            TestData.assertClose(numeric[i], get(analytic, off + i), 0, tol * Math.max(1, scale),
                    what + " element " + i);
        }
    }

    /** Values exactly representable in float, so the float kernels see the same inputs as the double model. */
    static double[] randomFloats(Random rnd, int n, double lo, double hi) {
        double[] d = new double[n];
        for (int i = 0; i < n; i++) {
            d[i] = (float) (lo + (hi - lo) * rnd.nextDouble());
        }
        return d;
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void softmaxBackwardMatchesFiniteDifferences(Kernels kern) {
        Random rnd = new Random(3);
        for (int cols : new int[] {1, 3, 17, 65}) {
            int rows = 3;
            double[] x = randomFloats(rnd, rows * cols, -3, 3);
            double[] w = randomFloats(rnd, rows * cols, -1, 1);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment xs = TestData.of(arena, x);
                MemorySegment ws = TestData.of(arena, w);
                MemorySegment y = arena.allocate(x.length * 4L);
                MemorySegment dx = arena.allocate(x.length * 4L + 4);
                kern.softmaxRows(rows, cols, xs, 0, y, 0);
                kern.softmaxBackwardRows(rows, cols, y, 0, ws, 0, dx, 1);
                assertGradient(numericGradient(v -> softmaxD(v, rows, cols, false), x, w), dx, 1, 2e-5,
                        kern + " softmax cols=" + cols);
                kern.logSoftmaxRows(rows, cols, xs, 0, y, 0);
                kern.logSoftmaxBackwardRows(rows, cols, y, 0, ws, 0, dx, 1);
                assertGradient(numericGradient(v -> softmaxD(v, rows, cols, true), x, w), dx, 1, 2e-5,
                        kern + " log-softmax cols=" + cols);
                // in place: dx over dy
                kern.logSoftmaxBackwardRows(rows, cols, y, 0, ws, 0, ws, 0);
                assertGradient(numericGradient(v -> softmaxD(v, rows, cols, true), x, w), ws, 0, 2e-5,
                        kern + " log-softmax in place cols=" + cols);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void layerNormBackwardMatchesFiniteDifferences(Kernels kern) {
        Random rnd = new Random(4);
        float eps = 1e-5f;
        for (int cols : new int[] {2, 3, 17, 65}) {
            int rows = 3;
            double[] x = randomFloats(rnd, rows * cols, -2, 2);
            double[] w = randomFloats(rnd, rows * cols, -1, 1);
            double[] gamma = randomFloats(rnd, cols, 0.5, 1.5);
            double[] beta = randomFloats(rnd, cols, -0.5, 0.5);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment xs = TestData.of(arena, x);
                MemorySegment ws = TestData.of(arena, w);
                MemorySegment gs = TestData.of(arena, gamma);
                MemorySegment bs = TestData.of(arena, beta);
                MemorySegment y = arena.allocate(x.length * 4L);
                MemorySegment mean = arena.allocate(rows * 4L);
                MemorySegment rstd = arena.allocate(rows * 4L);
                kern.layerNormRows(rows, cols, xs, 0, gs, 0, bs, 0, eps, y, 0, mean, 0, rstd, 0);
                double[] yd = layerNormD(x, rows, cols, gamma, beta, eps);
                for (int i = 0; i < x.length; i++) {
                    assertEquals(yd[i], get(y, i), 1e-5 * (1 + Math.abs(yd[i])), kern + " layer norm forward");
                }
                MemorySegment dx = arena.allocate(x.length * 4L);
                MemorySegment dg = TestData.filled(arena, cols, Float.NaN);
                MemorySegment db = TestData.filled(arena, cols, Float.NaN);
                kern.layerNormBackwardRows(rows, cols, ws, 0, xs, 0, mean, 0, rstd, 0, gs, 0, dx, 0, dg, 0, db, 0);
                assertGradient(numericGradient(v -> layerNormD(v, rows, cols, gamma, beta, eps), x, w), dx, 0, 1e-4,
                        kern + " layer norm dx cols=" + cols);
                assertGradient(numericGradient(g -> layerNormD(x, rows, cols, g, beta, eps), gamma, w), dg, 0, 1e-4,
                        kern + " layer norm dgamma cols=" + cols);
                assertGradient(numericGradient(b -> layerNormD(x, rows, cols, gamma, b, eps), beta, w), db, 0, 1e-4,
                        kern + " layer norm dbeta cols=" + cols);
                // without gamma (identity scale)
                double[] ones = new double[cols];
                java.util.Arrays.fill(ones, 1);
                double[] zeros = new double[cols];
                kern.layerNormRows(rows, cols, xs, 0, null, 0, null, 0, eps, y, 0, mean, 0, rstd, 0);
                kern.layerNormBackwardRows(rows, cols, ws, 0, xs, 0, mean, 0, rstd, 0, null, 0, dx, 0, null, 0, null, 0);
                assertGradient(numericGradient(v -> layerNormD(v, rows, cols, ones, zeros, eps), x, w), dx, 0, 1e-4,
                        kern + " layer norm dx without gamma cols=" + cols);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("kernels")
    void geluAndReluBackwardMatchFiniteDifferences(Kernels kern) {
        Random rnd = new Random(5);
        int n = 257;
        double[] x = randomFloats(rnd, n, -6, 6);
        x[0] = 0.5;
        x[1] = -0.5;
        x[2] = 1e-3;
        double[] w = randomFloats(rnd, n, -1, 1);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment xs = TestData.of(arena, x);
            MemorySegment ws = TestData.of(arena, w);
            MemorySegment dx = arena.allocate(n * 4L);
            MemorySegment y = arena.allocate(n * 4L);
            kern.gelu(n, xs, 0, y, 0);
            for (int i = 0; i < n; i++) {
                double t = Math.tanh(Math.sqrt(2 / Math.PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i]));
                double e = 0.5 * x[i] * (1 + t);
                assertEquals(e, get(y, i), 2e-6 * Math.max(1, Math.abs(e)), kern + " gelu(" + x[i] + ")");
            }
            kern.geluBackward(n, ws, 0, xs, 0, dx, 0);
            Function<double[], double[]> gelu = v -> {
                double[] o = new double[v.length];
                for (int i = 0; i < v.length; i++) {
                    o[i] = 0.5 * v[i] * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v[i] + 0.044715 * v[i] * v[i] * v[i])));
                }
                return o;
            };
            assertGradient(numericGradient(gelu, x, w), dx, 0, 1e-5, kern + " gelu backward");
            kern.reluBackward(n, ws, 0, xs, 0, dx, 0);
            Function<double[], double[]> relu = v -> {
                double[] o = new double[v.length];
                for (int i = 0; i < v.length; i++) {
                    o[i] = Math.max(v[i], 0);
                }
                return o;
            };
            assertGradient(numericGradient(relu, x, w), dx, 0, 1e-6, kern + " relu backward");
        }
    }
}
