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
 * The baseline of {@code VectorLoopBenchmark}: {@link VectorKernels} as it was before its element-wise kernels
 * moved onto one shared loop per family, that is with a hand-written loop in every element-wise kernel. The
 * math of each element ({@code VectorExp}, {@link VectorKernels#sigmoid}, {@link VectorKernels#gelu},
 * {@link VectorKernels#geluDerivative}) and the loads and stores are {@link VectorKernels}' own, so only the
 * loop shape differs; every other kernel is handed to {@link VectorKernels} unchanged.
 *
 * <p>In the bench module, in the package of the kernels so that it can reach them; not part of the product.
 * Stateless, so thread-safe. Arguments are not checked here: {@link #create()} puts it behind
 * {@link CheckedKernels} like the real kernels.
 */
public final class PerKernelVectorKernels implements HostConversions {

    private final Kernels shared;

    private PerKernelVectorKernels(Kernels shared) {
        this.shared = shared;
    }

    /**
     * @return the per-kernel-loop vector kernels behind the argument checks, single-threaded sgemm
     * @throws LinkageError without {@code --add-modules jdk.incubator.vector}
     */
    public static Kernels create() {
        return Kernels.checked(new PerKernelVectorKernels(VectorKernels.create(1)));
    }

    @Override
    public String name() {
        return "vector-per-kernel-loops";
    }

    @Override
    public int threads() {
        return 1;
    }

    @Override
    public Kernels withThreads(int threads) {
        return this;
    }

    // ------------------------------------------------------------------------------------------------ per-kernel loops

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
    public void sigmoid(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(VectorKernels.sigmoid(load(x, xOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(VectorKernels.sigmoid(load(x, xOff + i, m)), out, outOff + i, m);
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

    @Override
    public void gelu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(VectorKernels.gelu(load(x, xOff + i)), out, outOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(VectorKernels.gelu(load(x, xOff + i, m)), out, outOff + i, m);
        }
    }

    @Override
    public void geluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff) {
        long i = 0;
        for (long bound = SP.loopBound(n); i < bound; i += L) {
            store(VectorKernels.geluDerivative(load(x, xOff + i)).mul(load(dy, dyOff + i)), dx, dxOff + i);
        }
        if (i < n) {
            VectorMask<Float> m = SP.indexInRange(i, n);
            store(VectorKernels.geluDerivative(load(x, xOff + i, m)).mul(load(dy, dyOff + i, m)), dx, dxOff + i, m);
        }
    }

    // ------------------------------------------------------------------------------------------------ unchanged

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
}
