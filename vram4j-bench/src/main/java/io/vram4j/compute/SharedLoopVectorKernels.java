package io.vram4j.compute;

import static io.vram4j.compute.VectorKernels.L;
import static io.vram4j.compute.VectorKernels.SP;
import static io.vram4j.compute.VectorKernels.load;
import static io.vram4j.compute.VectorKernels.store;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/**
 * The alternative of {@code ElementwiseBenchmark}, tried and not kept (BENCHMARKS.md, "Vector element-wise kernels:
 * one shared loop per family, measured"): {@link VectorKernels}' element-wise kernels on one shared loop per
 * family, as {@link ScalarKernels} has them. The loop takes the operation as a function object, one
 * {@code static final} constant per kernel ({@link Unary}, {@link WithScalar}, {@link Binary},
 * {@link BinaryWithScalar}), and finishes with a masked vector like the real kernels, so every kernel gives the
 * bits of {@link VectorKernels}. The math of each element ({@code VectorExp}, {@link VectorKernels#sigmoid},
 * {@link VectorKernels#gelu}, {@link VectorKernels#geluDerivative}) and the loads and stores are
 * {@link VectorKernels}' own, so only the loop shape differs; every other kernel is handed to
 * {@link VectorKernels}.
 *
 * <p>In the bench module, in the package of the kernels so that it can reach them; not part of the product.
 * Stateless, so thread-safe. Arguments are not checked here: {@link #create()} puts it behind
 * {@link CheckedKernels} like the real kernels.
 */
public final class SharedLoopVectorKernels implements HostConversions, HostDevicePaths {

    private final Kernels shared;

    private SharedLoopVectorKernels(Kernels shared) {
        this.shared = shared;
    }

    /**
     * @return the shared-loop vector kernels behind the argument checks, single-threaded sgemm
     * @throws LinkageError without {@code --add-modules jdk.incubator.vector}
     */
    public static Kernels create() {
        return Kernels.checked(new SharedLoopVectorKernels(VectorKernels.create(1)));
    }

    @Override
    public String name() {
        return "vector-shared-loops";
    }

    @Override
    public int threads() {
        return 1;
    }

    @Override
    public Kernels withThreads(int threads) {
        return this;
    }

    // ------------------------------------------------------------------------------------------------ loops

    /** The math of a unary element-wise kernel on one vector of elements. */
    @FunctionalInterface
    private interface Unary {
        FloatVector apply(FloatVector x);
    }

    /** The math of an element-wise kernel with a scalar operand {@code s} on one vector of elements. */
    @FunctionalInterface
    private interface WithScalar {
        FloatVector apply(FloatVector x, float s);
    }

    /** The math of a binary element-wise kernel with a scalar operand {@code s} on one vector of each. */
    @FunctionalInterface
    private interface BinaryWithScalar {
        FloatVector apply(FloatVector a, FloatVector b, float s);
    }

    /** The math of a binary element-wise kernel (or of a backward one: {@code a} is dy) on one vector of each. */
    @FunctionalInterface
    private interface Binary {
        FloatVector apply(FloatVector a, FloatVector b);
    }

    /** The loop of every unary element-wise kernel: {@code out[i] = f(x[i])}. */
    private static void map(long n, MemorySegment x, long xOff, MemorySegment out, long outOff, Unary f) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(f.apply(load(x, xOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(f.apply(load(x, xOff + i, m)), out, outOff + i, m);
        }
    }

    /** The loop of every element-wise kernel with a scalar operand: {@code out[i] = f(x[i], s)}. */
    private static void map(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff,
                            WithScalar f) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(f.apply(load(x, xOff + i), s), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(f.apply(load(x, xOff + i, m), s), out, outOff + i, m);
        }
    }

    /** The loop of every binary element-wise kernel: {@code out[i] = f(a[i], b[i])}. */
    private static void map(long n, MemorySegment a, long aOff, MemorySegment b, long bOff,
                            MemorySegment out, long outOff, Binary f) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(f.apply(load(a, aOff + i), load(b, bOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(f.apply(load(a, aOff + i, m), load(b, bOff + i, m)), out, outOff + i, m);
        }
    }

    /** The loop of every binary element-wise kernel with a scalar operand: {@code out[i] = f(a[i], b[i], s)}. */
    private static void map(long n, float s, MemorySegment a, long aOff, MemorySegment b, long bOff,
                            MemorySegment out, long outOff, BinaryWithScalar f) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(f.apply(load(a, aOff + i), load(b, bOff + i), s), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(f.apply(load(a, aOff + i, m), load(b, bOff + i, m), s), out, outOff + i, m);
        }
    }

    // ------------------------------------------------------------------------------------------------ binary

    private static final Binary ADD = (a, b) -> a.add(b);
    private static final Binary SUB = (a, b) -> a.sub(b);
    private static final Binary MUL = (a, b) -> a.mul(b);
    private static final Binary DIV = (a, b) -> a.div(b);

    @Override
    public void add(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        map(n, a, aOff, b, bOff, out, outOff, ADD);
    }

    @Override
    public void sub(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        map(n, a, aOff, b, bOff, out, outOff, SUB);
    }

    @Override
    public void mul(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        map(n, a, aOff, b, bOff, out, outOff, MUL);
    }

    @Override
    public void div(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        map(n, a, aOff, b, bOff, out, outOff, DIV);
    }

    // ------------------------------------------------------------------------------------------------ with a scalar

    private static final WithScalar SCALE = (x, s) -> x.mul(s);
    private static final WithScalar ADD_SCALAR = (x, s) -> x.add(s);
    private static final BinaryWithScalar AXPY = (y, x, alpha) -> y.add(x.mul(alpha));

    @Override
    public void axpy(long n, float alpha, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        map(n, alpha, y, yOff, x, xOff, y, yOff, AXPY);
    }

    @Override
    public void scale(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, s, x, xOff, out, outOff, SCALE);
    }

    @Override
    public void addScalar(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, s, x, xOff, out, outOff, ADD_SCALAR);
    }

    // ------------------------------------------------------------------------------------------------ unary

    private static final Unary NEG = x -> x.neg();
    private static final Unary EXP = x -> VectorExp.exp(x);
    private static final Unary SQRT = x -> x.lanewise(VectorOperators.SQRT);
    private static final Unary SIGMOID = x -> VectorKernels.sigmoid(x);
    private static final Unary RELU = x -> x.max(0f);
    private static final Unary GELU = x -> VectorKernels.gelu(x);
    private static final Binary RELU_BACKWARD = (dy, x) ->
            FloatVector.zero(SP).blend(dy, x.compare(VectorOperators.GT, 0f));
    private static final Binary GELU_BACKWARD = (dy, x) -> VectorKernels.geluDerivative(x).mul(dy);

    @Override
    public void neg(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, NEG);
    }

    @Override
    public void exp(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, EXP);
    }

    @Override
    public void sqrt(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, SQRT);
    }

    @Override
    public void sigmoid(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, SIGMOID);
    }

    @Override
    public void relu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, RELU);
    }

    @Override
    public void reluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        map(n, dy, dyOff, x, xOff, dx, dxOff, RELU_BACKWARD);
    }

    @Override
    public void gelu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        map(n, x, xOff, out, outOff, GELU);
    }

    @Override
    public void geluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        map(n, dy, dyOff, x, xOff, dx, dxOff, GELU_BACKWARD);
    }

    // ------------------------------------------------------------------------------------------------ the others

    @Override
    public void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
                      MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                      float beta, MemorySegment c, long cOff, int ldc) {
        shared.sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    }

    @Override
    public void sgemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, long aOff, int lda, long strideA,
                             MemorySegment b, long bOff, int ldb, long strideB,
                             float beta, MemorySegment c, long cOff, int ldc, long strideC) {
        shared.sgemmBatched(batch, transA, transB, m, n, k, alpha, a, aOff, lda, strideA, b, bOff, ldb, strideB,
                beta, c, cOff, ldc, strideC);
    }

    @Override
    public void fill(long n, float v, MemorySegment out, long outOff) {
        shared.fill(n, v, out, outOff);
    }

    @Override
    public void copy(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        shared.copy(n, src, srcOff, dst, dstOff);
    }

    @Override
    public void log(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        shared.log(n, x, xOff, out, outOff);
    }

    @Override
    public void tanh(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        shared.tanh(n, x, xOff, out, outOff);
    }

    @Override
    public float sum(long n, MemorySegment x, long xOff) {
        return shared.sum(n, x, xOff);
    }

    @Override
    public float max(long n, MemorySegment x, long xOff) {
        return shared.max(n, x, xOff);
    }

    @Override
    public float sumOfSquares(long n, MemorySegment x, long xOff) {
        return shared.sumOfSquares(n, x, xOff);
    }

    @Override
    public float dot(long n, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        return shared.dot(n, x, xOff, y, yOff);
    }

    @Override
    public boolean anyNonFinite(long n, MemorySegment x, long xOff) {
        return shared.anyNonFinite(n, x, xOff);
    }

    @Override
    public void softmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        shared.softmaxRows(rows, cols, x, xOff, out, outOff);
    }

    @Override
    public void logSoftmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        shared.logSoftmaxRows(rows, cols, x, xOff, out, outOff);
    }

    @Override
    public void softmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                    MemorySegment dx, long dxOff) {
        shared.softmaxBackwardRows(rows, cols, y, yOff, dy, dyOff, dx, dxOff);
    }

    @Override
    public void logSoftmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                       MemorySegment dx, long dxOff) {
        shared.logSoftmaxBackwardRows(rows, cols, y, yOff, dy, dyOff, dx, dxOff);
    }

    @Override
    public void layerNormRows(int rows, int cols, MemorySegment x, long xOff,
                              MemorySegment gamma, long gammaOff, MemorySegment beta, long betaOff, float eps,
                              MemorySegment out, long outOff, MemorySegment mean, long meanOff,
                              MemorySegment rstd, long rstdOff) {
        shared.layerNormRows(rows, cols, x, xOff, gamma, gammaOff, beta, betaOff, eps, out, outOff, mean, meanOff,
                rstd, rstdOff);
    }

    @Override
    public void layerNormBackwardRows(int rows, int cols, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                                      MemorySegment mean, long meanOff, MemorySegment rstd, long rstdOff,
                                      MemorySegment gamma, long gammaOff,
                                      MemorySegment dx, long dxOff, MemorySegment dgamma, long dgammaOff,
                                      MemorySegment dbeta, long dbetaOff) {
        shared.layerNormBackwardRows(rows, cols, dy, dyOff, x, xOff, mean, meanOff, rstd, rstdOff, gamma, gammaOff,
                dx, dxOff, dgamma, dgammaOff, dbeta, dbetaOff);
    }

    // ------------------------------------------------------------------------------------------------ attention

    @Override
    public void attentionForward(int batchHeads, int t, int d, float scale, boolean causal,
                                 MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                 MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        shared.attentionForward(batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff, lse, lseOff);
    }

    @Override
    public void attentionBackward(int batchHeads, int t, int d, float scale, boolean causal,
                                  MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                  MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                                  MemorySegment dout, long doutOff,
                                  MemorySegment dq, long dqOff, MemorySegment dk, long dkOff, MemorySegment dv, long dvOff) {
        shared.attentionBackward(batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff, lse, lseOff,
                dout, doutOff, dq, dqOff, dk, dkOff, dv, dvOff);
    }
}
