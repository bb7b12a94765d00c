package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Kernels on {@code jdk.incubator.vector}. Reached only through {@link KernelSelector} (by reflection), so
 * that nothing else needs the incubator module to load.
 *
 * <p>Range kernels run a main loop over whole vectors of the preferred species and finish with one masked
 * vector for the tail, so every element goes through the same operations wherever it lies. {@code exp} (and
 * sigmoid, GELU, softmax, log-softmax backward, built on it) is {@link VectorExp}: adds, multiplies and FMAs,
 * so the same bits interpreted and compiled; {@link #tanh} and {@link #log} are the scalar kernels
 * ({@link Math} element by element), as the Vector API's {@code TANH} and {@code LOG} can differ in the last
 * bit between the interpreter and C2. {@link #sum}, {@link #sumOfSquares} and {@link #dot} accumulate in
 * double lanes; row kernels accumulate in float lanes. sgemm is {@link VectorGemm}, split over threads by
 * {@link ComputePool} when the problem is large and every segment may be accessed from other threads
 * (segments of a confined arena are processed on the calling thread only). All other kernels run on the
 * calling thread. Arguments are not checked here: {@link CheckedKernels}, in front of every implementation,
 * has checked them before a kernel runs.
 *
 * <p>Each element-wise kernel keeps its own loop, unlike the scalar kernels' one loop per family: the Vector
 * API is fast only in C2 code where the operation on a vector is inlined into the loop, and a loop shared by
 * several kernels does not get that in real use. Two shared loops were tried and measured
 * ({@code ElementwiseBenchmark} in vram4j-bench; BENCHMARKS.md, "Vector element-wise kernels: one shared loop
 * per family, measured"): an enum and a switch inside the loop (1.3 to 41 times slower per call), and the
 * operation as a function object, one {@code static final} constant per kernel handed to one small loop per
 * family (kept in vram4j-bench as {@code SharedLoopVectorKernels}, same bits as these). The second is a
 * constant only where C2 inlines the loop into the kernel, and that is not what HotSpot does: the loop, not
 * the kernel, holds the back-edges, so the shared loop is compiled on its own (OSR and tier 4, seen with
 * {@code -XX:+PrintCompilation}) while the kernels that call it are still interpreted or in C1, which does not
 * inline it ({@code -XX:+PrintInlining}). The standalone loop's call of the operation has seen every kernel of
 * its family ({@link Kernels#warmUp()} and training call them all), so C2 inlines the one its profile saw behind
 * a type guard and deoptimizes when another arrives (repeated "made not entrant: uncommon trap"), and the code
 * runs meanwhile in C1 with every vector a heap object. After {@code warmUp()} the shared loops were slower in
 * 19 of 27 kernel and size cases (add 3.9 to 8.3 times, axpy 2.1 to 4.8 times) and in none reliably within 5%
 * of these loops, so the loops stay here, one per kernel.
 */
final class VectorKernels implements HostConversions, HostDevicePaths {

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

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
        gemm(threads, transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    }

    @Override
    public void sgemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, long aOff, int lda, long strideA,
                             MemorySegment b, long bOff, int ldb, long strideB,
                             float beta, MemorySegment c, long cOff, int ldc, long strideC) {
        long macs = (long) m * n * k;
        boolean shareable = shareable(a) && shareable(b) && shareable(c);
        if (shareable && threads > 1 && (batch >= 2 * threads || (batch > 1 && macs < VectorGemm.PARALLEL_MIN_MACS))) {
            // whole products per thread, handed out one at a time
            int parts = (int) Math.min(threads, Math.max(1, Math.min(batch, (long) batch * macs / VectorGemm.PARALLEL_MIN_MACS)));
            ComputePool.forEach(parts - 1, batch, i -> gemm(1, transA, transB, m, n, k, alpha, a, aOff + i * strideA,
                    lda, b, bOff + i * strideB, ldb, beta, c, cOff + i * strideC, ldc));
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
        if (threads > 1 && !(shareable(a) && shareable(b) && shareable(c))) {
            threads = 1;
        }
        VectorGemm.gemm(threads, ta, tb, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
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


    // ------------------------------------------------------------------------------------------------ helpers

    static final VectorSpecies<Float> SP = VectorGemm.SP;
    private static final VectorSpecies<Double> DS = DoubleVector.SPECIES_PREFERRED;
    static final int L = SP.length();
    private static final ByteOrder BO = ByteOrder.nativeOrder();
    private static final float GELU_C = (float) ScalarKernels.GELU_C;
    private static final float GELU_K = (float) ScalarKernels.GELU_K;

    static FloatVector load(MemorySegment s, long i) {
        return FloatVector.fromMemorySegment(SP, s, i * Float.BYTES, BO);
    }

    static FloatVector load(MemorySegment s, long i, VectorMask<Float> m) {
        return FloatVector.fromMemorySegment(SP, s, i * Float.BYTES, BO, m);
    }

    static void store(FloatVector v, MemorySegment s, long i) {
        v.intoMemorySegment(s, i * Float.BYTES, BO);
    }

    static void store(FloatVector v, MemorySegment s, long i, VectorMask<Float> m) {
        v.intoMemorySegment(s, i * Float.BYTES, BO, m);
    }

    // ------------------------------------------------------------------------------------------------ binary

    @Override
    public void add(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(a, aOff + i).add(load(b, bOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(a, aOff + i, m).add(load(b, bOff + i, m)), out, outOff + i, m);
        }
    }

    @Override
    public void sub(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(a, aOff + i).sub(load(b, bOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(a, aOff + i, m).sub(load(b, bOff + i, m)), out, outOff + i, m);
        }
    }

    @Override
    public void mul(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(a, aOff + i).mul(load(b, bOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(a, aOff + i, m).mul(load(b, bOff + i, m)), out, outOff + i, m);
        }
    }

    @Override
    public void div(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(a, aOff + i).div(load(b, bOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(a, aOff + i, m).div(load(b, bOff + i, m)), out, outOff + i, m);
        }
    }

    // ------------------------------------------------------------------------------------------------ with a scalar

    @Override
    public void axpy(long n, float alpha, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        FloatVector av = FloatVector.broadcast(SP, alpha);
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(y, yOff + i).add(load(x, xOff + i).mul(av)), y, yOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(y, yOff + i, m).add(load(x, xOff + i, m).mul(av)), y, yOff + i, m);
        }
    }

    @Override
    public void scale(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(x, xOff + i).mul(s), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(x, xOff + i, m).mul(s), out, outOff + i, m);
        }
    }

    @Override
    public void addScalar(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(x, xOff + i).add(s), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(x, xOff + i, m).add(s), out, outOff + i, m);
        }
    }

    @Override
    public void fill(long n, float v, MemorySegment out, long outOff) {
        if (Float.floatToRawIntBits(v) == 0) {
            out.asSlice(outOff * Float.BYTES, n * Float.BYTES).fill((byte) 0);
            return;
        }
        FloatVector vv = FloatVector.broadcast(SP, v);
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(vv, out, outOff + i);
        }
        if (i < n) {
            store(vv, out, outOff + i, SP.indexInRange(i, n));
        }
    }

    @Override
    public void copy(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        MemorySegment.copy(src, srcOff * Float.BYTES, dst, dstOff * Float.BYTES, n * Float.BYTES);
    }

    // ------------------------------------------------------------------------------------------------ unary

    @Override
    public void neg(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(x, xOff + i).neg(), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(x, xOff + i, m).neg(), out, outOff + i, m);
        }
    }

    @Override
    public void exp(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(VectorExp.exp(load(x, xOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(VectorExp.exp(load(x, xOff + i, m)), out, outOff + i, m);
        }
    }

    @Override
    public void log(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        // per element with Math (the scalar kernel): C2 would evaluate lanewise(LOG) with the platform's vector
        // math library and the interpreter with Math lane by lane, which can differ in the last bit (see Lanes)
        ScalarKernels.INSTANCE.log(n, x, xOff, out, outOff);
    }

    @Override
    public void sqrt(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(x, xOff + i).lanewise(VectorOperators.SQRT), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(x, xOff + i, m).lanewise(VectorOperators.SQRT), out, outOff + i, m);
        }
    }

    @Override
    public void tanh(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        // per element with Math (the scalar kernel): C2 would evaluate lanewise(TANH) with the platform's vector
        // math library and the interpreter with Math lane by lane, which can differ in the last bit (see Lanes)
        ScalarKernels.INSTANCE.tanh(n, x, xOff, out, outOff);
    }

    /**
     * {@code 1 / (1 + exp(-v))}, evaluated as {@code (v >= 0 ? 1 : e) / (1 + e)} with {@code e = exp(-|v|)}, which
     * never overflows and keeps the subnormal results of large negative inputs.
     */
    static FloatVector sigmoid(FloatVector v) {
        FloatVector e = VectorExp.exp(v.abs().neg());
        FloatVector num = FloatVector.broadcast(SP, 1f).blend(e, v.compare(VectorOperators.LT, 0f));
        return num.div(e.add(1f));
    }

    @Override
    public void sigmoid(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(sigmoid(load(x, xOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(sigmoid(load(x, xOff + i, m)), out, outOff + i, m);
        }
    }

    @Override
    public void relu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(load(x, xOff + i).max(0f), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(load(x, xOff + i, m).max(0f), out, outOff + i, m);
        }
    }

    @Override
    public void reluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        FloatVector zero = FloatVector.zero(SP);
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            VectorMask<Float> pos = load(x, xOff + i).compare(VectorOperators.GT, 0f);
            store(zero.blend(load(dy, dyOff + i), pos), dx, dxOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            VectorMask<Float> pos = load(x, xOff + i, m).compare(VectorOperators.GT, 0f);
            store(zero.blend(load(dy, dyOff + i, m), pos), dx, dxOff + i, m);
        }
    }

    /**
     * GELU (tanh approximation) as {@code x * sigmoid(2u)}, {@code u = c (x + k x^3)}: the same function as
     * {@code 0.5 x (1 + tanh(u))}, without cancellation where tanh(u) is near -1.
     */
    static FloatVector gelu(FloatVector x) {
        FloatVector x2 = x.mul(x);
        FloatVector u2 = x2.fma(GELU_K, 1f).mul(x).mul(-2f * GELU_C); // -2u
        return x.div(VectorExp.exp(u2).add(1f));
    }

    /** d gelu / dx = s + 2 x s (1 - s) u', with s = sigmoid(2u), u' = c (1 + 3 k x^2). */
    static FloatVector geluDerivative(FloatVector x) {
        FloatVector x2 = x.mul(x);
        FloatVector u2 = x2.fma(GELU_K, 1f).mul(x).mul(-2f * GELU_C);
        FloatVector s = FloatVector.broadcast(SP, 1f).div(VectorExp.exp(u2).add(1f));
        FloatVector du = x2.fma(3f * GELU_K, 1f).mul(GELU_C);
        return x.mul(2f).mul(s).mul(s.neg().add(1f)).fma(du, s);
    }

    @Override
    public void gelu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(gelu(load(x, xOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(gelu(load(x, xOff + i, m)), out, outOff + i, m);
        }
    }

    @Override
    public void geluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(geluDerivative(load(x, xOff + i)).mul(load(dy, dyOff + i)), dx, dxOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(geluDerivative(load(x, xOff + i, m)).mul(load(dy, dyOff + i, m)), dx, dxOff + i, m);
        }
    }

    // ------------------------------------------------------------------------------------------------ reductions

    private static DoubleVector lo(FloatVector v) {
        return (DoubleVector) v.convertShape(VectorOperators.F2D, DS, 0);
    }

    private static DoubleVector hi(FloatVector v) {
        return (DoubleVector) v.convertShape(VectorOperators.F2D, DS, 1);
    }

    @Override
    public float sum(long n, MemorySegment x, long xOff) {
        DoubleVector s0 = DoubleVector.zero(DS);
        DoubleVector s1 = DoubleVector.zero(DS);
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            FloatVector v = load(x, xOff + i);
            s0 = s0.add(lo(v));
            s1 = s1.add(hi(v));
        }
        if (i < n) {
            FloatVector v = load(x, xOff + i, SP.indexInRange(i, n));
            s0 = s0.add(lo(v));
            s1 = s1.add(hi(v));
        }
        return (float) Lanes.sum(s0.add(s1));
    }

    @Override
    public float max(long n, MemorySegment x, long xOff) {
        FloatVector mx = FloatVector.broadcast(SP, Float.NEGATIVE_INFINITY);
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            mx = mx.max(load(x, xOff + i));
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            mx = mx.lanewise(VectorOperators.MAX, load(x, xOff + i, m), m);
        }
        return mx.reduceLanes(VectorOperators.MAX);
    }

    @Override
    public float sumOfSquares(long n, MemorySegment x, long xOff) {
        DoubleVector s0 = DoubleVector.zero(DS);
        DoubleVector s1 = DoubleVector.zero(DS);
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            FloatVector v = load(x, xOff + i);
            DoubleVector a = lo(v);
            DoubleVector b = hi(v);
            s0 = a.fma(a, s0);
            s1 = b.fma(b, s1);
        }
        if (i < n) {
            FloatVector v = load(x, xOff + i, SP.indexInRange(i, n));
            DoubleVector a = lo(v);
            DoubleVector b = hi(v);
            s0 = a.fma(a, s0);
            s1 = b.fma(b, s1);
        }
        return (float) Lanes.sum(s0.add(s1));
    }

    @Override
    public float dot(long n, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        DoubleVector s0 = DoubleVector.zero(DS);
        DoubleVector s1 = DoubleVector.zero(DS);
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            FloatVector u = load(x, xOff + i);
            FloatVector v = load(y, yOff + i);
            s0 = lo(u).fma(lo(v), s0);
            s1 = hi(u).fma(hi(v), s1);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            FloatVector u = load(x, xOff + i, m);
            FloatVector v = load(y, yOff + i, m);
            s0 = lo(u).fma(lo(v), s0);
            s1 = hi(u).fma(hi(v), s1);
        }
        return (float) Lanes.sum(s0.add(s1));
    }

    @Override
    public boolean anyNonFinite(long n, MemorySegment x, long xOff) {
        // x * 0 is (signed) zero for every finite x and NaN for infinities and NaN; NaN then sticks in acc
        FloatVector zero = FloatVector.zero(SP);
        FloatVector acc = zero;
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            acc = load(x, xOff + i).fma(zero, acc);
            if ((i & 0xFFFF) == 0 && acc.test(VectorOperators.IS_NAN).anyTrue()) {
                return true;
            }
        }
        if (i < n) {
            acc = load(x, xOff + i, SP.indexInRange(i, n)).fma(zero, acc);
        }
        return acc.test(VectorOperators.IS_NAN).anyTrue();
    }

    // ------------------------------------------------------------------------------------------------ rows

    /** The largest of {@code x[off..off+cols)}, NaN-propagating; -Inf for an empty row. */
    private static float rowMax(MemorySegment x, long off, int cols) {
        FloatVector mx = FloatVector.broadcast(SP, Float.NEGATIVE_INFINITY);
        int j = 0;
        for (int bound = SP.loopBound(cols); j < bound; j += L) {
            mx = mx.max(load(x, off + j));
        }
        if (j < cols) {
            VectorMask<Float> m = SP.indexInRange(j, cols);
            mx = mx.lanewise(VectorOperators.MAX, load(x, off + j, m), m);
        }
        return mx.reduceLanes(VectorOperators.MAX);
    }

    /** The float-lane sum of {@code x[off..off+cols)}. */
    private static float rowSum(MemorySegment x, long off, int cols) {
        FloatVector s = FloatVector.zero(SP);
        int j = 0;
        for (int bound = SP.loopBound(cols); j < bound; j += L) {
            s = s.add(load(x, off + j));
        }
        if (j < cols) {
            s = s.add(load(x, off + j, SP.indexInRange(j, cols)));
        }
        return Lanes.sum(s);
    }

    /** The float-lane dot product of two rows. */
    private static float rowDot(MemorySegment x, long xo, MemorySegment y, long yo, int cols) {
        FloatVector s = FloatVector.zero(SP);
        int j = 0;
        for (int bound = SP.loopBound(cols); j < bound; j += L) {
            s = load(x, xo + j).fma(load(y, yo + j), s);
        }
        if (j < cols) {
            VectorMask<Float> m = SP.indexInRange(j, cols);
            s = load(x, xo + j, m).fma(load(y, yo + j, m), s);
        }
        return Lanes.sum(s);
    }

    @Override
    public void softmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        for (int r = 0; r < rows; r++) {
            long xr = xOff + (long) r * cols;
            long or = outOff + (long) r * cols;
            float max = rowMax(x, xr, cols);
            // out = exp(x - max), summed on the way
            FloatVector s = FloatVector.zero(SP);
            int j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                FloatVector e = VectorExp.exp(load(x, xr + j).sub(max));
                s = s.add(e);
                store(e, out, or + j);
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                FloatVector e = VectorExp.exp(load(x, xr + j, m).sub(max));
                s = s.add(e, m);
                store(e, out, or + j, m);
            }
            float inv = 1f / Lanes.sum(s);
            j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                store(load(out, or + j).mul(inv), out, or + j);
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                store(load(out, or + j, m).mul(inv), out, or + j, m);
            }
        }
    }

    @Override
    public void logSoftmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        for (int r = 0; r < rows; r++) {
            long xr = xOff + (long) r * cols;
            long or = outOff + (long) r * cols;
            float max = rowMax(x, xr, cols);
            FloatVector s = FloatVector.zero(SP);
            int j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                s = s.add(VectorExp.exp(load(x, xr + j).sub(max)));
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                s = s.add(VectorExp.exp(load(x, xr + j, m).sub(max)), m);
            }
            // (x - max) - log(sum), not x - (max + log(sum)): for large max the sum would round away log(sum)'s digits
            float logSum = (float) Math.log(Lanes.sum(s));
            j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                store(load(x, xr + j).sub(max).sub(logSum), out, or + j);
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                store(load(x, xr + j, m).sub(max).sub(logSum), out, or + j, m);
            }
        }
    }

    @Override
    public void softmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                    MemorySegment dx, long dxOff) {
        for (int r = 0; r < rows; r++) {
            long base = (long) r * cols;
            float dot = rowDot(dy, dyOff + base, y, yOff + base, cols);
            int j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                store(load(dy, dyOff + base + j).sub(dot).mul(load(y, yOff + base + j)), dx, dxOff + base + j);
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                store(load(dy, dyOff + base + j, m).sub(dot).mul(load(y, yOff + base + j, m)), dx, dxOff + base + j, m);
            }
        }
    }

    @Override
    public void logSoftmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                       MemorySegment dx, long dxOff) {
        for (int r = 0; r < rows; r++) {
            long base = (long) r * cols;
            FloatVector negSum = FloatVector.broadcast(SP, -rowSum(dy, dyOff + base, cols));
            int j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                FloatVector p = VectorExp.exp(load(y, yOff + base + j));
                store(p.fma(negSum, load(dy, dyOff + base + j)), dx, dxOff + base + j);
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                FloatVector p = VectorExp.exp(load(y, yOff + base + j, m));
                store(p.fma(negSum, load(dy, dyOff + base + j, m)), dx, dxOff + base + j, m);
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
            float mu = cols == 0 ? 0f : rowSum(x, xr, cols) / cols;
            // two-pass variance: sum of (x - mu)^2
            FloatVector s = FloatVector.zero(SP);
            int j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                FloatVector d = load(x, xr + j).sub(mu);
                s = d.fma(d, s);
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                FloatVector d = load(x, xr + j, m).sub(mu);
                s = s.add(d.mul(d), m);
            }
            float var = cols == 0 ? 0f : Lanes.sum(s) / cols;
            float rs = (float) (1.0 / Math.sqrt((double) var + eps));
            j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                FloatVector v = load(x, xr + j).sub(mu).mul(rs);
                if (gamma != null) {
                    v = v.mul(load(gamma, gammaOff + j));
                }
                if (beta != null) {
                    v = v.add(load(beta, betaOff + j));
                }
                store(v, out, or + j);
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                FloatVector v = load(x, xr + j, m).sub(mu).mul(rs);
                if (gamma != null) {
                    v = v.mul(load(gamma, gammaOff + j, m));
                }
                if (beta != null) {
                    v = v.add(load(beta, betaOff + j, m));
                }
                store(v, out, or + j, m);
            }
            if (mean != null) {
                mean.setAtIndex(F, meanOff + r, mu);
            }
            if (rstd != null) {
                rstd.setAtIndex(F, rstdOff + r, rs);
            }
        }
    }

    @Override
    public void layerNormBackwardRows(int rows, int cols, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                                      MemorySegment mean, long meanOff, MemorySegment rstd, long rstdOff,
                                      MemorySegment gamma, long gammaOff,
                                      MemorySegment dx, long dxOff, MemorySegment dgamma, long dgammaOff,
                                      MemorySegment dbeta, long dbetaOff) {
        if (dgamma != null) {
            fill(cols, 0f, dgamma, dgammaOff);
        }
        if (dbeta != null) {
            fill(cols, 0f, dbeta, dbetaOff);
        }
        for (int r = 0; r < rows; r++) {
            long base = (long) r * cols;
            float mu = mean.getAtIndex(F, meanOff + r);
            float rs = rstd.getAtIndex(F, rstdOff + r);
            // pass 1: sums over g = dy * gamma and g * xhat; dgamma += dy * xhat, dbeta += dy
            FloatVector sg = FloatVector.zero(SP);
            FloatVector sgx = FloatVector.zero(SP);
            int j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                FloatVector d = load(dy, dyOff + base + j);
                FloatVector xh = load(x, xOff + base + j).sub(mu).mul(rs);
                FloatVector g = gamma == null ? d : d.mul(load(gamma, gammaOff + j));
                sg = sg.add(g);
                sgx = g.fma(xh, sgx);
                if (dgamma != null) {
                    store(d.fma(xh, load(dgamma, dgammaOff + j)), dgamma, dgammaOff + j);
                }
                if (dbeta != null) {
                    store(d.add(load(dbeta, dbetaOff + j)), dbeta, dbetaOff + j);
                }
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                FloatVector d = load(dy, dyOff + base + j, m);
                FloatVector xh = load(x, xOff + base + j, m).sub(mu).mul(rs);
                FloatVector g = gamma == null ? d : d.mul(load(gamma, gammaOff + j, m));
                sg = sg.add(g, m);
                sgx = sgx.add(g.mul(xh), m);
                if (dgamma != null) {
                    store(d.fma(xh, load(dgamma, dgammaOff + j, m)), dgamma, dgammaOff + j, m);
                }
                if (dbeta != null) {
                    store(d.add(load(dbeta, dbetaOff + j, m)), dbeta, dbetaOff + j, m);
                }
            }
            if (dx == null || cols == 0) {
                continue;
            }
            float meanG = Lanes.sum(sg) / cols;
            FloatVector negMeanGx = FloatVector.broadcast(SP, -Lanes.sum(sgx) / cols);
            // pass 2: dx = rstd * (g - meanG - xhat * meanGx)
            j = 0;
            for (int bound = SP.loopBound(cols); j < bound; j += L) {
                FloatVector d = load(dy, dyOff + base + j);
                FloatVector xh = load(x, xOff + base + j).sub(mu).mul(rs);
                FloatVector g = gamma == null ? d : d.mul(load(gamma, gammaOff + j));
                store(xh.fma(negMeanGx, g.sub(meanG)).mul(rs), dx, dxOff + base + j);
            }
            if (j < cols) {
                VectorMask<Float> m = SP.indexInRange(j, cols);
                FloatVector d = load(dy, dyOff + base + j, m);
                FloatVector xh = load(x, xOff + base + j, m).sub(mu).mul(rs);
                FloatVector g = gamma == null ? d : d.mul(load(gamma, gammaOff + j, m));
                store(xh.fma(negMeanGx, g.sub(meanG)).mul(rs), dx, dxOff + base + j, m);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ attention

    @Override
    public void attentionForward(int batchHeads, int t, int d, float scale, boolean causal,
                                 MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                 MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        VectorAttention.forward(threads, batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff,
                lse, lseOff);
    }

    @Override
    public void attentionBackward(int batchHeads, int t, int d, float scale, boolean causal,
                                  MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                  MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                                  MemorySegment dout, long doutOff,
                                  MemorySegment dq, long dqOff, MemorySegment dk, long dkOff,
                                  MemorySegment dv, long dvOff) {
        VectorAttention.backward(threads, batchHeads, t, d, scale, causal, q, qOff, k, kOff, v, vOff, out, outOff,
                lse, lseOff, dout, doutOff, dq, dqOff, dk, dkOff, dv, dvOff);
    }
}
