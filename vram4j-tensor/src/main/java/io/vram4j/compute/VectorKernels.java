package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Kernels on {@code jdk.incubator.vector}. Reached only through {@link KernelSelector} (by reflection), so
 * that nothing else needs the incubator module to load.
 */
final class VectorKernels implements Kernels {

    private static final ScalarKernels S = ScalarKernels.INSTANCE;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    /** Below this many multiply-adds (m * n * k) an sgemm runs on the calling thread alone. */
    static final long PARALLEL_MIN_MACS = 1L << 21;

    private static final ThreadLocal<VectorGemm> GEMM = ThreadLocal.withInitial(VectorGemm::new);

    private final int threads;

    private VectorKernels(int threads) {
        this.threads = threads;
    }

    /** Called reflectively by {@link KernelSelector}; fails with a LinkageError without the module. */
    static Kernels create(int threads) {
        // touch the species so that a missing module fails here, not at the first kernel call
        if (VectorGemm.L < 1) {
            throw new IllegalStateException("no vector species");
        }
        return new VectorKernels(Math.max(1, threads));
    }

    @Override
    public String name() {
        return "vector";
    }

    @Override
    public int threads() {
        return threads;
    }

    @Override
    public Kernels withThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        return threads == this.threads ? this : new VectorKernels(threads);
    }

    @Override
    public String toString() {
        return "Kernels[vector, " + VectorGemm.SP.vectorBitSize() + "-bit, threads=" + threads + "]";
    }

    // ------------------------------------------------------------------------------------------------ gemm

    @Override
    public void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                      MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                      float beta, MemorySegment c, long cOff, int ldc) {
        Checks.gemm(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc);
        gemm(threads, transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    }

    @Override
    public void sgemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, long aOff, int lda, long strideA,
                             MemorySegment b, long bOff, int ldb, long strideB,
                             float beta, MemorySegment c, long cOff, int ldc, long strideC) {
        Checks.gemmBatched(batch, transA, transB, m, n, k, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                c, cOff, ldc, strideC);
        long macs = (long) m * n * k;
        boolean shareable = shareable(a) && shareable(b) && shareable(c);
        if (shareable && threads > 1 && (batch >= 2 * threads || (batch > 1 && macs < PARALLEL_MIN_MACS))) {
            // whole products per thread: contiguous chunks of the batch
            int parts = (int) Math.min(threads, Math.max(1, Math.min(batch, (long) batch * macs / PARALLEL_MIN_MACS)));
            ComputePool.invoke(parts, part -> {
                int from = (int) ((long) batch * part / parts);
                int to = (int) ((long) batch * (part + 1) / parts);
                for (int i = from; i < to; i++) {
                    gemm(1, transA, transB, m, n, k, alpha, a, aOff + i * strideA, lda, b, bOff + i * strideB, ldb,
                            beta, c, cOff + i * strideC, ldc);
                }
            });
        } else {
            for (int i = 0; i < batch; i++) {
                gemm(threads, transA, transB, m, n, k, alpha, a, aOff + i * strideA, lda, b, bOff + i * strideB, ldb,
                        beta, c, cOff + i * strideC, ldc);
            }
        }
    }

    /** sgemm on validated arguments, split over up to {@code threads} threads. */
    private static void gemm(int threads, boolean ta, boolean tb, int m, int n, int k, float alpha,
                             MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                             float beta, MemorySegment c, long cOff, int ldc) {
        if (m == 0 || n == 0) {
            return;
        }
        if (k == 0 || alpha == 0f) {
            scaleMatrix(m, n, beta, c, cOff, ldc);
            return;
        }
        long macs = (long) m * n * k;
        if (threads > 1 && macs >= PARALLEL_MIN_MACS && !(shareable(a) && shareable(b) && shareable(c))) {
            threads = 1;
        }
        int mTiles = (m + VectorGemm.MR - 1) / VectorGemm.MR;
        int nTiles = (n + VectorGemm.NR - 1) / VectorGemm.NR;
        int parts = macs < PARALLEL_MIN_MACS ? 1 : (int) Math.min(threads, Math.max(1, macs / (PARALLEL_MIN_MACS / 2)));
        boolean byRows = mTiles >= nTiles || nTiles < parts;
        parts = Math.min(parts, byRows ? mTiles : nTiles);
        if (parts <= 1) {
            GEMM.get().gemm(ta, tb, 0, m, 0, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            return;
        }
        int tiles = byRows ? mTiles : nTiles;
        int unit = byRows ? VectorGemm.MR : VectorGemm.NR;
        int nparts = parts;
        ComputePool.invoke(parts, part -> {
            int from = (int) ((long) tiles * part / nparts) * unit;
            int to = Math.min(byRows ? m : n, (int) ((long) tiles * (part + 1) / nparts) * unit);
            VectorGemm g = GEMM.get();
            if (byRows) {
                g.gemm(ta, tb, from, to, 0, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            } else {
                g.gemm(ta, tb, 0, m, from, to, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
            }
        });
    }

    /** A thread that never runs: only non-confined segments are accessible by it. */
    private static final Thread STRANGER = Thread.ofPlatform().unstarted(() -> { });

    /** @return whether pool threads may access {@code s} (false for segments of a confined arena) */
    static boolean shareable(MemorySegment s) {
        return s.isAccessibleBy(STRANGER);
    }

    /** C = beta * C, with beta == 0 writing zeros whatever C held. */
    private static void scaleMatrix(int m, int n, float beta, MemorySegment c, long cOff, int ldc) {
        for (int i = 0; i < m; i++) {
            long row = cOff + (long) i * ldc;
            if (beta == 0f) {
                c.asSlice(row * Float.BYTES, (long) n * Float.BYTES).fill((byte) 0);
            } else if (beta != 1f) {
                for (int j = 0; j < n; j++) {
                    c.setAtIndex(F, row + j, beta * c.getAtIndex(F, row + j));
                }
            }
        }
    }

    @Override
    public void add(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        S.add(n, a, aOff, b, bOff, out, outOff);
    }

    @Override
    public void sub(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        S.sub(n, a, aOff, b, bOff, out, outOff);
    }

    @Override
    public void mul(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        S.mul(n, a, aOff, b, bOff, out, outOff);
    }

    @Override
    public void div(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        S.div(n, a, aOff, b, bOff, out, outOff);
    }

    @Override
    public void axpy(long n, float alpha, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        S.axpy(n, alpha, x, xOff, y, yOff);
    }

    @Override
    public void scale(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.scale(n, s, x, xOff, out, outOff);
    }

    @Override
    public void addScalar(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.addScalar(n, s, x, xOff, out, outOff);
    }

    @Override
    public void fill(long n, float v, MemorySegment out, long outOff) {
        S.fill(n, v, out, outOff);
    }

    @Override
    public void copy(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        S.copy(n, src, srcOff, dst, dstOff);
    }

    @Override
    public void neg(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.neg(n, x, xOff, out, outOff);
    }

    @Override
    public void exp(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.exp(n, x, xOff, out, outOff);
    }

    @Override
    public void log(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.log(n, x, xOff, out, outOff);
    }

    @Override
    public void sqrt(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.sqrt(n, x, xOff, out, outOff);
    }

    @Override
    public void tanh(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.tanh(n, x, xOff, out, outOff);
    }

    @Override
    public void sigmoid(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.sigmoid(n, x, xOff, out, outOff);
    }

    @Override
    public void relu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.relu(n, x, xOff, out, outOff);
    }

    @Override
    public void reluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        S.reluBackward(n, dy, dyOff, x, xOff, dx, dxOff);
    }

    @Override
    public void gelu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.gelu(n, x, xOff, out, outOff);
    }

    @Override
    public void geluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        S.geluBackward(n, dy, dyOff, x, xOff, dx, dxOff);
    }

    @Override
    public float sum(long n, MemorySegment x, long xOff) {
        return S.sum(n, x, xOff);
    }

    @Override
    public float max(long n, MemorySegment x, long xOff) {
        return S.max(n, x, xOff);
    }

    @Override
    public float sumOfSquares(long n, MemorySegment x, long xOff) {
        return S.sumOfSquares(n, x, xOff);
    }

    @Override
    public float dot(long n, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        return S.dot(n, x, xOff, y, yOff);
    }

    @Override
    public boolean anyNonFinite(long n, MemorySegment x, long xOff) {
        return S.anyNonFinite(n, x, xOff);
    }

    @Override
    public void softmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.softmaxRows(rows, cols, x, xOff, out, outOff);
    }

    @Override
    public void logSoftmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        S.logSoftmaxRows(rows, cols, x, xOff, out, outOff);
    }

    @Override
    public void softmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                    MemorySegment dx, long dxOff) {
        S.softmaxBackwardRows(rows, cols, y, yOff, dy, dyOff, dx, dxOff);
    }

    @Override
    public void logSoftmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                       MemorySegment dx, long dxOff) {
        S.logSoftmaxBackwardRows(rows, cols, y, yOff, dy, dyOff, dx, dxOff);
    }

    @Override
    public void layerNormRows(int rows, int cols, MemorySegment x, long xOff,
                              MemorySegment gamma, long gammaOff, MemorySegment beta, long betaOff, float eps,
                              MemorySegment out, long outOff, MemorySegment mean, long meanOff,
                              MemorySegment rstd, long rstdOff) {
        S.layerNormRows(rows, cols, x, xOff, gamma, gammaOff, beta, betaOff, eps, out, outOff, mean, meanOff, rstd, rstdOff);
    }

    @Override
    public void layerNormBackwardRows(int rows, int cols, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                                      MemorySegment mean, long meanOff, MemorySegment rstd, long rstdOff,
                                      MemorySegment gamma, long gammaOff,
                                      MemorySegment dx, long dxOff, MemorySegment dgamma, long dgammaOff,
                                      MemorySegment dbeta, long dbetaOff) {
        S.layerNormBackwardRows(rows, cols, dy, dyOff, x, xOff, mean, meanOff, rstd, rstdOff, gamma, gammaOff, dx, dxOff, dgamma, dgammaOff, dbeta, dbetaOff);
    }
}
