package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The reference kernels: plain loops, written to be obviously correct rather than fast.
 * Sums and transcendental functions are evaluated in double and rounded once to float, so these results
 * are at least as accurate as any other implementation's; the tests compare every other implementation
 * against them. Also the fallback when {@code jdk.incubator.vector} is not available.
 *
 * <p>The element-wise kernels share one loop per family ({@code map} over one or two inputs); each kernel gives
 * only the math of one element. Arguments are not checked here: {@link CheckedKernels}, in front of every
 * implementation, has checked them before a kernel runs.
 */
final class ScalarKernels implements HostConversions, HostDevicePaths {

    static final ScalarKernels INSTANCE = new ScalarKernels();

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** sqrt(2 / pi), the GELU tanh-approximation constant. */
    static final double GELU_C = 0.7978845608028654;
    static final double GELU_K = 0.044715;

    private ScalarKernels() {
    }

    private static float get(MemorySegment s, long i) {
        return s.getAtIndex(F, i);
    }

    private static void set(MemorySegment s, long i, float v) {
        s.setAtIndex(F, i, v);
    }

    @Override
    public String name() {
        return "scalar";
    }

    @Override
    public int threads() {
        return 1;
    }

    @Override
    public Kernels withThreads(int threads) {
        return this;
    }

    @Override
    public String toString() {
        return "Kernels[scalar]";
    }

    // ------------------------------------------------------------------------------------------------ gemm

    @Override
    public void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                      MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                      float beta, MemorySegment c, long cOff, int ldc) {
        gemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    }

    private static void gemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                             float beta, MemorySegment c, long cOff, int ldc) {
        boolean product = k > 0 && alpha != 0f;
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0;
                if (product) {
                    for (int p = 0; p < k; p++) {
                        float av = get(a, aOff + (transA ? (long) p * lda + i : (long) i * lda + p));
                        float bv = get(b, bOff + (transB ? (long) j * ldb + p : (long) p * ldb + j));
                        sum += (double) av * bv;
                    }
                }
                long ci = cOff + (long) i * ldc + j;
                double r = alpha * sum;
                if (beta != 0f) {
                    r += (double) beta * get(c, ci);
                }
                set(c, ci, (float) r);
            }
        }
    }

    @Override
    public void sgemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, long aOff, int lda, long strideA,
                             MemorySegment b, long bOff, int ldb, long strideB,
                             float beta, MemorySegment c, long cOff, int ldc, long strideC) {
        for (int i = 0; i < batch; i++) {
            gemm(transA, transB, m, n, k, alpha, a, aOff + i * strideA, lda, b, bOff + i * strideB, ldb,
                    beta, c, cOff + i * strideC, ldc);
        }
    }

    // ------------------------------------------------------------------------------------------------ element-wise

    /** The math of one element of a unary element-wise kernel. */
    @FunctionalInterface
    private interface Unary {
        float apply(float x);
    }

    /** The math of one element of a binary element-wise kernel (or of a backward one: {@code a} is dy). */
    @FunctionalInterface
    private interface Binary {
        float apply(float a, float b);
    }

    /** The loop of every unary element-wise kernel: {@code out[i] = f(x[i])}. */
    private static void map(long n, MemorySegment x, long xOff, MemorySegment out, long outOff, Unary f) {
        for (long i = 0; i < n; i++) {
            set(out, outOff + i, f.apply(get(x, xOff + i)));
        }
    }

    /** The loop of every binary element-wise kernel: {@code out[i] = f(a[i], b[i])}. */
    private static void map(long n, MemorySegment a, long aOff, MemorySegment b, long bOff,
                            MemorySegment out, long outOff, Binary f) {
        for (long i = 0; i < n; i++) {
            set(out, outOff + i, f.apply(get(a, aOff + i), get(b, bOff + i)));
        }
    }

    // ------------------------------------------------------------------------------------------------ binary

    @Override
    public void add(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        map(n, a, aOff, b, bOff, out, outOff, (u, v) -> u + v);
    }

    @Override
    public void sub(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        map(n, a, aOff, b, bOff, out, outOff, (u, v) -> u - v);
    }

    @Override
    public void mul(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        map(n, a, aOff, b, bOff, out, outOff, (u, v) -> u * v);
    }

    @Override
    public void div(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        map(n, a, aOff, b, bOff, out, outOff, (u, v) -> u / v);
    }

    // ------------------------------------------------------------------------------------------------ with a scalar

    @Override
    public void axpy(long n, float alpha, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        map(n, y, yOff, x, xOff, y, yOff, (yv, xv) -> yv + alpha * xv);
    }

    @Override
    public void scale(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> s * v);
    }

    @Override
    public void addScalar(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> v + s);
    }

    @Override
    public void fill(long n, float v, MemorySegment out, long outOff) {
        for (long i = 0; i < n; i++) {
            set(out, outOff + i, v);
        }
    }

    @Override
    public void copy(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        MemorySegment.copy(src, srcOff * Float.BYTES, dst, dstOff * Float.BYTES, n * Float.BYTES);
    }

    // ------------------------------------------------------------------------------------------------ unary

    @Override
    public void neg(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> -v);
    }

    @Override
    public void exp(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> (float) Math.exp(v));
    }

    @Override
    public void log(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> (float) Math.log(v));
    }

    @Override
    public void sqrt(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> (float) Math.sqrt(v));
    }

    @Override
    public void tanh(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> (float) Math.tanh(v));
    }

    @Override
    public void sigmoid(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> (float) (1.0 / (1.0 + Math.exp(-(double) v))));
    }

    @Override
    public void relu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> Math.max(v, 0f));
    }

    @Override
    public void reluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        map(n, dy, dyOff, x, xOff, dx, dxOff, (d, v) -> v > 0f ? d : 0f);
    }

    /**
     * GELU (tanh approximation) of one value, in double. {@code 0.5 x (1 + tanh(u))} equals
     * {@code x * sigmoid(2u) = x / (1 + exp(-2u))}; the last form avoids the cancellation of {@code 1 + tanh(u)}
     * where {@code tanh(u)} is close to -1.
     */
    static double gelu(double x) {
        double u = GELU_C * (x + GELU_K * x * x * x);
        return x / (1 + Math.exp(-2 * u));
    }

    /**
     * The derivative of {@link #gelu(double)}: {@code s + 2 x s (1 - s) u'} with {@code s = sigmoid(2u)},
     * {@code u' = c (1 + 3 k x^2)}, and {@code s (1 - s)} computed as {@code e s^2}, {@code e = exp(-2u)}.
     */
    static double geluDerivative(double x) {
        double x2 = x * x;
        double e = Math.exp(-2 * GELU_C * (x + GELU_K * x2 * x));
        if (Double.isInfinite(e)) {
            return 0; // x far below zero: gelu and its slope vanish to double precision
        }
        double s = 1 / (1 + e);
        return s + 2 * x * (e * s * s) * GELU_C * (1 + 3 * GELU_K * x2);
    }

    @Override
    public void gelu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, v -> (float) gelu(v));
    }

    @Override
    public void geluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        map(n, dy, dyOff, x, xOff, dx, dxOff, (d, v) -> (float) (d * geluDerivative(v)));
    }

    // ------------------------------------------------------------------------------------------------ reductions

    @Override
    public float sum(long n, MemorySegment x, long xOff) {
        double s = 0;
        for (long i = 0; i < n; i++) {
            s += get(x, xOff + i);
        }
        return (float) s;
    }

    @Override
    public float max(long n, MemorySegment x, long xOff) {
        float m = Float.NEGATIVE_INFINITY;
        for (long i = 0; i < n; i++) {
            m = Math.max(m, get(x, xOff + i));
        }
        return m;
    }

    @Override
    public float sumOfSquares(long n, MemorySegment x, long xOff) {
        double s = 0;
        for (long i = 0; i < n; i++) {
            double v = get(x, xOff + i);
            s += v * v;
        }
        return (float) s;
    }

    @Override
    public float dot(long n, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        double s = 0;
        for (long i = 0; i < n; i++) {
            s += (double) get(x, xOff + i) * get(y, yOff + i);
        }
        return (float) s;
    }

    @Override
    public boolean anyNonFinite(long n, MemorySegment x, long xOff) {
        for (long i = 0; i < n; i++) {
            if (!Float.isFinite(get(x, xOff + i))) {
                return true;
            }
        }
        return false;
    }

    // ------------------------------------------------------------------------------------------------ rows

    @Override
    public void softmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        for (int r = 0; r < rows; r++) {
            long xr = xOff + (long) r * cols;
            long or = outOff + (long) r * cols;
            float max = Float.NEGATIVE_INFINITY;
            for (int j = 0; j < cols; j++) {
                max = Math.max(max, get(x, xr + j));
            }
            double sum = 0;
            for (int j = 0; j < cols; j++) {
                sum += Math.exp((double) get(x, xr + j) - max);
            }
            for (int j = 0; j < cols; j++) {
                set(out, or + j, (float) (Math.exp((double) get(x, xr + j) - max) / sum));
            }
        }
    }

    @Override
    public void logSoftmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        for (int r = 0; r < rows; r++) {
            long xr = xOff + (long) r * cols;
            long or = outOff + (long) r * cols;
            float max = Float.NEGATIVE_INFINITY;
            for (int j = 0; j < cols; j++) {
                max = Math.max(max, get(x, xr + j));
            }
            double sum = 0;
            for (int j = 0; j < cols; j++) {
                sum += Math.exp((double) get(x, xr + j) - max);
            }
            double shift = max + Math.log(sum);
            for (int j = 0; j < cols; j++) {
                set(out, or + j, (float) (get(x, xr + j) - shift));
            }
        }
    }

    @Override
    public void softmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                    MemorySegment dx, long dxOff) {
        for (int r = 0; r < rows; r++) {
            long base = (long) r * cols;
            double dot = 0;
            for (int j = 0; j < cols; j++) {
                dot += (double) get(dy, dyOff + base + j) * get(y, yOff + base + j);
            }
            for (int j = 0; j < cols; j++) {
                double yv = get(y, yOff + base + j);
                set(dx, dxOff + base + j, (float) (yv * (get(dy, dyOff + base + j) - dot)));
            }
        }
    }

    @Override
    public void logSoftmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                       MemorySegment dx, long dxOff) {
        for (int r = 0; r < rows; r++) {
            long base = (long) r * cols;
            double sum = 0;
            for (int j = 0; j < cols; j++) {
                sum += get(dy, dyOff + base + j);
            }
            for (int j = 0; j < cols; j++) {
                double p = Math.exp(get(y, yOff + base + j));
                set(dx, dxOff + base + j, (float) (get(dy, dyOff + base + j) - p * sum));
            }
        }
    }

    @Override
    public void layerNormRows(int rows, int cols, MemorySegment x, long xOff,
                              MemorySegment gamma, long gammaOff, MemorySegment beta, long betaOff, float eps,
                              MemorySegment out, long outOff, MemorySegment mean, long meanOff,
                              MemorySegment rstd, long rstdOff) {
        for (int r = 0; r < rows; r++) {
            long xr = xOff + (long) r * cols;
            long or = outOff + (long) r * cols;
            double mu = 0;
            for (int j = 0; j < cols; j++) {
                mu += get(x, xr + j);
            }
            mu = cols == 0 ? 0 : mu / cols;
            double var = 0;
            for (int j = 0; j < cols; j++) {
                double d = get(x, xr + j) - mu;
                var += d * d;
            }
            var = cols == 0 ? 0 : var / cols;
            double rs = 1.0 / Math.sqrt(var + eps);
            for (int j = 0; j < cols; j++) {
                double v = (get(x, xr + j) - mu) * rs;
                if (gamma != null) {
                    v *= get(gamma, gammaOff + j);
                }
                if (beta != null) {
                    v += get(beta, betaOff + j);
                }
                set(out, or + j, (float) v);
            }
            if (mean != null) {
                set(mean, meanOff + r, (float) mu);
            }
            if (rstd != null) {
                set(rstd, rstdOff + r, (float) rs);
            }
        }
    }

    @Override
    public void layerNormBackwardRows(int rows, int cols, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                                      MemorySegment mean, long meanOff, MemorySegment rstd, long rstdOff,
                                      MemorySegment gamma, long gammaOff,
                                      MemorySegment dx, long dxOff, MemorySegment dgamma, long dgammaOff,
                                      MemorySegment dbeta, long dbetaOff) {
        double[] dg = new double[cols];
        double[] db = new double[cols];
        for (int r = 0; r < rows; r++) {
            long base = (long) r * cols;
            double mu = get(mean, meanOff + r);
            double rs = get(rstd, rstdOff + r);
            double sumG = 0;
            double sumGx = 0;
            for (int j = 0; j < cols; j++) {
                double d = get(dy, dyOff + base + j);
                double xhat = (get(x, xOff + base + j) - mu) * rs;
                double g = gamma == null ? d : d * get(gamma, gammaOff + j);
                sumG += g;
                sumGx += g * xhat;
                dg[j] += d * xhat;
                db[j] += d;
            }
            if (dx == null || cols == 0) {
                continue;
            }
            double meanG = sumG / cols;
            double meanGx = sumGx / cols;
            for (int j = 0; j < cols; j++) {
                double d = get(dy, dyOff + base + j);
                double xhat = (get(x, xOff + base + j) - mu) * rs;
                double g = gamma == null ? d : d * get(gamma, gammaOff + j);
                set(dx, dxOff + base + j, (float) (rs * (g - meanG - xhat * meanGx)));
            }
        }
        for (int j = 0; j < cols; j++) {
            if (dgamma != null) {
                set(dgamma, dgammaOff + j, (float) dg[j]);
            }
            if (dbeta != null) {
                set(dbeta, dbetaOff + j, (float) db[j]);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ attention

    @Override
    public void attentionForward(int batchHeads, int t, int d, float scale, boolean causal,
                                 MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                 MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        ScalarAttention.forward(batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff, lse, lseOff);
    }

    @Override
    public void attentionBackward(int batchHeads, int t, int d, float scale, boolean causal,
                                  MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                  MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                                  MemorySegment dout, long doutOff,
                                  MemorySegment dq, long dqOff, MemorySegment dk, long dkOff,
                                  MemorySegment dv, long dvOff) {
        ScalarAttention.backward(batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff,
                lse, lseOff, dout, doutOff, dq, dqOff, dk, dkOff, dv, dvOff);
    }
}
