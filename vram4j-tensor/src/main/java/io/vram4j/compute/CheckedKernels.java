package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

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
    public void sgemmBias(boolean transA, boolean transB, int m, int n, int k, float alpha, MemorySegment a,
                          long aOff, int lda, MemorySegment b, long bOff, int ldb, MemorySegment bias, long biasOff,
                          long biasStride, MemorySegment c, long cOff, int ldc) {
        Checks.gemm(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc);
        Checks.nonNegative(biasStride, "biasStride");
        Checks.strided4(1, 1, m == 0 ? 0 : 1, n, bias, biasOff, "bias", 0, 0, 0, biasStride, "biasStride");
        unchecked.sgemmBias(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, bias, biasOff, biasStride,
                c, cOff, ldc);
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

    @Override
    public void fillBytes(long bytes, byte value, MemorySegment out, long byteOff) {
        Checks.nonNegative(bytes, "bytes");
        Checks.range(out, byteOff, bytes, "out", 1, "bytes");
        Checks.writable(out, "out");
        unchecked.fillBytes(bytes, value, out, byteOff);
    }

    @Override
    public void copyBytes(long bytes, MemorySegment src, long srcByteOff, MemorySegment dst, long dstByteOff) {
        checkByteCopy(bytes, src, srcByteOff, dst, dstByteOff);
        unchecked.copyBytes(bytes, src, srcByteOff, dst, dstByteOff);
    }

    @Override
    public void copyFromHost(long bytes, MemorySegment src, long srcByteOff, MemorySegment dst, long dstByteOff) {
        checkByteCopy(bytes, src, srcByteOff, dst, dstByteOff);
        unchecked.copyFromHost(bytes, src, srcByteOff, dst, dstByteOff);
    }

    private static void checkByteCopy(long bytes, MemorySegment src, long srcByteOff, MemorySegment dst,
                                      long dstByteOff) {
        Checks.nonNegative(bytes, "bytes");
        Checks.range(src, srcByteOff, bytes, "src", 1, "bytes");
        Checks.range(dst, dstByteOff, bytes, "dst", 1, "bytes");
        Checks.writable(dst, "dst");
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
    public void unary16(int op, int type, long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        Checks.half16("unary16", op, UNARY_GELU, type);
        Checks.nonNegative(n, "n");
        Checks.range(x, xOff, n, "x", Short.BYTES, "16-bit values");
        Checks.range(out, outOff, n, "out", Short.BYTES, "16-bit values");
        Checks.writable(out, "out");
        unchecked.unary16(op, type, n, x, xOff, out, outOff);
    }

    @Override
    public void binary16(int op, int type, int d0, int d1, int d2, int d3, MemorySegment a, long aOff, long as0,
                         long as1, long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2,
                         long bs3, MemorySegment out, long outOff) {
        Checks.half16("binary16", op, 3, type);
        long n = Checks.extents4(d0, d1, d2, d3);
        Checks.strided4(d0, d1, d2, d3, a, aOff, "a", as0, as1, as2, as3, "as", Short.BYTES);
        Checks.strided4(d0, d1, d2, d3, b, bOff, "b", bs0, bs1, bs2, bs3, "bs", Short.BYTES);
        Checks.range(out, outOff, n, "out", Short.BYTES, "16-bit values");
        Checks.writable(out, "out");
        unchecked.binary16(op, type, d0, d1, d2, d3, a, aOff, as0, as1, as2, as3, b, bOff, bs0, bs1, bs2, bs3, out,
                outOff);
    }

    @Override
    public void binaryMixed(int op, int type, int half16, int d0, int d1, int d2, int d3, MemorySegment a, long aOff,
                            long as0, long as1, long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1,
                            long bs2, long bs3, MemorySegment out, long outOff) {
        Checks.half16("binaryMixed", op, 3, type);
        if (half16 != 0 && half16 != 1) {
            throw new IllegalArgumentException("half16 " + half16 + " is neither 0 (a) nor 1 (b) (binaryMixed)");
        }
        long n = Checks.extents4(d0, d1, d2, d3);
        Checks.strided4(d0, d1, d2, d3, a, aOff, "a", as0, as1, as2, as3, "as", half16 == 0 ? Short.BYTES : Float.BYTES);
        Checks.strided4(d0, d1, d2, d3, b, bOff, "b", bs0, bs1, bs2, bs3, "bs", half16 == 1 ? Short.BYTES : Float.BYTES);
        Checks.range(out, outOff, n, "out");
        Checks.writable(out, "out");
        unchecked.binaryMixed(op, type, half16, d0, d1, d2, d3, a, aOff, as0, as1, as2, as3, b, bOff, bs0, bs1, bs2,
                bs3, out, outOff);
    }

    @Override
    public void pointwiseBackward16(int op, int type, long n, MemorySegment dy, long dyOff, MemorySegment x,
                                    long xOff, MemorySegment dx, long dxOff) {
        Checks.half16("pointwiseBackward16", op, BACKWARD_GELU, type);
        Checks.nonNegative(n, "n");
        Checks.range(dy, dyOff, n, "dy", Short.BYTES, "16-bit values");
        Checks.range(x, xOff, n, "x", Short.BYTES, "16-bit values");
        Checks.range(dx, dxOff, n, "dx", Short.BYTES, "16-bit values");
        Checks.writable(dx, "dx");
        unchecked.pointwiseBackward16(op, type, n, dy, dyOff, x, xOff, dx, dxOff);
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

    // ------------------------------------------------------------------------------------------------ device paths

    @Override
    public void copy4(int d0, int d1, int d2, int d3, MemorySegment src, long srcOff, long s0, long s1, long s2,
                      long s3, MemorySegment dst, long dstOff, long t0, long t1, long t2, long t3) {
        Checks.extents4(d0, d1, d2, d3);
        Checks.strided4(d0, d1, d2, d3, src, srcOff, "src", s0, s1, s2, s3, "s");
        Checks.strided4(d0, d1, d2, d3, dst, dstOff, "dst", t0, t1, t2, t3, "t");
        Checks.writable(dst, "dst");
        unchecked.copy4(d0, d1, d2, d3, src, srcOff, s0, s1, s2, s3, dst, dstOff, t0, t1, t2, t3);
    }

    @Override
    public void copy16(int d0, int d1, int d2, int d3, MemorySegment src, long srcOff, long s0, long s1, long s2,
                       long s3, MemorySegment dst, long dstOff, long t0, long t1, long t2, long t3) {
        Checks.extents4(d0, d1, d2, d3);
        Checks.strided4(d0, d1, d2, d3, src, srcOff, "src", s0, s1, s2, s3, "s", Short.BYTES);
        Checks.strided4(d0, d1, d2, d3, dst, dstOff, "dst", t0, t1, t2, t3, "t", Short.BYTES);
        Checks.writable(dst, "dst");
        unchecked.copy16(d0, d1, d2, d3, src, srcOff, s0, s1, s2, s3, dst, dstOff, t0, t1, t2, t3);
    }

    @Override
    public void binary4(int op, int d0, int d1, int d2, int d3, MemorySegment a, long aOff, long as0, long as1,
                        long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2, long bs3,
                        MemorySegment out, long outOff) {
        if (op < 0 || op > 3) {
            throw new IllegalArgumentException("op must be 0 (add), 1 (sub), 2 (mul) or 3 (div), got " + op);
        }
        long n = Checks.extents4(d0, d1, d2, d3);
        Checks.strided4(d0, d1, d2, d3, a, aOff, "a", as0, as1, as2, as3, "as");
        Checks.strided4(d0, d1, d2, d3, b, bOff, "b", bs0, bs1, bs2, bs3, "bs");
        Checks.range(out, outOff, n, "out");
        Checks.writable(out, "out");
        unchecked.binary4(op, d0, d1, d2, d3, a, aOff, as0, as1, as2, as3, b, bOff, bs0, bs1, bs2, bs3, out, outOff);
    }

    @Override
    public void sumDim(int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long m = Checks.dims3(outer, n, inner, x, xOff);
        Checks.range(out, outOff, m, "out");
        Checks.writable(out, "out");
        unchecked.sumDim(outer, n, inner, x, xOff, out, outOff);
    }

    @Override
    public void sumDim16(int type, int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out,
                         long outOff) {
        sixteenBitSumOperands("sumDim16", type, outer, n, inner, x, xOff);
        Checks.range(out, outOff, (long) outer * inner, "out");
        Checks.writable(out, "out");
        unchecked.sumDim16(type, outer, n, inner, x, xOff, out, outOff);
    }

    @Override
    public void sumDimTo16(int type, int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out,
                           long outOff) {
        sixteenBitSumOperands("sumDimTo16", type, outer, n, inner, x, xOff);
        Checks.range(out, outOff, (long) outer * inner, "out", Short.BYTES, "16-bit values");
        Checks.writable(out, "out");
        unchecked.sumDimTo16(type, outer, n, inner, x, xOff, out, outOff);
    }

    /** The type, extents and 16-bit input of {@code sumDim16} and {@code sumDimTo16}. */
    private static void sixteenBitSumOperands(String kernel, int type, int outer, int n, int inner, MemorySegment x,
                                              long xOff) {
        Checks.half16(kernel, 0, 0, type);
        Checks.nonNegative(outer, "outer");
        Checks.nonNegative(n, "n");
        Checks.nonNegative(inner, "inner");
        Checks.range(x, xOff, (long) outer * n * inner, "x", Short.BYTES, "16-bit values");
    }

    @Override
    public void maxDim(int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment values, long valuesOff,
                       MemorySegment indices, long indicesOff) {
        long m = Checks.dims3(outer, n, inner, x, xOff);
        if (n < 1) {
            throw new IllegalArgumentException("n must be >= 1 (max over an empty dimension), got " + n);
        }
        Checks.optionalRange(values, valuesOff, m, "values");
        Checks.writable(values, "values");
        Checks.longs(indices, indicesOff, m, "indices");
        Checks.writable(indices, "indices");
        unchecked.maxDim(outer, n, inner, x, xOff, values, valuesOff, indices, indicesOff);
    }

    @Override
    public void dropout(long n, float p, float scale, long seed, MemorySegment x, long xOff, MemorySegment out,
                        long outOff, MemorySegment mask, long maskOff) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("p must be in [0, 1], got " + p);
        }
        Checks.range2(n, x, xOff, "x", out, outOff, "out");
        Checks.bytes(mask, maskOff, n, "mask");
        Checks.writable(mask, "mask");
        unchecked.dropout(n, p, scale, seed, x, xOff, out, outOff, mask, maskOff);
    }

    @Override
    public void dropoutBackward(long n, float scale, MemorySegment dy, long dyOff, MemorySegment mask, long maskOff,
                                MemorySegment dx, long dxOff) {
        Checks.range2(n, dy, dyOff, "dy", dx, dxOff, "dx");
        Checks.bytes(mask, maskOff, n, "mask");
        unchecked.dropoutBackward(n, scale, dy, dyOff, mask, maskOff, dx, dxOff);
    }

    private static void nll(int n, int c, MemorySegment logp, long logpOff, String logpName, MemorySegment targets,
                            long targetsOff) {
        Checks.nonNegative(n, "n");
        Checks.nonNegative(c, "c");
        Checks.range(logp, logpOff, (long) n * c, logpName);
        Checks.longs(targets, targetsOff, n, "targets");
    }

    @Override
    public void nllLoss(int n, int c, long ignoreIndex, MemorySegment logp, long logpOff, MemorySegment targets,
                        long targetsOff, MemorySegment out, long outOff) {
        nll(n, c, logp, logpOff, "logp", targets, targetsOff);
        Checks.range(out, outOff, 1, "out");
        Checks.writable(out, "out");
        unchecked.nllLoss(n, c, ignoreIndex, logp, logpOff, targets, targetsOff, out, outOff);
    }

    @Override
    public void nllLossBackward(int n, int c, long ignoreIndex, MemorySegment g, long gOff, MemorySegment targets,
                                long targetsOff, MemorySegment dlogp, long dlogpOff) {
        nll(n, c, dlogp, dlogpOff, "dlogp", targets, targetsOff);
        Checks.range(g, gOff, 1, "g");
        Checks.writable(dlogp, "dlogp");
        unchecked.nllLossBackward(n, c, ignoreIndex, g, gOff, targets, targetsOff, dlogp, dlogpOff);
    }

    private static void table(long count, int rows, int cols, MemorySegment table, long tableOff, String tableName,
                              MemorySegment idx, long idxOff, MemorySegment g, long gOff, String gName) {
        Checks.nonNegative(count, "count");
        Checks.rows(rows, cols);
        Checks.range(table, tableOff, (long) rows * cols, tableName);
        Checks.longs(idx, idxOff, count, "idx");
        Checks.range(g, gOff, Math.multiplyExact(count, (long) cols), gName);
    }

    @Override
    public void embedding(long count, int rows, int cols, MemorySegment weight, long weightOff, MemorySegment idx,
                          long idxOff, MemorySegment out, long outOff) {
        table(count, rows, cols, weight, weightOff, "weight", idx, idxOff, out, outOff, "out");
        Checks.writable(out, "out");
        unchecked.embedding(count, rows, cols, weight, weightOff, idx, idxOff, out, outOff);
    }

    @Override
    public void embeddingBackward(long count, int rows, int cols, MemorySegment g, long gOff, MemorySegment idx,
                                  long idxOff, MemorySegment dweight, long dweightOff) {
        table(count, rows, cols, dweight, dweightOff, "dweight", idx, idxOff, g, gOff, "g");
        Checks.writable(dweight, "dweight");
        unchecked.embeddingBackward(count, rows, cols, g, gOff, idx, idxOff, dweight, dweightOff);
    }

    @Override
    public void maskUpper(long mats, int t, int s, float fill, MemorySegment x, long xOff, MemorySegment out,
                          long outOff) {
        Checks.nonNegative(mats, "mats");
        Checks.nonNegative(t, "t");
        Checks.nonNegative(s, "s");
        Checks.range2(Math.multiplyExact(mats, (long) t * s), x, xOff, "x", out, outOff, "out");
        unchecked.maskUpper(mats, t, s, fill, x, xOff, out, outOff);
    }

    @Override
    public void iota(long n, MemorySegment out, long outOff) {
        Checks.nonNegative(n, "n");
        Checks.longs(out, outOff, n, "out");
        Checks.writable(out, "out");
        unchecked.iota(n, out, outOff);
    }

    @Override
    public void sgdMulti(int count, long[] sizes, MemorySegment[] params, MemorySegment[] grads, MemorySegment[] bufs,
                         float lr, float momentum, float weightDecay, boolean nesterov, boolean first) {
        Checks.tensorList(count, sizes);
        Checks.tensors(count, sizes, params, "params", true);
        Checks.tensors(count, sizes, grads, "grads", false);
        if (bufs != null || momentum != 0) {
            Checks.tensors(count, sizes, bufs, "bufs", true);
        }
        unchecked.sgdMulti(count, sizes, params, grads, bufs, lr, momentum, weightDecay, nesterov, first);
    }

    @Override
    public void adamwMulti(int count, long[] sizes, MemorySegment[] params, MemorySegment[] grads, MemorySegment[] ms,
                           MemorySegment[] vs, float beta1, float beta2, float eps, float decay, float stepSize,
                           float bc2Sqrt) {
        Checks.tensorList(count, sizes);
        Checks.tensors(count, sizes, params, "params", true);
        Checks.tensors(count, sizes, grads, "grads", false);
        Checks.tensors(count, sizes, ms, "ms", true);
        Checks.tensors(count, sizes, vs, "vs", true);
        unchecked.adamwMulti(count, sizes, params, grads, ms, vs, beta1, beta2, eps, decay, stepSize, bc2Sqrt);
    }

    @Override
    public void gemmBatched16(boolean bf16, int batch, boolean transA, boolean transB, int m, int n, int k,
                              float alpha, MemorySegment a, long aOff, int lda, long strideA, MemorySegment b,
                              long bOff, int ldb, long strideB, float beta, MemorySegment c, long cOff, int ldc,
                              long strideC) {
        Checks.gemmBatched(batch, transA, transB, m, n, k, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                c, cOff, ldc, strideC, Short.BYTES);
        unchecked.gemmBatched16(bf16, batch, transA, transB, m, n, k, alpha, a, aOff, lda, strideA, b, bOff, ldb,
                strideB, beta, c, cOff, ldc, strideC);
    }

    @Override
    public void gemmBatched16Bias(boolean bf16, int batch, boolean transA, boolean transB, int m, int n, int k,
                                  float alpha, MemorySegment a, long aOff, int lda, long strideA, MemorySegment b,
                                  long bOff, int ldb, long strideB, MemorySegment bias, long biasOff, long biasStride,
                                  MemorySegment c, long cOff, int ldc, long strideC) {
        Checks.gemmBatched(batch, transA, transB, m, n, k, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                c, cOff, ldc, strideC, Short.BYTES);
        Checks.nonNegative(biasStride, "biasStride");
        Checks.strided4(1, 1, batch == 0 || m == 0 ? 0 : 1, n, bias, biasOff, "bias", 0, 0, 0, biasStride,
                "biasStride", Short.BYTES);
        unchecked.gemmBatched16Bias(bf16, batch, transA, transB, m, n, k, alpha, a, aOff, lda, strideA, b, bOff, ldb,
                strideB, bias, biasOff, biasStride, c, cOff, ldc, strideC);
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
        attentionGradients(n, dq, dqOff, dk, dkOff, dv, dvOff);
        unchecked.attentionBackward(batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff,
                lse, lseOff, dout, doutOff, dq, dqOff, dk, dkOff, dv, dvOff);
    }

    @Override
    public void attentionForwardStrided(int type, int batchHeads, int heads, long batchStride, long headStride,
                                        long rowStride, long outBatchStride, long outHeadStride, long outRowStride,
                                        int t, int d, float scale, boolean causal, MemorySegment q, long qOff,
                                        MemorySegment k, long kOff, MemorySegment v, long vOff, MemorySegment out,
                                        long outOff, MemorySegment lse, long lseOff) {
        stridedAttentionOperands("attentionForwardStrided", type, batchHeads, heads, batchStride, headStride,
                rowStride, t, d, q, qOff, k, kOff, v, vOff, lse, lseOff);
        stridedAttentionResult(type, batchHeads, heads, outBatchStride, outHeadStride, outRowStride, t, d, out, outOff,
                "out", "out");
        Checks.writable(lse, "lse");
        unchecked.attentionForwardStrided(type, batchHeads, heads, batchStride, headStride, rowStride, outBatchStride,
                outHeadStride, outRowStride, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff, lse, lseOff);
    }

    @Override
    public void attentionBackwardStrided(int type, int batchHeads, int heads, long batchStride, long headStride,
                                         long rowStride, long outBatchStride, long outHeadStride, long outRowStride,
                                         long doutBatchStride, long doutHeadStride, long doutRowStride,
                                         long gradBatchStride, long gradHeadStride, long gradRowStride, int t, int d,
                                         float scale, boolean causal, MemorySegment q, long qOff, MemorySegment k,
                                         long kOff, MemorySegment v, long vOff, MemorySegment out, long outOff,
                                         MemorySegment lse, long lseOff, MemorySegment dout, long doutOff,
                                         MemorySegment dq, long dqOff, MemorySegment dk, long dkOff, MemorySegment dv,
                                         long dvOff) {
        stridedAttentionOperands("attentionBackwardStrided", type, batchHeads, heads, batchStride, headStride,
                rowStride, t, d, q, qOff, k, kOff, v, vOff, lse, lseOff);
        attentionRows(type, batchHeads, heads, outBatchStride, outHeadStride, outRowStride, t, d, out, outOff, "out",
                "outBatchStride", "outHeadStride", "outRowStride");
        attentionRows(type, batchHeads, heads, doutBatchStride, doutHeadStride, doutRowStride, t, d, dout, doutOff,
                "dout", "doutBatchStride", "doutHeadStride", "doutRowStride");
        stridedAttentionResult(type, batchHeads, heads, gradBatchStride, gradHeadStride, gradRowStride, t, d, dq, dqOff,
                "dq", "grad");
        stridedAttentionResult(type, batchHeads, heads, gradBatchStride, gradHeadStride, gradRowStride, t, d, dk, dkOff,
                "dk", "grad");
        stridedAttentionResult(type, batchHeads, heads, gradBatchStride, gradHeadStride, gradRowStride, t, d, dv, dvOff,
                "dv", "grad");
        unchecked.attentionBackwardStrided(type, batchHeads, heads, batchStride, headStride, rowStride, outBatchStride,
                outHeadStride, outRowStride, doutBatchStride, doutHeadStride, doutRowStride, gradBatchStride,
                gradHeadStride, gradRowStride, t, d, scale, causal, q,
                qOff, k, kOff, v, vOff, out, outOff, lse, lseOff, dout, doutOff, dq, dqOff, dk, dkOff, dv, dvOff);
    }

    /**
     * Checks a strided attention result ({@code Kernels.attentionForwardStrided}'s output, a gradient of
     * {@code attentionBackwardStrided}): its strides reach only its own elements, no two of its elements share an
     * address, and it is writable.
     *
     * @param layout the strides' parameter names without "BatchStride" and the like: {@code out} or {@code grad}
     */
    private static void stridedAttentionResult(int type, int batchHeads, int heads, long sb, long sh, long st, int t,
                                               int d, MemorySegment seg, long off, String name, String layout) {
        attentionRows(type, batchHeads, heads, sb, sh, st, t, d, seg, off, name, layout + "BatchStride",
                layout + "HeadStride", layout + "RowStride");
        if (overlaps(new long[] {batchHeads / heads, heads, t, d}, new long[] {sb, sh, st, 1})) {
            throw new IllegalArgumentException(name + ": the " + (layout.equals("out") ? "output" : "gradients'")
                    + " layout (" + layout + "BatchStride " + sb + ", " + layout + "HeadStride " + sh + ", " + layout
                    + "RowStride " + st + ") puts two elements at one address");
        }
        Checks.writable(seg, name);
    }

    /**
     * @return whether two elements of a layout with these sizes and non-negative strides may share an address: true
     *     unless, its dimensions of more than one element ordered by stride, each stride reaches past the span of
     *     those before it (the sufficient test PyTorch's non-overlapping-and-dense check also uses)
     */
    static boolean overlaps(long[] sizes, long[] strides) {
        Integer[] order = new Integer[sizes.length];
        for (int i = 0; i < order.length; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (x, y) -> Long.compare(strides[x], strides[y]));
        long span = 1;   // elements from the first to one past the last of the dimensions so far
        for (int i : order) {
            if (sizes[i] <= 1) {
                continue;
            }
            if (strides[i] < span) {
                return true;
            }
            span = strides[i] * (sizes[i] - 1) + span;
        }
        return false;
    }

    /** Checks the three gradients both attention backward kernels write: {@code n} floats each, writable. */
    private static void attentionGradients(long n, MemorySegment dq, long dqOff, MemorySegment dk, long dkOff,
                                           MemorySegment dv, long dvOff) {
        Checks.range(dq, dqOff, n, "dq");
        Checks.range(dk, dkOff, n, "dk");
        Checks.range(dv, dvOff, n, "dv");
        Checks.writable(dq, "dq");
        Checks.writable(dk, "dk");
        Checks.writable(dv, "dv");
    }

    /**
     * Checks the type, the sizes, the layout and the operands both strided attention kernels take (q, k, v: of
     * {@code type}, in the layout of {@code Kernels.attentionForwardStrided}; lse: float32 {@code [batchHeads, t]}).
     */
    private static void stridedAttentionOperands(String kernel, int type, int batchHeads, int heads, long batchStride,
                                                 long headStride, long rowStride, int t, int d, MemorySegment q,
                                                 long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                                 MemorySegment lse, long lseOff) {
        if (type != Kernels.FLOAT32 && type != Kernels.FLOAT16 && type != Kernels.BFLOAT16) {
            throw new IllegalArgumentException("type " + type + " is none of FLOAT32 (2), FLOAT16 (0), BFLOAT16 (1) ("
                    + kernel + ")");
        }
        attentionSizes(batchHeads, t, d);
        if (heads < 1 || batchHeads % heads != 0) {
            throw new IllegalArgumentException("heads must be at least 1 and divide batchHeads = " + batchHeads
                    + ", got " + heads);
        }
        attentionRows(type, batchHeads, heads, batchStride, headStride, rowStride, t, d, q, qOff, "q", "batchStride",
                "headStride", "rowStride");
        attentionRows(type, batchHeads, heads, batchStride, headStride, rowStride, t, d, k, kOff, "k", "batchStride",
                "headStride", "rowStride");
        attentionRows(type, batchHeads, heads, batchStride, headStride, rowStride, t, d, v, vOff, "v", "batchStride",
                "headStride", "rowStride");
        Checks.range(lse, lseOff, (long) batchHeads * t, "lse");
    }

    /** Checks a strided attention operand's strides (at least 0) and that every element they reach lies in it. */
    private static void attentionRows(int type, int batchHeads, int heads, long sb, long sh, long st, int t, int d,
                                      MemorySegment seg, long off, String name, String sbName, String shName,
                                      String stName) {
        Checks.nonNegative(sb, sbName);
        Checks.nonNegative(sh, shName);
        Checks.nonNegative(st, stName);
        long reach = 0;
        if ((long) batchHeads * t * d > 0) {
            try {
                reach = Math.addExact(Math.addExact(Math.multiplyExact(batchHeads / heads - 1L, sb),
                        Math.multiplyExact(heads - 1L, sh)), Math.addExact(Math.multiplyExact(t - 1L, st), d));
            } catch (ArithmeticException e) {
                throw new IndexOutOfBoundsException(name + ": its strides reach beyond any segment");
            }
        }
        if (type == Kernels.FLOAT32) {
            Checks.range(seg, off, reach, name);
        } else {
            Checks.range(seg, off, reach, name, Short.BYTES, "16-bit values");
        }
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
