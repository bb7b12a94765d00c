package io.vram4j.compute;

import java.lang.foreign.MemorySegment;

/**
 * The one layer that checks kernel arguments: every call is validated here, once, and then handed to an
 * implementation that does no checking of its own. {@link Kernels#scalar()}, {@link Kernels#vector()},
 * {@link Kernels#best()} and {@code withThreads} return kernels wrapped in this class, so whatever
 * implementation runs, the exceptions documented on {@link Kernels} are thrown before anything is written.
 *
 * <p>It knows nothing of the implementation it wraps: any {@link Kernels} that presents its memory as
 * {@link MemorySegment}s of the right byte size can be wrapped. Stateless apart from the wrapped kernels,
 * so thread-safe when they are.
 */
final class CheckedKernels implements Kernels {

    private final Kernels unchecked;

    private CheckedKernels(Kernels unchecked) {
        this.unchecked = unchecked;
    }

    /**
     * @param kernels an implementation that trusts its arguments
     * @return {@code kernels} behind the argument checks ({@code kernels} itself if it is already checked)
     */
    static Kernels of(Kernels kernels) {
        return kernels instanceof CheckedKernels ? kernels : new CheckedKernels(kernels);
    }

    /** @return the wrapped implementation, which does not check its arguments */
    Kernels unchecked() {
        return unchecked;
    }

    @Override
    public String name() {
        return unchecked.name();
    }

    @Override
    public int threads() {
        return unchecked.threads();
    }

    @Override
    public Kernels withThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        Kernels k = unchecked.withThreads(threads);
        return k == unchecked ? this : of(k);
    }

    @Override
    public String toString() {
        return unchecked.toString();
    }

    // ------------------------------------------------------------------------------------------------ gemm

    @Override
    public void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                      MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                      float beta, MemorySegment c, long cOff, int ldc) {
        Checks.gemm(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc);
        unchecked.sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    }

    @Override
    public void sgemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, long aOff, int lda, long strideA,
                             MemorySegment b, long bOff, int ldb, long strideB,
                             float beta, MemorySegment c, long cOff, int ldc, long strideC) {
        Checks.gemmBatched(batch, transA, transB, m, n, k, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                c, cOff, ldc, strideC);
        unchecked.sgemmBatched(batch, transA, transB, m, n, k, alpha, a, aOff, lda, strideA,
                b, bOff, ldb, strideB, beta, c, cOff, ldc, strideC);
    }

    // ------------------------------------------------------------------------------------------------ binary

    @Override
    public void add(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        Checks.range3(n, a, aOff, "a", b, bOff, "b", out, outOff, "out");
        unchecked.add(n, a, aOff, b, bOff, out, outOff);
    }

    @Override
    public void sub(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        Checks.range3(n, a, aOff, "a", b, bOff, "b", out, outOff, "out");
        unchecked.sub(n, a, aOff, b, bOff, out, outOff);
    }

    @Override
    public void mul(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        Checks.range3(n, a, aOff, "a", b, bOff, "b", out, outOff, "out");
        unchecked.mul(n, a, aOff, b, bOff, out, outOff);
    }

    @Override
    public void div(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        Checks.range3(n, a, aOff, "a", b, bOff, "b", out, outOff, "out");
        unchecked.div(n, a, aOff, b, bOff, out, outOff);
    }

    // ------------------------------------------------------------------------------------------------ with a scalar

    @Override
    public void axpy(long n, float alpha, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        Checks.range2(n, x, xOff, "x", y, yOff, "y");
        unchecked.axpy(n, alpha, x, xOff, y, yOff);
    }

    @Override
    public void scale(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.scale(n, s, x, xOff, out, outOff);
    }

    @Override
    public void addScalar(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.addScalar(n, s, x, xOff, out, outOff);
    }

    @Override
    public void fill(long n, float v, MemorySegment out, long outOff) {
        Checks.range1(n, out, outOff, "out");
        Checks.writable(out, "out");
        unchecked.fill(n, v, out, outOff);
    }

    @Override
    public void copy(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Checks.range2(n, src, srcOff, "src", dst, dstOff, "dst");
        unchecked.copy(n, src, srcOff, dst, dstOff);
    }

    // ------------------------------------------------------------------------------------------------ conversions

    @Override
    public void floatToFp16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Checks.convert(n, true, src, srcOff, dst, dstOff);
        unchecked.floatToFp16(n, src, srcOff, dst, dstOff);
    }

    @Override
    public void floatToBf16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Checks.convert(n, true, src, srcOff, dst, dstOff);
        unchecked.floatToBf16(n, src, srcOff, dst, dstOff);
    }

    @Override
    public void fp16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Checks.convert(n, false, src, srcOff, dst, dstOff);
        unchecked.fp16ToFloat(n, src, srcOff, dst, dstOff);
    }

    @Override
    public void bf16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Checks.convert(n, false, src, srcOff, dst, dstOff);
        unchecked.bf16ToFloat(n, src, srcOff, dst, dstOff);
    }

    // ------------------------------------------------------------------------------------------------ unary

    @Override
    public void neg(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.neg(n, x, xOff, out, outOff);
    }

    @Override
    public void exp(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.exp(n, x, xOff, out, outOff);
    }

    @Override
    public void log(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.log(n, x, xOff, out, outOff);
    }

    @Override
    public void sqrt(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.sqrt(n, x, xOff, out, outOff);
    }

    @Override
    public void tanh(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.tanh(n, x, xOff, out, outOff);
    }

    @Override
    public void sigmoid(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.sigmoid(n, x, xOff, out, outOff);
    }

    @Override
    public void relu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.relu(n, x, xOff, out, outOff);
    }

    @Override
    public void reluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        Checks.range3(n, dy, dyOff, "dy", x, xOff, "x", dx, dxOff, "dx");
        unchecked.reluBackward(n, dy, dyOff, x, xOff, dx, dxOff);
    }

    @Override
    public void gelu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        unchecked.gelu(n, x, xOff, out, outOff);
    }

    @Override
    public void geluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        Checks.range3(n, dy, dyOff, "dy", x, xOff, "x", dx, dxOff, "dx");
        unchecked.geluBackward(n, dy, dyOff, x, xOff, dx, dxOff);
    }

    // ------------------------------------------------------------------------------------------------ reductions

    @Override
    public float sum(long n, MemorySegment x, long xOff) {
        Checks.range1(n, x, xOff, "x");
        return unchecked.sum(n, x, xOff);
    }

    @Override
    public float max(long n, MemorySegment x, long xOff) {
        Checks.range1(n, x, xOff, "x");
        return unchecked.max(n, x, xOff);
    }

    @Override
    public float sumOfSquares(long n, MemorySegment x, long xOff) {
        Checks.range1(n, x, xOff, "x");
        return unchecked.sumOfSquares(n, x, xOff);
    }

    @Override
    public float dot(long n, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        Checks.range1(n, x, xOff, "x");
        Checks.range(y, yOff, n, "y");
        return unchecked.dot(n, x, xOff, y, yOff);
    }

    @Override
    public boolean anyNonFinite(long n, MemorySegment x, long xOff) {
        Checks.range1(n, x, xOff, "x");
        return unchecked.anyNonFinite(n, x, xOff);
    }

    // ------------------------------------------------------------------------------------------------ rows

    @Override
    public void softmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.rows(rows, cols, x, xOff, "x", out, outOff, "out");
        Checks.writable(out, "out");
        unchecked.softmaxRows(rows, cols, x, xOff, out, outOff);
    }

    @Override
    public void logSoftmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.rows(rows, cols, x, xOff, "x", out, outOff, "out");
        Checks.writable(out, "out");
        unchecked.logSoftmaxRows(rows, cols, x, xOff, out, outOff);
    }

    @Override
    public void softmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                    MemorySegment dx, long dxOff) {
        Checks.rows(rows, cols, y, yOff, "y", dy, dyOff, "dy");
        Checks.range(dx, dxOff, (long) rows * cols, "dx");
        Checks.writable(dx, "dx");
        unchecked.softmaxBackwardRows(rows, cols, y, yOff, dy, dyOff, dx, dxOff);
    }

    @Override
    public void logSoftmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                       MemorySegment dx, long dxOff) {
        Checks.rows(rows, cols, y, yOff, "y", dy, dyOff, "dy");
        Checks.range(dx, dxOff, (long) rows * cols, "dx");
        Checks.writable(dx, "dx");
        unchecked.logSoftmaxBackwardRows(rows, cols, y, yOff, dy, dyOff, dx, dxOff);
    }

    @Override
    public void layerNormRows(int rows, int cols, MemorySegment x, long xOff,
                              MemorySegment gamma, long gammaOff, MemorySegment beta, long betaOff, float eps,
                              MemorySegment out, long outOff, MemorySegment mean, long meanOff,
                              MemorySegment rstd, long rstdOff) {
        Checks.rows(rows, cols, x, xOff, "x", out, outOff, "out");
        Checks.writable(out, "out");
        Checks.optionalRange(gamma, gammaOff, cols, "gamma");
        Checks.optionalRange(beta, betaOff, cols, "beta");
        Checks.optionalRange(mean, meanOff, rows, "mean");
        Checks.optionalRange(rstd, rstdOff, rows, "rstd");
        Checks.writable(mean, "mean");
        Checks.writable(rstd, "rstd");
        unchecked.layerNormRows(rows, cols, x, xOff, gamma, gammaOff, beta, betaOff, eps, out, outOff,
                mean, meanOff, rstd, rstdOff);
    }

    @Override
    public void layerNormBackwardRows(int rows, int cols, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                                      MemorySegment mean, long meanOff, MemorySegment rstd, long rstdOff,
                                      MemorySegment gamma, long gammaOff,
                                      MemorySegment dx, long dxOff, MemorySegment dgamma, long dgammaOff,
                                      MemorySegment dbeta, long dbetaOff) {
        Checks.rows(rows, cols, dy, dyOff, "dy", x, xOff, "x");
        Checks.range(mean, meanOff, rows, "mean");
        Checks.range(rstd, rstdOff, rows, "rstd");
        Checks.optionalRange(gamma, gammaOff, cols, "gamma");
        Checks.optionalRange(dx, dxOff, (long) rows * cols, "dx");
        Checks.optionalRange(dgamma, dgammaOff, cols, "dgamma");
        Checks.optionalRange(dbeta, dbetaOff, cols, "dbeta");
        Checks.writable(dx, "dx");
        Checks.writable(dgamma, "dgamma");
        Checks.writable(dbeta, "dbeta");
        unchecked.layerNormBackwardRows(rows, cols, dy, dyOff, x, xOff, mean, meanOff, rstd, rstdOff,
                gamma, gammaOff, dx, dxOff, dgamma, dgammaOff, dbeta, dbetaOff);
    }

    // ------------------------------------------------------------------------------------------------ attention

    @Override
    public void attentionForward(int batchHeads, int t, int d, float scale, boolean causal,
                                 MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                 MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        attentionOperands(batchHeads, t, d, q, qOff, k, kOff, v, vOff, out, outOff, lse, lseOff);
        Checks.writable(out, "out");
        Checks.writable(lse, "lse");
        unchecked.attentionForward(batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff, lse, lseOff);
    }

    @Override
    public void attentionBackward(int batchHeads, int t, int d, float scale, boolean causal,
                                  MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                  MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                                  MemorySegment dout, long doutOff,
                                  MemorySegment dq, long dqOff, MemorySegment dk, long dkOff,
                                  MemorySegment dv, long dvOff) {
        long n = attentionOperands(batchHeads, t, d, q, qOff, k, kOff, v, vOff, out, outOff, lse, lseOff);
        Checks.range(dout, doutOff, n, "dout");
        Checks.range(dq, dqOff, n, "dq");
        Checks.range(dk, dkOff, n, "dk");
        Checks.range(dv, dvOff, n, "dv");
        Checks.writable(dq, "dq");
        Checks.writable(dk, "dk");
        Checks.writable(dv, "dv");
        unchecked.attentionBackward(batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff,
                lse, lseOff, dout, doutOff, dq, dqOff, dk, dkOff, dv, dvOff);
    }

    /**
     * Checks the sizes and the operands both attention kernels take (q, k, v, out: {@code [batchHeads, t, d]};
     * lse: {@code [batchHeads, t]}).
     *
     * @return the floats of one {@code [batchHeads, t, d]} operand
     */
    private static long attentionOperands(int batchHeads, int t, int d, MemorySegment q, long qOff,
                                          MemorySegment k, long kOff, MemorySegment v, long vOff,
                                          MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        long n = attentionSizes(batchHeads, t, d);
        Checks.range(q, qOff, n, "q");
        Checks.range(k, kOff, n, "k");
        Checks.range(v, vOff, n, "v");
        Checks.range(out, outOff, n, "out");
        Checks.range(lse, lseOff, (long) batchHeads * t, "lse");
        return n;
    }

    /** @return the floats of one {@code [batchHeads, t, d]} operand, after checking the sizes */
    private static long attentionSizes(int batchHeads, int t, int d) {
        Checks.nonNegative(batchHeads, "batchHeads");
        Checks.nonNegative(t, "t");
        Checks.nonNegative(d, "d");
        try {
            return Math.multiplyExact(Math.multiplyExact((long) batchHeads, t), d);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("batchHeads * t * d overflows: " + batchHeads + " * " + t + " * " + d);
        }
    }
}
