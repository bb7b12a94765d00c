package io.vram4j.compute.cuda;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.Half;
import io.vram4j.compute.Kernels;
import io.vram4j.device.DeviceUnavailableException;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Tensor;
import io.vram4j.testsupport.GpuTests;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Every CUDA kernel against the scalar CPU kernels on the same inputs: float32 within 1e-5 relative (plus a small
 * absolute floor near zero; the attention on 16-bit inputs too, its results being float32), the 16-bit element-wise
 * kernels within one 16-bit step (both round once, from float32 values that agree within 1e-5), 16-bit casts, 16-bit
 * copies and dropout masks bit for bit. Tagged {@code gpu}: skipped with the
 * reason where no GPU opens, failed instead with {@code VRAM4J_REQUIRE_GPU=1} (gpu/run.sh sets it).
 */
@Tag("gpu")
class GpuCudaKernelsTest {
    private static final Kernels CPU = Kernels.scalar();
    private static CudaDevice gpu;
    private static CachingAllocator alloc;
    private static CudaKernels cuda;
    private final List<Long> blocks = new ArrayList<>();
    private final Random random = new Random(12345);

    private static String unavailable;

    @BeforeAll
    static void open() {
        try {
            gpu = CudaDevice.open(0);
        } catch (DeviceUnavailableException e) {
            unavailable = e.getMessage();
            return;
        }
        alloc = CachingAllocator.create(gpu);
        cuda = CudaKernels.create(alloc, gpu.defaultStream());
    }

    /** Skips each test with the reason where no GPU opens (fails instead with {@code VRAM4J_REQUIRE_GPU=1}). */
    @BeforeEach
    void requireGpu() {
        GpuTests.require(unavailable);
    }

    @AfterEach
    void freeBlocks() {
        blocks.forEach(p -> alloc.free(p));
        blocks.clear();
    }

    @AfterAll
    static void close() {
        if (cuda != null) {
            cuda.close();
            alloc.close();
            gpu.close();
        }
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private float[] values(int n, float lo, float hi) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = lo + (hi - lo) * random.nextFloat();
        }
        return v;
    }

    /** @return device memory holding {@code v}, as the pointer segment the tensor runtime hands to kernels */
    private MemorySegment onGpu(float[] v) {
        MemorySegment d = empty(v.length);
        gpu.copyFromHost(MemorySegment.ofArray(v), d.address());
        return d;
    }

    private MemorySegment empty(long floats) {
        long bytes = Math.max(1, floats) * Float.BYTES;
        long p = alloc.malloc(bytes);
        blocks.add(p);
        return MemorySegment.ofAddress(p).reinterpret(bytes);
    }

    private float[] back(MemorySegment d, int n) {
        float[] v = new float[n];
        gpu.synchronize();
        gpu.copyToHost(d.address(), MemorySegment.ofArray(v));
        return v;
    }

    private static void close(float[] expected, float[] actual, String what) {
        assertEquals(expected.length, actual.length, what);
        for (int i = 0; i < expected.length; i++) {
            close(expected[i], actual[i], what + "[" + i + "]");
        }
    }

    private static void close(float expected, float actual, String what) {
        if (Float.isNaN(expected) || Float.isInfinite(expected)) {
            assertEquals(expected, actual, what);
            return;
        }
        float tol = 1e-5f * Math.max(Math.abs(expected), Math.abs(actual)) + 1e-6f;
        if (!(Math.abs(expected - actual) <= tol)) {
            fail(what + ": expected " + expected + ", got " + actual + " (tolerance " + tol + ")");
        }
    }

    private interface Unary {
        void run(Kernels k, long n, MemorySegment x, long xOff, MemorySegment out, long outOff);
    }

    private interface Binary {
        void run(Kernels k, long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff);
    }

    private void unary(String name, Unary op, float lo, float hi) {
        int n = 100_003;
        float[] x = values(n, lo, hi);
        float[] expected = new float[n];
        op.run(CPU, n, MemorySegment.ofArray(x), 0, MemorySegment.ofArray(expected), 0);
        MemorySegment out = empty(n);
        op.run(cuda, n, onGpu(x), 0, out, 0);
        close(expected, back(out, n), name);
    }

    private void binary(String name, Binary op, float lo, float hi) {
        int n = 65_537;
        float[] a = values(n, lo, hi);
        float[] b = values(n, lo, hi);
        float[] expected = new float[n];
        op.run(CPU, n - 3, MemorySegment.ofArray(a), 1, MemorySegment.ofArray(b), 2, MemorySegment.ofArray(expected), 3);
        MemorySegment out = empty(n);
        op.run(cuda, n - 3, onGpu(a), 1, onGpu(b), 2, out, 3);
        float[] got = back(out, n);
        close(java.util.Arrays.copyOfRange(expected, 3, n), java.util.Arrays.copyOfRange(got, 3, n), name);
    }

    // ------------------------------------------------------------------------------------------------ tests

    @Test
    void elementwise() {
        binary("add", Kernels::add, -10, 10);
        binary("sub", Kernels::sub, -10, 10);
        binary("mul", Kernels::mul, -10, 10);
        binary("div", Kernels::div, 0.5f, 10);
        binary("reluBackward", Kernels::reluBackward, -5, 5);
        binary("geluBackward", Kernels::geluBackward, -6, 6);
        unary("neg", Kernels::neg, -5, 5);
        unary("exp", Kernels::exp, -20, 20);
        unary("log", Kernels::log, 1e-3f, 100);
        unary("sqrt", Kernels::sqrt, 0, 100);
        unary("tanh", Kernels::tanh, -8, 8);
        unary("sigmoid", Kernels::sigmoid, -20, 20);
        unary("relu", Kernels::relu, -5, 5);
        unary("gelu", Kernels::gelu, -8, 8);
        unary("scale", (k, n, x, xo, o, oo) -> k.scale(n, -1.75f, x, xo, o, oo), -5, 5);
        unary("addScalar", (k, n, x, xo, o, oo) -> k.addScalar(n, 3.25f, x, xo, o, oo), -5, 5);
        unary("axpy", (k, n, x, xo, o, oo) -> {
            k.fill(n, 1f, o, oo);
            k.axpy(n, 0.5f, x, xo, o, oo);
        }, -5, 5);
    }

    @Test
    void copiesIncludingOverlappingRanges() {
        float[] v = values(1000, -1, 1);
        MemorySegment d = onGpu(v);
        cuda.copy(900, d, 0, d, 50);   // overlapping forwards: memmove semantics
        float[] expected = v.clone();
        System.arraycopy(v, 0, expected, 50, 900);
        assertArrayEquals(expected, back(d, 1000));
    }

    @Test
    void reductions() {
        int n = 1_000_003;
        float[] x = values(n, 0.5f, 1.5f);
        float[] y = values(n, 0.5f, 1.5f);
        MemorySegment dx = onGpu(x);
        MemorySegment dy = onGpu(y);
        MemorySegment hx = MemorySegment.ofArray(x);
        close(CPU.sum(n, hx, 0), cuda.sum(n, dx, 0), "sum");
        close(CPU.max(n, hx, 0), cuda.max(n, dx, 0), "max");
        close(CPU.sumOfSquares(n, hx, 0), cuda.sumOfSquares(n, dx, 0), "sumOfSquares");
        close(CPU.dot(n, hx, 0, MemorySegment.ofArray(y), 0), cuda.dot(n, dx, 0, dy, 0), "dot");
        assertEquals(0f, cuda.sum(0, dx, 0));
        assertEquals(Float.NEGATIVE_INFINITY, cuda.max(0, dx, 0));
        float[] negative = values(1000, -3, -1);   // the warps of a block past the values must not count as 0
        close(CPU.max(1000, MemorySegment.ofArray(negative), 0), cuda.max(1000, onGpu(negative), 0),
                "max of negative values");
        assertFalse(cuda.anyNonFinite(n, dx, 0));
        x[n / 2] = Float.NaN;
        assertTrue(cuda.anyNonFinite(n, onGpu(x), 0));
        assertTrue(Float.isNaN(cuda.max(n, onGpu(x), 0)));
    }

    @Test
    void rows() {
        for (int cols : new int[] {1, 10, 33, 768, 5000}) {
            int rows = 37;
            int n = rows * cols;
            float[] x = values(n, -4, 4);
            float[] dyv = values(n, -1, 1);
            MemorySegment hx = MemorySegment.ofArray(x);
            MemorySegment dx = onGpu(x);
            float[] e = new float[n];
            MemorySegment out = empty(n);
            CPU.softmaxRows(rows, cols, hx, 0, MemorySegment.ofArray(e), 0);
            cuda.softmaxRows(rows, cols, dx, 0, out, 0);
            float[] y = back(out, n);
            close(e, y, "softmax " + cols);
            float[] eb = new float[n];
            CPU.softmaxBackwardRows(rows, cols, MemorySegment.ofArray(e), 0, MemorySegment.ofArray(dyv), 0,
                    MemorySegment.ofArray(eb), 0);
            MemorySegment g = empty(n);
            cuda.softmaxBackwardRows(rows, cols, out, 0, onGpu(dyv), 0, g, 0);
            close(eb, back(g, n), "softmaxBackward " + cols);
            CPU.logSoftmaxRows(rows, cols, hx, 0, MemorySegment.ofArray(e), 0);
            cuda.logSoftmaxRows(rows, cols, dx, 0, out, 0);
            close(e, back(out, n), "logSoftmax " + cols);
            CPU.logSoftmaxBackwardRows(rows, cols, MemorySegment.ofArray(e), 0, MemorySegment.ofArray(dyv), 0,
                    MemorySegment.ofArray(eb), 0);
            cuda.logSoftmaxBackwardRows(rows, cols, out, 0, onGpu(dyv), 0, g, 0);
            close(eb, back(g, n), "logSoftmaxBackward " + cols);
            layerNorm(rows, cols, x, dyv);
        }
    }

    private void layerNorm(int rows, int cols, float[] x, float[] dyv) {
        int n = rows * cols;
        float[] gamma = values(cols, 0.5f, 1.5f);
        float[] beta = values(cols, -1, 1);
        float[] e = new float[n];
        float[] mean = new float[rows];
        float[] rstd = new float[rows];
        CPU.layerNormRows(rows, cols, MemorySegment.ofArray(x), 0, MemorySegment.ofArray(gamma), 0,
                MemorySegment.ofArray(beta), 0, 1e-5f, MemorySegment.ofArray(e), 0, MemorySegment.ofArray(mean), 0,
                MemorySegment.ofArray(rstd), 0);
        MemorySegment out = empty(n);
        MemorySegment dm = empty(rows);
        MemorySegment dr = empty(rows);
        MemorySegment dg = onGpu(gamma);
        cuda.layerNormRows(rows, cols, onGpu(x), 0, dg, 0, onGpu(beta), 0, 1e-5f, out, 0, dm, 0, dr, 0);
        close(e, back(out, n), "layerNorm " + cols);
        close(mean, back(dm, rows), "layerNorm mean " + cols);
        close(rstd, back(dr, rows), "layerNorm rstd " + cols);
        float[] edx = new float[n];
        float[] edg = new float[cols];
        float[] edb = new float[cols];
        CPU.layerNormBackwardRows(rows, cols, MemorySegment.ofArray(dyv), 0, MemorySegment.ofArray(x), 0,
                MemorySegment.ofArray(mean), 0, MemorySegment.ofArray(rstd), 0, MemorySegment.ofArray(gamma), 0,
                MemorySegment.ofArray(edx), 0, MemorySegment.ofArray(edg), 0, MemorySegment.ofArray(edb), 0);
        MemorySegment gx = empty(n);
        MemorySegment gg = empty(cols);
        MemorySegment gb = empty(cols);
        cuda.layerNormBackwardRows(rows, cols, onGpu(dyv), 0, onGpu(x), 0, dm, 0, dr, 0, dg, 0, gx, 0, gg, 0, gb, 0);
        close(edx, back(gx, n), "layerNormBackward dx " + cols);
        closeSums(edg, back(gg, cols), rows, "layerNormBackward dgamma " + cols);
        closeSums(edb, back(gb, cols), rows, "layerNormBackward dbeta " + cols);
    }

    /**
     * Layer norm's parameter gradients over more rows than one block's chunk (256): partial sums per chunk, then
     * their sum; dgamma alone and dbeta alone too (the other output absent).
     */
    @Test
    void layerNormParameterGradientsOverManyRows() {
        int rows = 1000;
        int cols = 40;
        float[] x = values(rows * cols, -4, 4);
        float[] dyv = values(rows * cols, -1, 1);
        layerNorm(rows, cols, x, dyv);
        float[] mean = values(rows, -0.5f, 0.5f);
        float[] rstd = values(rows, 0.5f, 2f);
        float[] edg = new float[cols];
        float[] edb = new float[cols];
        CPU.layerNormBackwardRows(rows, cols, MemorySegment.ofArray(dyv), 0, MemorySegment.ofArray(x), 0,
                MemorySegment.ofArray(mean), 0, MemorySegment.ofArray(rstd), 0, null, 0, null, 0,
                MemorySegment.ofArray(edg), 0, MemorySegment.ofArray(edb), 0);
        MemorySegment gg = empty(cols);
        MemorySegment gb = empty(cols);
        cuda.layerNormBackwardRows(rows, cols, onGpu(dyv), 0, onGpu(x), 0, onGpu(mean), 0, onGpu(rstd), 0, null, 0,
                null, 0, gg, 0, null, 0);
        cuda.layerNormBackwardRows(rows, cols, onGpu(dyv), 0, onGpu(x), 0, onGpu(mean), 0, onGpu(rstd), 0, null, 0,
                null, 0, null, 0, gb, 0);
        closeSums(edg, back(gg, cols), rows, "dgamma alone");
        closeSums(edb, back(gb, cols), rows, "dbeta alone");
    }

    @Test
    void matrixProductsThroughCublas() {
        int m = 67;
        int n = 45;
        int k = 129;
        for (boolean ta : new boolean[] {false, true}) {
            for (boolean tb : new boolean[] {false, true}) {
                int lda = ta ? m : k;
                int ldb = tb ? k : n;
                float[] a = values(m * k, -1, 1);
                float[] b = values(k * n, -1, 1);
                float[] c0 = values(m * n, -1, 1);
                float[] e = c0.clone();
                CPU.sgemm(ta, tb, m, n, k, 0.75f, MemorySegment.ofArray(a), 0, lda, MemorySegment.ofArray(b), 0, ldb,
                        0.5f, MemorySegment.ofArray(e), 0, n);
                MemorySegment c = onGpu(c0);
                cuda.sgemm(ta, tb, m, n, k, 0.75f, onGpu(a), 0, lda, onGpu(b), 0, ldb, 0.5f, c, 0, n);
                closeSums(e, back(c, m * n), k, "sgemm " + ta + " " + tb);
            }
        }
        int batch = 3;
        float[] a = values(batch * m * k, -1, 1);
        float[] b = values(batch * k * n, -1, 1);
        float[] e = new float[batch * m * n];
        CPU.sgemmBatched(batch, false, true, m, n, k, 1f, MemorySegment.ofArray(a), 0, k, (long) m * k,
                MemorySegment.ofArray(b), 0, k, (long) k * n, 0f, MemorySegment.ofArray(e), 0, n, (long) m * n);
        MemorySegment c = empty(batch * m * n);
        cuda.sgemmBatched(batch, false, true, m, n, k, 1f, onGpu(a), 0, k, (long) m * k, onGpu(b), 0, k, (long) k * n,
                0f, c, 0, n, (long) m * n);
        closeSums(e, back(c, batch * m * n), k, "sgemmBatched");
    }

    /** Sums of k products of values in [-1, 1): the order of additions differs, so the floor scales with k. */
    private static void closeSums(float[] expected, float[] actual, int k, String what) {
        for (int i = 0; i < expected.length; i++) {
            float tol = 1e-5f * Math.abs(expected[i]) + 1e-6f * k;
            if (!(Math.abs(expected[i] - actual[i]) <= tol)) {
                fail(what + "[" + i + "]: expected " + expected[i] + ", got " + actual[i]);
            }
        }
    }

    /** {@code n} random 16-bit values of {@code type} in [lo, hi), as their bits. */
    private short[] halves(int type, int n, float lo, float hi) {
        short[] h = new short[n];
        for (int i = 0; i < n; i++) {
            float v = lo + (hi - lo) * random.nextFloat();
            h[i] = type == Kernels.FLOAT16 ? Half.floatToFp16(v) : Half.floatToBf16(v);
        }
        return h;
    }

    private MemorySegment onGpu(short[] h) {
        MemorySegment d = empty((h.length + 1) / 2);
        gpu.copyFromHost(MemorySegment.ofArray(h), d.address());
        return d;
    }

    private short[] backHalves(MemorySegment d, int n) {
        short[] h = new short[n];
        gpu.synchronize();
        gpu.copyToHost(d.address(), MemorySegment.ofArray(h));
        return h;
    }

    /**
     * The GPU's and the CPU's 16-bit results agree within one step of the 16-bit type: both round once, from float32
     * results that agree within 1e-5 relative, so a value near a rounding boundary may round either way.
     */
    private static void closeHalves(int type, short[] expected, short[] actual, String what) {
        float step = type == Kernels.FLOAT16 ? 0x1p-10f : 0x1p-7f;
        for (int i = 0; i < expected.length; i++) {
            float e = type == Kernels.FLOAT16 ? Half.fp16ToFloat(expected[i]) : Half.bf16ToFloat(expected[i]);
            float a = type == Kernels.FLOAT16 ? Half.fp16ToFloat(actual[i]) : Half.bf16ToFloat(actual[i]);
            if (Float.isNaN(e) || Float.isInfinite(e)) {
                assertEquals(e, a, what + "[" + i + "]");
                continue;
            }
            float tol = step * Math.max(Math.abs(e), Math.abs(a)) + 1e-6f;
            if (!(Math.abs(e - a) <= tol)) {
                fail(what + "[" + i + "]: expected " + e + ", got " + a + " (tolerance " + tol + ")");
            }
        }
    }

    @Test
    void sixteenBitElementwiseMatchesTheCpuKernels() {
        int n = 100_003;
        for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
            String t = type == Kernels.FLOAT16 ? "fp16" : "bf16";
            for (int op = Kernels.UNARY_NEG; op <= Kernels.UNARY_GELU; op++) {
                boolean positive = op == Kernels.UNARY_LOG || op == Kernels.UNARY_SQRT;
                short[] x = halves(type, n, positive ? 1e-3f : -8, 8);
                short[] expected = new short[n];
                CPU.unary16(op, type, n, MemorySegment.ofArray(x), 0, MemorySegment.ofArray(expected), 0);
                MemorySegment out = empty((n + 1) / 2);
                cuda.unary16(op, type, n, onGpu(x), 0, out, 0);
                closeHalves(type, expected, backHalves(out, n), "unary16 op " + op + " " + t);
            }
            for (int op : new int[] {Kernels.BACKWARD_RELU, Kernels.BACKWARD_GELU}) {
                short[] dy = halves(type, n, -3, 3);
                short[] x = halves(type, n, -8, 8);
                short[] expected = new short[n];
                CPU.pointwiseBackward16(op, type, n - 1, MemorySegment.ofArray(dy), 1, MemorySegment.ofArray(x), 0,
                        MemorySegment.ofArray(expected), 0);
                MemorySegment out = empty((n + 1) / 2);
                cuda.pointwiseBackward16(op, type, n - 1, onGpu(dy), 1, onGpu(x), 0, out, 0);
                closeHalves(type, java.util.Arrays.copyOf(expected, n - 1),
                        java.util.Arrays.copyOf(backHalves(out, n), n - 1), "pointwiseBackward16 op " + op + " " + t);
            }
            int rows = 301;
            int cols = 333;
            for (int op = 0; op <= 3; op++) {   // a transposed [rows, cols] operand and a row broadcast over it
                short[] a = halves(type, rows * cols, op == 3 ? 0.5f : -4, 4);
                short[] b = halves(type, cols, op == 3 ? 0.5f : -4, 4);
                short[] expected = new short[rows * cols];
                CPU.binary16(op, type, 1, 1, rows, cols, MemorySegment.ofArray(a), 0, 0, 0, 1, rows,
                        MemorySegment.ofArray(b), 0, 0, 0, 0, 1, MemorySegment.ofArray(expected), 0);
                MemorySegment out = empty((rows * cols + 1) / 2);
                cuda.binary16(op, type, 1, 1, rows, cols, onGpu(a), 0, 0, 0, 1, rows, onGpu(b), 0, 0, 0, 0, 1, out, 0);
                closeHalves(type, expected, backHalves(out, rows * cols), "binary16 op " + op + " " + t);
            }
        }
    }

    /**
     * {@code binaryMixed}: a float32 operand and a 16-bit one (either side, transposed or broadcast) into float32, bit
     * for bit as the CPU kernels (the widening is exact and the op is one float32 operation).
     */
    @Test
    void mixedFloat32AndSixteenBitOpsAreBitExact() {
        int rows = 301;
        int cols = 333;
        for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
            for (int half16 = 0; half16 <= 1; half16++) {
                for (int op = 0; op <= 3; op++) {   // a transposed [rows, cols] float32 operand, a 16-bit row over it
                    float[] f = values(rows * cols, op == 3 ? 0.5f : -4, 4);
                    short[] h = halves(type, cols, op == 3 ? 0.5f : -4, 4);
                    float[] expected = new float[rows * cols];
                    MemorySegment hf = MemorySegment.ofArray(f);
                    MemorySegment hh = MemorySegment.ofArray(h);
                    MemorySegment gf = onGpu(f);
                    MemorySegment gh = onGpu(h);
                    MemorySegment out = empty(rows * cols);
                    if (half16 == 0) {
                        CPU.binaryMixed(op, type, 0, 1, 1, rows, cols, hh, 0, 0, 0, 0, 1, hf, 0, 0, 0, 1, rows,
                                MemorySegment.ofArray(expected), 0);
                        cuda.binaryMixed(op, type, 0, 1, 1, rows, cols, gh, 0, 0, 0, 0, 1, gf, 0, 0, 0, 1, rows, out,
                                0);
                    } else {
                        CPU.binaryMixed(op, type, 1, 1, 1, rows, cols, hf, 0, 0, 0, 1, rows, hh, 0, 0, 0, 0, 1,
                                MemorySegment.ofArray(expected), 0);
                        cuda.binaryMixed(op, type, 1, 1, 1, rows, cols, gf, 0, 0, 0, 1, rows, gh, 0, 0, 0, 0, 1, out,
                                0);
                    }
                    float[] actual = back(out, rows * cols);
                    for (int i = 0; i < expected.length; i++) {
                        assertEquals(Float.floatToIntBits(expected[i]), Float.floatToIntBits(actual[i]),
                                "binaryMixed op " + op + " type " + type + " half16 " + half16 + " [" + i + "]");
                    }
                }
            }
        }
    }

    @Test
    void castsAreBitExact() {
        int n = 70_000;
        float[] v = values(n, -70_000, 70_000);
        v[0] = Float.NaN;
        v[1] = -0f;
        v[2] = 1e-8f;
        v[3] = Float.POSITIVE_INFINITY;
        MemorySegment src = onGpu(v);
        for (boolean bf16 : new boolean[] {false, true}) {
            MemorySegment half = empty((n + 1) / 2);
            cuda.floatTo16(n, src.address(), half.address(), bf16);
            gpu.synchronize();
            short[] bits = new short[n];
            gpu.copyToHost(half.address(), MemorySegment.ofArray(bits));
            for (int i = 0; i < n; i++) {
                short expected = bf16 ? Half.floatToBf16(v[i]) : Half.floatToFp16(v[i]);
                if (!(bf16 ? expected == bits[i] : Float.isNaN(v[i]) ? (bits[i] & 0x7C00) == 0x7C00 && (bits[i] & 0x3FF) != 0
                        : expected == bits[i])) {
                    fail((bf16 ? "bf16" : "fp16") + "[" + i + "] of " + v[i] + ": expected 0x"
                            + Integer.toHexString(expected & 0xFFFF) + ", got 0x" + Integer.toHexString(bits[i] & 0xFFFF));
                }
            }
            MemorySegment f = empty(n);
            cuda.floatFrom16(n, half.address(), f.address(), bf16);
            float[] round = back(f, n);
            for (int i = 4; i < n; i++) {
                float expected = bf16 ? Half.bf16ToFloat(bits[i]) : Half.fp16ToFloat(bits[i]);
                assertEquals(Float.floatToIntBits(expected), Float.floatToIntBits(round[i]), "back from 16 bits [" + i + "]");
            }
        }
    }

    @Test
    void dropoutDrawsTheCpuMask() {
        int n = 10_007;
        float[] x = values(n, -1, 1);
        long seed = 0x1234_5678_9ABCL;
        float[] expected;
        try (Device host = Device.open("host:64MiB"); Tensor t = host.tensor(x); Tensor d = Functional.dropout(t, 0.3f, seed)) {
            expected = d.toFloatArray();
        }
        MemorySegment out = empty(n);
        MemorySegment mask = empty((n + 3) / 4);
        cuda.dropout(n, onGpu(x).address(), out.address(), mask.address(), 0.3f, 1f / 0.7f, seed);
        assertArrayEquals(expected, back(out, n));
    }

    @Test
    void embeddingGathersRowsAndFlagsBadIndices() {
        int rows = 50;
        int cols = 24;
        float[] w = values(rows * cols, -1, 1);
        long[] idx = {3, 49, 0, 3, 17};
        MemorySegment ids = empty(idx.length * 2L);
        gpu.copyFromHost(MemorySegment.ofArray(idx), ids.address());
        MemorySegment bad = empty(1);
        gpu.fill(bad.address(), 4, (byte) 0);
        MemorySegment out = empty(idx.length * cols);
        cuda.embedding(idx.length, cols, rows, onGpu(w).address(), ids.address(), out.address(), bad.address());
        float[] got = back(out, idx.length * cols);
        for (int i = 0; i < idx.length; i++) {
            for (int j = 0; j < cols; j++) {
                assertEquals(w[(int) idx[i] * cols + j], got[i * cols + j]);
            }
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment flag = a.allocate(4);
            gpu.copyToHost(bad.address(), flag);
            assertEquals(0, flag.get(ValueLayout.JAVA_INT, 0));
            gpu.copyFromHost(MemorySegment.ofArray(new long[] {50}), ids.address());
            cuda.embedding(1, cols, rows, onGpu(w).address(), ids.address(), out.address(), bad.address());
            gpu.synchronize();
            gpu.copyToHost(bad.address(), flag);
            assertEquals(1, flag.get(ValueLayout.JAVA_INT, 0));
        }
    }

    private MemorySegment longsOnGpu(long... v) {
        MemorySegment d = empty(v.length * 2L);
        gpu.copyFromHost(MemorySegment.ofArray(v), d.address());
        return d;
    }

    @Test
    void fusedOptimizerStepsMatchTheCpuFormulas() {
        int[] sizes = {1000, 333};
        float lr = 0.05f;
        float momentum = 0.9f;
        float wd = 1e-4f;
        float[][] p = {values(1000, -1, 1), values(333, -1, 1)};
        float[][] g = {values(1000, -1, 1), values(333, -1, 1)};
        float[][] buf = {values(1000, -1, 1), values(333, -1, 1)};
        MemorySegment[] dp = {onGpu(p[0]), onGpu(p[1])};
        MemorySegment[] db = {onGpu(buf[0]), onGpu(buf[1])};
        cuda.sgd(longsOnGpu(dp[0].address(), dp[1].address()).address(),
                longsOnGpu(onGpu(g[0]).address(), onGpu(g[1]).address()).address(),
                longsOnGpu(db[0].address(), db[1].address()).address(), longsOnGpu(1000, 333).address(), 2, 1000,
                lr, momentum, wd, true, false);
        for (int t = 0; t < 2; t++) {
            float[] ep = p[t].clone();
            float[] eb = buf[t].clone();
            for (int i = 0; i < sizes[t]; i++) {   // optim.SGD's update, nesterov, not the first step
                float d = g[t][i] + wd * ep[i];
                eb[i] = momentum * eb[i] + d;
                ep[i] = ep[i] - lr * (d + momentum * eb[i]);
            }
            close(ep, back(dp[t], sizes[t]), "sgd p" + t);
            close(eb, back(db[t], sizes[t]), "sgd buf" + t);
        }
        float beta1 = 0.9f;
        float beta2 = 0.999f;
        float eps = 1e-8f;
        int step = 3;
        float stepSize = (float) (lr / (1 - Math.pow(beta1, step)));
        float bc2Sqrt = (float) Math.sqrt(1 - Math.pow(beta2, step));
        float decay = 1 - lr * 0.01f;
        float[] m = values(333, -0.1f, 0.1f);
        float[] v = values(333, 0, 0.01f);
        float[] pp = p[1];
        MemorySegment mp = onGpu(pp);
        MemorySegment mm = onGpu(m);
        MemorySegment mv = onGpu(v);
        cuda.adamw(longsOnGpu(mp.address()).address(), longsOnGpu(onGpu(g[1]).address()).address(),
                longsOnGpu(mm.address()).address(), longsOnGpu(mv.address()).address(), longsOnGpu(333).address(), 1, 333,
                beta1, beta2, eps, decay, stepSize, bc2Sqrt);
        float[] ep = pp.clone();
        for (int i = 0; i < 333; i++) {   // optim.AdamW's update
            m[i] += (g[1][i] - m[i]) * (1 - beta1);
            v[i] = beta2 * v[i] + (1 - beta2) * g[1][i] * g[1][i];
            ep[i] = ep[i] * decay - stepSize * m[i] / ((float) Math.sqrt(v[i]) / bc2Sqrt + eps);
        }
        close(ep, back(mp, 333), "adamw p");
        close(m, back(mm, 333), "adamw m");
        close(v, back(mv, 333), "adamw v");
    }

    @Test
    void nllLossForwardAndBackward() {
        int n = 300;
        int c = 10;
        float[] logp = values(n * c, -5, 0);
        long[] t = new long[n];
        double sum = 0;
        int kept = 0;
        for (int i = 0; i < n; i++) {
            t[i] = i % 7 == 0 ? -100 : random.nextInt(c);
            if (t[i] != -100) {
                sum += logp[i * c + (int) t[i]];
                kept++;
            }
        }
        MemorySegment out = empty(1);
        MemorySegment count = empty(1);
        MemorySegment bad = empty(1);
        gpu.fill(bad.address(), 4, (byte) 0);
        MemorySegment targets = longsOnGpu(t);
        cuda.nllLoss(onGpu(logp).address(), targets.address(), out.address(), count.address(), n, c, -100, bad.address());
        close((float) (-sum / kept), back(out, 1)[0], "nll");
        MemorySegment g = onGpu(new float[] {2f});
        MemorySegment dl = onGpu(new float[n * c]);
        cuda.nllLossBackward(g.address(), targets.address(), dl.address(), n, c, -100, count.address());
        float[] got = back(dl, n * c);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < c; j++) {
                assertEquals(t[i] == j ? -2f / kept : 0f, got[i * c + j], 1e-7f, "dlogp[" + i + "][" + j + "]");
            }
        }
    }

    @Test
    void broadcastGatherAndMask() {
        float[] a = values(6 * 4, -3, 3);   // [6, 4]
        float[] b = values(4, 1, 3);        // [4], broadcast over rows
        MemorySegment out = empty(24);
        cuda.binaryBroadcast(3, onGpu(a).address(), new long[] {4, 1}, onGpu(b).address(), new long[] {0, 1},
                out.address(), new int[] {6, 4});
        float[] got = back(out, 24);
        for (int i = 0; i < 24; i++) {
            assertEquals(a[i] / b[i % 4], got[i], "a / b at " + i);
        }
        MemorySegment tr = empty(24);
        cuda.gather(onGpu(a).address(), new long[] {1, 4}, tr.address(), new int[] {4, 6});   // the transpose
        got = back(tr, 24);
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 6; j++) {
                assertEquals(a[j * 4 + i], got[i * 6 + j]);
            }
        }
        float[] x = values(2 * 3 * 3, -1, 1);
        MemorySegment masked = empty(18);
        cuda.maskUpper(2, 3, 3, onGpu(x).address(), masked.address(), Float.NEGATIVE_INFINITY);
        got = back(masked, 18);
        for (int i = 0; i < 18; i++) {
            int row = i % 9 / 3;
            int col = i % 3;
            assertEquals(col > row ? Float.NEGATIVE_INFINITY : x[i], got[i], "mask at " + i);
        }
    }

    @Test
    void embeddingAndDropoutBackward() {
        int cols = 8;
        long[] idx = {2, 0, 2};
        float[] g = values(3 * cols, -1, 1);
        float[] nan = new float[4 * cols];
        java.util.Arrays.fill(nan, Float.NaN);
        MemorySegment dw = onGpu(nan);   // every row is written, those no index names too
        cuda.embeddingBackward(3, 4, cols, onGpu(g).address(), longsOnGpu(idx).address(), dw.address());
        float[] got = back(dw, 4 * cols);
        for (int j = 0; j < cols; j++) {
            assertEquals(g[j + cols], got[j], 1e-6f);
            assertEquals(g[j] + g[2 * cols + j], got[2 * cols + j], 1e-6f);
            assertEquals(0f, got[cols + j]);
        }
        float[] dy = values(5, -1, 1);
        MemorySegment mask = empty(2);
        gpu.copyFromHost(MemorySegment.ofArray(new byte[] {1, 0, 1, 1, 0}), mask.address());
        MemorySegment dx = empty(5);
        cuda.dropoutBackward(5, onGpu(dy).address(), mask.address(), dx.address(), 2f);
        assertArrayEquals(new float[] {dy[0] * 2, 0, dy[2] * 2, dy[3] * 2, 0}, back(dx, 5));
    }

    // ------------------------------------------------------------------------------------------------ device paths

    /** Runs a Kernels call on the CPU kernels (host arrays) and on the GPU (the same values copied there). */
    private interface PathCall {
        void run(Kernels k, MemorySegment[] in, MemorySegment out);
    }

    /**
     * @param inputs float arrays, or long[] for int64 indices
     * @param outFloats the output's size in floats (int64 outputs: two floats each)
     * @return {@code {cpu, gpu}} outputs as raw floats
     */
    private float[][] both(PathCall call, int outFloats, Object... inputs) {
        MemorySegment[] cpuIn = new MemorySegment[inputs.length];
        MemorySegment[] gpuIn = new MemorySegment[inputs.length];
        for (int i = 0; i < inputs.length; i++) {
            if (inputs[i] instanceof long[] l) {
                cpuIn[i] = MemorySegment.ofArray(l.clone());
                gpuIn[i] = longsOnGpu(l);
            } else {
                float[] f = (float[]) inputs[i];
                cpuIn[i] = MemorySegment.ofArray(f.clone());
                gpuIn[i] = onGpu(f);
            }
        }
        float[] cpuOut = new float[outFloats];
        call.run(CPU, cpuIn, MemorySegment.ofArray(cpuOut));
        MemorySegment gpuOut = onGpu(new float[outFloats]);
        call.run(cuda, gpuIn, gpuOut);
        return new float[][] {cpuOut, back(gpuOut, outFloats)};
    }

    @Test
    void stridedCopiesAndBroadcastingMatchTheCpuKernels() {
        float[] a = values(5 * 6 * 7, -3, 3);   // [5, 6, 7]
        float[] b = values(6, 0.5f, 2);          // broadcast over dims 0 and 2
        float[][] r = both((k, in, out) -> k.copy4(1, 7, 6, 5, in[0], 0, 0, 1, 7, 42, out, 0, 0, 30, 5, 1),
                210, a);   // the [7, 6, 5] permutation, contiguous: the gather kernel
        assertArrayEquals(r[0], r[1], "copy4 into contiguous memory");
        r = both((k, in, out) -> k.copy4(1, 5, 6, 3, in[0], 1, 0, 42, 7, 2, out, 2, 0, 70, 11, 3), 400, a);
        assertArrayEquals(r[0], r[1], "copy4 into a strided destination");
        for (int op = 0; op < 4; op++) {
            int o = op;
            r = both((k, in, out) -> k.binary4(o, 1, 5, 6, 7, in[0], 0, 0, 42, 7, 1, in[1], 0, 0, 0, 1, 0, out, 0),
                    210, a, b);
            close(r[0], r[1], "binary4 op " + op);
        }
    }

    /**
     * The strided kernels find a linear index's 4 indices by the fewest divisions the extents allow (none for one
     * run of elements, one for rows and columns, three otherwise; {@code index4} in vram4j_kernels.cu): each way, on
     * every kernel that walks 4 dimensions, bit for bit the CPU kernels' results. a is read column-major (every stride
     * in play), b broadcast along dimension 2, the outputs contiguous.
     */
    @Test
    void everyWayOfIndexingAFourDimensionalWalkMatchesTheCpuKernels() {
        int[][] shapes = {{1, 1, 1, 210}, {1, 1, 30, 7}, {1, 1, 210, 1}, {1, 5, 6, 7}, {2, 5, 3, 7}, {5, 1, 1, 42}};
        for (int[] sh : shapes) {
            int n = sh[0] * sh[1] * sh[2] * sh[3];
            long[] as = {1, sh[0], (long) sh[0] * sh[1], (long) sh[0] * sh[1] * sh[2]};   // column-major
            long[] bs = {(long) sh[1] * sh[3], sh[3], 0, 1};                                // broadcast along 2
            long[] cs = {(long) sh[1] * sh[2] * sh[3], (long) sh[2] * sh[3], sh[3], 1};    // contiguous
            int bn = sh[0] * sh[1] * sh[3];
            String shape = java.util.Arrays.toString(sh);
            float[] a = values(n, -3, 3);
            float[] b = values(bn, -3, 3);
            for (int op : new int[] {0, 2}) {
                float[][] r = both((k, in, out) -> k.binary4(op, sh[0], sh[1], sh[2], sh[3], in[0], 0, as[0], as[1],
                        as[2], as[3], in[1], 0, bs[0], bs[1], bs[2], bs[3], out, 0), n, a, b);
                assertArrayEquals(r[0], r[1], "binary4 op " + op + " " + shape);
            }
            float[][] r = both((k, in, out) -> k.copy4(sh[0], sh[1], sh[2], sh[3], in[0], 0, as[0], as[1], as[2],
                    as[3], out, 0, cs[0], cs[1], cs[2], cs[3]), n, a);
            assertArrayEquals(r[0], r[1], "copy4 " + shape);
            for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
                short[] ha = halves(type, n, -3, 3);
                short[] hb = halves(type, bn, -3, 3);
                short[] want = new short[n];
                MemorySegment got = empty((n + 1) / 2);
                CPU.binary16(0, type, sh[0], sh[1], sh[2], sh[3], MemorySegment.ofArray(ha), 0, as[0], as[1], as[2],
                        as[3], MemorySegment.ofArray(hb), 0, bs[0], bs[1], bs[2], bs[3], MemorySegment.ofArray(want), 0);
                cuda.binary16(0, type, sh[0], sh[1], sh[2], sh[3], onGpu(ha), 0, as[0], as[1], as[2], as[3], onGpu(hb),
                        0, bs[0], bs[1], bs[2], bs[3], got, 0);
                assertArrayEquals(want, backHalves(got, n), "binary16 type " + type + " " + shape);
                CPU.copy16(sh[0], sh[1], sh[2], sh[3], MemorySegment.ofArray(ha), 0, as[0], as[1], as[2], as[3],
                        MemorySegment.ofArray(want), 0, cs[0], cs[1], cs[2], cs[3]);
                cuda.copy16(sh[0], sh[1], sh[2], sh[3], onGpu(ha), 0, as[0], as[1], as[2], as[3], got, 0, cs[0], cs[1],
                        cs[2], cs[3]);
                assertArrayEquals(want, backHalves(got, n), "copy16 type " + type + " " + shape);
                float[] mixed = new float[n];
                MemorySegment gotMixed = empty(n);
                CPU.binaryMixed(2, type, 1, sh[0], sh[1], sh[2], sh[3], MemorySegment.ofArray(a), 0, as[0], as[1],
                        as[2], as[3], MemorySegment.ofArray(hb), 0, bs[0], bs[1], bs[2], bs[3],
                        MemorySegment.ofArray(mixed), 0);
                cuda.binaryMixed(2, type, 1, sh[0], sh[1], sh[2], sh[3], onGpu(a), 0, as[0], as[1], as[2], as[3],
                        onGpu(hb), 0, bs[0], bs[1], bs[2], bs[3], gotMixed, 0);
                assertArrayEquals(mixed, back(gotMixed, n), "binaryMixed type " + type + " " + shape);
            }
        }
    }

    /**
     * Sums over a dimension of 16-bit values read in place: the bits of the float32 kernel over the widened values
     * (one chunk, and several whose partial sums a second launch adds), and within tolerance of the CPU kernels;
     * into 16-bit values ({@code sumDimTo16}), those sums rounded once.
     */
    @Test
    void sixteenBitDimensionSumsAreTheFloat32KernelOnTheWidenedValues() {
        int[][] shapes = {{4, 30, 5}, {1, 2000, 20}, {3, 20_000, 1}};
        for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
            for (int[] sh : shapes) {
                int count = sh[0] * sh[1] * sh[2];
                int m = sh[0] * sh[2];
                short[] h = halves(type, count, -2, 2);
                float[] wide = new float[count];
                for (int i = 0; i < count; i++) {
                    wide[i] = type == Kernels.FLOAT16 ? Half.fp16ToFloat(h[i]) : Half.bf16ToFloat(h[i]);
                }
                MemorySegment got = empty(m);
                MemorySegment want = empty(m);
                cuda.sumDim16(type, sh[0], sh[1], sh[2], onGpu(h), 0, got, 0);
                cuda.sumDim(sh[0], sh[1], sh[2], onGpu(wide), 0, want, 0);
                String what = "sumDim16 type " + type + " " + java.util.Arrays.toString(sh);
                assertArrayEquals(back(want, m), back(got, m), what);
                float[] cpu = new float[m];
                CPU.sumDim16(type, sh[0], sh[1], sh[2], MemorySegment.ofArray(h), 0, MemorySegment.ofArray(cpu), 0);
                closeSums(cpu, back(got, m), sh[1], what + " against the CPU kernels");
                // into 16-bit values (the last launch rounds as it stores): those sums rounded once
                MemorySegment got16 = empty(m);
                cuda.sumDimTo16(type, sh[0], sh[1], sh[2], onGpu(h), 0, got16, 0);
                float[] sums = back(got, m);
                short[] rounded = new short[m];
                for (int i = 0; i < m; i++) {
                    rounded[i] = type == Kernels.FLOAT16 ? Half.floatToFp16(sums[i]) : Half.floatToBf16(sums[i]);
                }
                assertArrayEquals(rounded, backHalves(got16, m), "sumDimTo16 type " + type + " "
                        + java.util.Arrays.toString(sh));
            }
        }
    }

    @Test
    void dimensionReductionsMatchTheCpuKernels() {
        float[] x = values(4 * 300 * 5, -2, 2);
        float[][] r = both((k, in, out) -> k.sumDim(4, 300, 5, in[0], 0, out, 0), 20, x);
        close(r[0], r[1], "sumDim inner 5");
        r = both((k, in, out) -> k.sumDim(20, 300, 1, in[0], 0, out, 0), 20, x);
        close(r[0], r[1], "sumDim inner 1");
        // more rows than one block's chunk: partial sums per chunk, then their sum (a bias gradient's shape; row sums)
        float[] big = values(40_000, -2, 2);
        r = both((k, in, out) -> k.sumDim(1, 2000, 20, in[0], 0, out, 0), 20, big);
        closeSums(r[0], r[1], 2000, "sumDim of 2000 rows");
        r = both((k, in, out) -> k.sumDim(2, 20_000, 1, in[0], 0, out, 0), 2, big);
        closeSums(r[0], r[1], 20_000, "sumDim of rows of 20,000");
        r = both((k, in, out) -> k.sumDim(3, 0, 4, in[0], 0, out, 0), 12, big);
        assertArrayEquals(new float[12], r[1], "sums of no rows");
        x[7] = Float.NaN;
        x[1000] = 5f;
        x[1005] = 5f;   // equal maxima: the first index wins
        r = both((k, in, out) -> k.maxDim(4, 300, 5, in[0], 0, out, 0, out, 10), 60, x);
        assertArrayEquals(r[0], r[1], "maxDim values and int64 indices");
        r = both((k, in, out) -> k.iota(17, out, 3), 40);
        assertArrayEquals(r[0], r[1], "iota");
    }

    @Test
    void dropoutLossEmbeddingAndMaskMatchTheCpuKernels() {
        int n = 10_007;
        float[] x = values(n, -1, 1);
        float[][] r = both((k, in, out) -> k.dropout(n, 0.3f, 1f / 0.7f, -77L, in[0], 0, out, 0, out, 4L * n),
                n + n / 4 + 1, x);
        assertArrayEquals(r[0], r[1], "dropout output and mask, bit for bit");
        byte[] mask = new byte[n];
        for (int i = 0; i < n; i++) {
            mask[i] = (byte) (i % 3 == 0 ? 0 : 1);
        }
        float[] maskFloats = new float[n / 4 + 1];
        MemorySegment.copy(MemorySegment.ofArray(mask), 0, MemorySegment.ofArray(maskFloats), 0, n);
        r = both((k, in, out) -> k.dropoutBackward(n, 2f, in[0], 0, in[1], 0, out, 0), n, x, maskFloats);
        assertArrayEquals(r[0], r[1], "dropout backward");
        int rows = 64;
        int c = 10;
        float[] logp = values(rows * c, -5, 0);
        long[] targets = new long[rows];
        for (int i = 0; i < rows; i++) {
            targets[i] = i % 7 == 0 ? -100 : (i * 3L) % c;
        }
        r = both((k, in, out) -> k.nllLoss(rows, c, -100, in[0], 0, in[1], 0, out, 0), 1, logp, targets);
        close(r[0], r[1], "nllLoss");
        r = both((k, in, out) -> k.nllLossBackward(rows, c, -100, in[0], 0, in[1], 0, out, 0), rows * c,
                new float[] {1.5f}, targets);
        close(r[0], r[1], "nllLossBackward");
        float[] table = values(9 * 4, -1, 1);
        long[] idx = {3, 0, 8, 3, 5};
        r = both((k, in, out) -> k.embedding(5, 9, 4, in[0], 0, in[1], 0, out, 0), 20, table, idx);
        assertArrayEquals(r[0], r[1], "embedding");
        float[] g = values(20, -1, 1);
        r = both((k, in, out) -> k.embeddingBackward(5, 9, 4, in[0], 0, in[1], 0, out, 0), 36, g, idx);
        assertArrayEquals(r[0], r[1], "embedding backward");
        // many repeats, one row taking most (a skewed vocabulary): the sums in index order, the CPU's bits, whatever
        // order the blocks run in (atomic adds would give another order's rounding)
        long[] many = new long[3000];
        for (int i = 0; i < many.length; i++) {
            many[i] = i % 5 == 0 ? i % 7 : 3;
        }
        float[] gm = values(many.length * 6, -1, 1);
        r = both((k, in, out) -> k.embeddingBackward(3000, 7, 6, in[0], 0, in[1], 0, out, 0), 42, gm, many);
        assertArrayEquals(r[0], r[1], "embedding backward, 3,000 indices into 7 rows");
        float[] s = values(3 * 5 * 4, -1, 1);
        r = both((k, in, out) -> k.maskUpper(3, 5, 4, Float.NEGATIVE_INFINITY, in[0], 0, out, 0), 60, s);
        assertArrayEquals(r[0], r[1], "maskUpper");
    }

    @Test
    void fusedOptimizerGroupsMatchTheCpuKernels() {
        long[] sizes = {1000, 1, 333};
        float[][] init = new float[9][];
        for (int i = 0; i < init.length; i++) {
            init[i] = values((int) sizes[i % 3], i >= 6 ? 0 : -1, 1);   // v (the last list) must be >= 0
        }
        MemorySegment[][] cpu = new MemorySegment[3][3];
        MemorySegment[][] dev = new MemorySegment[3][3];
        for (int l = 0; l < 3; l++) {
            for (int t = 0; t < 3; t++) {
                cpu[l][t] = MemorySegment.ofArray(init[3 * l + t].clone());
                dev[l][t] = onGpu(init[3 * l + t]);
            }
        }
        for (boolean first : new boolean[] {true, false}) {   // params, grads, momentum buffers
            CPU.sgdMulti(3, sizes, cpu[0], cpu[1], cpu[2], 0.05f, 0.9f, 1e-4f, true, first);
            cuda.sgdMulti(3, sizes, dev[0], dev[1], dev[2], 0.05f, 0.9f, 1e-4f, true, first);
        }
        MemorySegment[] vsCpu = {MemorySegment.ofArray(init[6].clone()), MemorySegment.ofArray(init[7].clone()),
                MemorySegment.ofArray(init[8].clone())};
        MemorySegment[] vsDev = {onGpu(init[6]), onGpu(init[7]), onGpu(init[8])};
        CPU.adamwMulti(3, sizes, cpu[0], cpu[1], cpu[2], vsCpu, 0.9f, 0.999f, 1e-8f, 0.9995f, 0.05f, 0.05f);
        cuda.adamwMulti(3, sizes, dev[0], dev[1], dev[2], vsDev, 0.9f, 0.999f, 1e-8f, 0.9995f, 0.05f, 0.05f);
        for (int t = 0; t < 3; t++) {
            int n = (int) sizes[t];
            close(cpu[0][t].toArray(ValueLayout.JAVA_FLOAT), back(dev[0][t], n), "params " + t);
            close(cpu[2][t].toArray(ValueLayout.JAVA_FLOAT), back(dev[2][t], n), "buffers / first moments " + t);
            close(vsCpu[t].toArray(ValueLayout.JAVA_FLOAT), back(vsDev[t], n), "second moments " + t);
        }
    }

    @Test
    void sixteenBitGemmMatchesTheCpuKernelsWithinTheirPrecision() {
        int batch = 3;
        int m = 33;
        int n = 20;
        int k = 64;
        for (boolean bf16 : new boolean[] {true, false}) {
            for (boolean trans : new boolean[] {false, true}) {
                short[] a = new short[batch * m * k];
                short[] b = new short[batch * k * n];
                for (short[] x : new short[][] {a, b}) {
                    for (int i = 0; i < x.length; i++) {
                        float v = (float) random.nextGaussian();
                        x[i] = bf16 ? Half.floatToBf16(v) : Half.floatToFp16(v);
                    }
                }
                short[] expected = new short[batch * m * n];
                int lda = trans ? m : k;   // A stored [k, m] and used transposed
                CPU.gemmBatched16(bf16, batch, trans, false, m, n, k, 1f, MemorySegment.ofArray(a), 0, lda,
                        (long) m * k, MemorySegment.ofArray(b), 0, n, (long) k * n, 0f, MemorySegment.ofArray(expected),
                        0, n, (long) m * n);
                MemorySegment da = empty(a.length / 2 + 1);
                MemorySegment db = empty(b.length / 2 + 1);
                MemorySegment dc = empty(expected.length / 2 + 1);
                gpu.copyFromHost(MemorySegment.ofArray(a), da.address());
                gpu.copyFromHost(MemorySegment.ofArray(b), db.address());
                cuda.gemmBatched16(bf16, batch, trans, false, m, n, k, 1f, da, 0, lda, (long) m * k, db, 0, n,
                        (long) k * n, 0f, dc, 0, n, (long) m * n);
                short[] got = new short[expected.length];
                gpu.synchronize();
                gpu.copyToHost(dc.address(), MemorySegment.ofArray(got));
                float rel = bf16 ? 1f / 64 : 1f / 512;   // two units in the last place of the 16-bit type
                for (int i = 0; i < got.length; i++) {
                    float e = bf16 ? Half.bf16ToFloat(expected[i]) : Half.fp16ToFloat(expected[i]);
                    float g = bf16 ? Half.bf16ToFloat(got[i]) : Half.fp16ToFloat(got[i]);
                    assertTrue(Math.abs(e - g) <= rel * Math.max(Math.abs(e), 1f),
                            (bf16 ? "bf16" : "fp16") + (trans ? " transposed" : "") + " C[" + i + "]: " + e + " vs " + g);
                }
            }
        }
    }

    /**
     * A 16-bit product from a bias ({@code addmm}, a linear layer): a batch that shares B and whose rows follow on
     * folds into one product and runs as one {@code cublasLtMatmul} with the bias in its epilogue; with no cuBLASLt
     * algorithm, with A transposed (no fold) or with {@code VRAM4J_CUBLASLT=0}, the bias is written into C and a cuBLAS
     * product added to it. B is taken as stored and transposed (a linear layer's weight). Each gives the CPU kernels'
     * values within the 16-bit type's precision, never reads the old
     * C (NaN there), and on the emulated GPU, whose products all sum alike, the cuBLASLt and the written-bias paths
     * give the same bits, the calls reach the stand-in as said, and no cuBLASLt descriptor, layout or preference is
     * left behind.
     */
    @Test
    void sixteenBitGemmFromABiasRunsOnCublasLtWhereItFolds() {
        boolean emulated = Boolean.getBoolean(EmulatedGpuSession.PROPERTY);
        int batch = 3;
        int m = 17;
        int n = 24;
        int k = 40;
        for (int variant = 0; variant < 4; variant++) {
            int type = variant % 2 == 0 ? Kernels.BFLOAT16 : Kernels.FLOAT16;
            boolean transB = variant >= 2;   // B stored [n, k] and used transposed: a linear layer's weight
            int ldb = transB ? k : n;
            boolean bf16 = type == Kernels.BFLOAT16;
            String what = (bf16 ? "bf16" : "fp16") + (transB ? ", B transposed" : "");
            short[] a = halves(type, batch * m * k, -1, 1);
            short[] b = halves(type, k * n, -1, 1);
            short[] bias = halves(type, n, -4, 4);
            short[] nan = new short[batch * m * n];
            java.util.Arrays.fill(nan, bf16 ? (short) 0x7fc0 : (short) 0x7e00);
            short[] expected = new short[batch * m * n];
            CPU.gemmBatched16Bias(bf16, batch, false, transB, m, n, k, 1f, MemorySegment.ofArray(a), 0, k, (long) m * k,
                    MemorySegment.ofArray(b), 0, ldb, 0, MemorySegment.ofArray(bias), 0, 1,
                    MemorySegment.ofArray(expected), 0, n, (long) m * n);
            MemorySegment da = onGpu(a);
            MemorySegment db = onGpu(b);
            MemorySegment dbias = onGpu(bias);

            MemorySegment dc = onGpu(nan);
            long lt = emulated ? NativeTestBuild.fakeCublasCount("lt_matmul") : 0;
            long batched = emulated ? NativeTestBuild.fakeCublasCount("gemm_batched") : 0;
            cuda.gemmBatched16Bias(bf16, batch, false, transB, m, n, k, 1f, da, 0, k, (long) m * k, db, 0, ldb, 0,
                    dbias, 0, 1, dc, 0, n, (long) m * n);
            short[] viaLt = backHalves(dc, expected.length);
            closeSums16(expected, viaLt, type, k, what + ", cuBLASLt");
            assertTrue(cuda.usesCublasLt(), "cuBLASLt loaded beside cuBLAS");
            long live = emulated ? NativeTestBuild.fakeCublasCount("lt_live") : 0;
            if (emulated) {
                assertEquals(lt + 1, NativeTestBuild.fakeCublasCount("lt_matmul"), what + ": one cuBLASLt product");
                assertEquals(batched, NativeTestBuild.fakeCublasCount("gemm_batched"), what + ": no cuBLAS product");

                NativeTestBuild.fakeCublasLtAlgorithms(0);
                try (CudaKernels fresh = CudaKernels.create(alloc, gpu.defaultStream())) {   // no plan kept yet
                    MemorySegment written = onGpu(nan);
                    fresh.gemmBatched16Bias(bf16, batch, false, transB, m, n, k, 1f, da, 0, k, (long) m * k, db, 0,
                            ldb, 0, dbias, 0, 1, written, 0, n, (long) m * n);
                    assertArrayEquals(viaLt, backHalves(written, expected.length), what + ": no algorithm, same bits");
                    assertEquals(lt + 1, NativeTestBuild.fakeCublasCount("lt_matmul"), what + ": no cuBLASLt product");
                    assertEquals(batched + 1, NativeTestBuild.fakeCublasCount("gemm_batched"), what + ": cuBLAS's");
                } finally {
                    NativeTestBuild.fakeCublasLtAlgorithms(1);
                }
            }

            // A stored [batch, k, m] and used transposed: its rows do not follow on, so the batch does not fold
            short[] at = halves(type, batch * k * m, -1, 1);
            short[] expectedT = new short[batch * m * n];
            CPU.gemmBatched16Bias(bf16, batch, true, transB, m, n, k, 1f, MemorySegment.ofArray(at), 0, m,
                    (long) m * k, MemorySegment.ofArray(b), 0, ldb, 0, MemorySegment.ofArray(bias), 0, 1,
                    MemorySegment.ofArray(expectedT), 0, n, (long) m * n);
            MemorySegment dt = onGpu(nan);
            cuda.gemmBatched16Bias(bf16, batch, true, transB, m, n, k, 1f, onGpu(at), 0, m, (long) m * k, db, 0, ldb, 0,
                    dbias, 0, 1, dt, 0, n, (long) m * n);
            closeSums16(expectedT, backHalves(dt, expectedT.length), type, k, what + ", transposed A");

            java.util.Map<String, String> env = new java.util.HashMap<>(System.getenv());
            env.put(CublasLt.ENV, "0");
            try (CudaKernels off = CudaKernels.create(alloc, gpu.defaultStream(), env)) {
                MemorySegment dOff = onGpu(nan);
                off.gemmBatched16Bias(bf16, batch, false, transB, m, n, k, 1f, da, 0, k, (long) m * k, db, 0, ldb, 0,
                        dbias, 0, 1, dOff, 0, n, (long) m * n);
                short[] without = backHalves(dOff, expected.length);
                closeSums16(expected, without, type, k, what + ", " + CublasLt.ENV + "=0");
                assertFalse(off.usesCublasLt(), CublasLt.ENV + "=0 leaves cuBLASLt out");
                if (emulated) {
                    assertArrayEquals(viaLt, without, what + ": without cuBLASLt, same bits");
                }
            }
            if (emulated) {
                assertEquals(live, NativeTestBuild.fakeCublasCount("lt_live"), what + ": cuBLASLt objects all freed");
            }
        }
    }

    /** {@code floatToBf16} or {@code floatToFp16} of {@code k}. */
    private static void narrowOn(Kernels k, boolean bf16, long n, MemorySegment src, long srcOff, MemorySegment dst,
                               long dstOff) {
        if (bf16) {
            k.floatToBf16(n, src, srcOff, dst, dstOff);
        } else {
            k.floatToFp16(n, src, srcOff, dst, dstOff);
        }
    }

    /** {@code bf16ToFloat} or {@code fp16ToFloat} of {@code k}. */
    private static void widenOn(Kernels k, boolean bf16, long n, MemorySegment src, long srcOff, MemorySegment dst,
                              long dstOff) {
        if (bf16) {
            k.bf16ToFloat(n, src, srcOff, dst, dstOff);
        } else {
            k.fp16ToFloat(n, src, srcOff, dst, dstOff);
        }
    }

    /**
     * The kernels that take 8 elements a thread (casts, 16-bit unary ops and their backward, axpy, and the broadcasting
     * binary ops, float32, 16-bit and mixed, on one run of elements) against the CPU
     * kernels, with lengths that leave a rest of 0 to 7 after the groups of 8, and with every operand 16-byte aligned
     * (the vector path), one of them shifted by an element (the one-at-a-time path) or all shifted by 8 elements (16
     * or 32 bytes: aligned again). Casts and axpy give the CPU's bits; the 16-bit maths functions agree within one
     * step of the type.
     */
    @Test
    void vectorizedKernelsTakeEveryElementAlignedOrNot() {
        for (int n : new int[] {1, 7, 8, 1003, 4101}) {
            for (int[] shift : new int[][] {{0, 0}, {1, 0}, {0, 1}, {8, 8}}) {
                int s = shift[0];
                int d = shift[1];
                String what = "n " + n + ", offsets " + s + " and " + d;
                float[] f = values(n + s, -3, 3);
                for (int type : new int[] {Kernels.BFLOAT16, Kernels.FLOAT16}) {
                    boolean bf16 = type == Kernels.BFLOAT16;
                    short[] expected = new short[n + d];
                    narrowOn(CPU, bf16, n, MemorySegment.ofArray(f), s, MemorySegment.ofArray(expected), d);
                    MemorySegment out = empty(n + d);
                    narrowOn(cuda, bf16, n, onGpu(f), s, out, d);
                    assertArrayEquals(java.util.Arrays.copyOfRange(expected, d, n + d),
                            java.util.Arrays.copyOfRange(backHalves(out, n + d), d, n + d),
                            (bf16 ? "floatToBf16, " : "floatToFp16, ") + what);

                    short[] h = halves(type, n + s, -3, 3);
                    float[] wide = new float[n + d];
                    widenOn(CPU, bf16, n, MemorySegment.ofArray(h), s, MemorySegment.ofArray(wide), d);
                    MemorySegment wideOut = empty(n + d);
                    widenOn(cuda, bf16, n, onGpu(h), s, wideOut, d);
                    assertArrayEquals(java.util.Arrays.copyOfRange(wide, d, n + d),
                            java.util.Arrays.copyOfRange(back(wideOut, n + d), d, n + d), "widening, " + what);

                    short[] unary = new short[n + d];
                    CPU.unary16(6, type, n, MemorySegment.ofArray(h), s, MemorySegment.ofArray(unary), d);
                    MemorySegment unaryOut = empty(n + d);
                    cuda.unary16(6, type, n, onGpu(h), s, unaryOut, d);
                    closeHalves(type, java.util.Arrays.copyOfRange(unary, d, n + d),
                            java.util.Arrays.copyOfRange(backHalves(unaryOut, n + d), d, n + d), "gelu16, " + what);

                    short[] dy = halves(type, n + s, -1, 1);
                    short[] dx = new short[n + d];
                    CPU.pointwiseBackward16(1, type, n, MemorySegment.ofArray(dy), s, MemorySegment.ofArray(h), s,
                            MemorySegment.ofArray(dx), d);
                    MemorySegment dxOut = empty(n + d);
                    cuda.pointwiseBackward16(1, type, n, onGpu(dy), s, onGpu(h), s, dxOut, d);
                    closeHalves(type, java.util.Arrays.copyOfRange(dx, d, n + d),
                            java.util.Arrays.copyOfRange(backHalves(dxOut, n + d), d, n + d), "gelu16 backward, " + what);
                }
                float[] y = values(n + d, -1, 1);
                float[] yExpected = y.clone();
                CPU.axpy(n, 0.75f, MemorySegment.ofArray(f), s, MemorySegment.ofArray(yExpected), d);
                MemorySegment dy = onGpu(y);
                cuda.axpy(n, 0.75f, onGpu(f), s, dy, d);
                assertArrayEquals(yExpected, back(dy, n + d), "axpy, " + what);

                // the broadcasting binary ops on one run of elements (a residual add): a at s, b and out at d
                float[] sum = new float[n + d];
                CPU.binary4(0, 1, 1, 1, n, MemorySegment.ofArray(f), s, 0, 0, 0, 1, MemorySegment.ofArray(y), d, 0, 0,
                        0, 1, MemorySegment.ofArray(sum), d);
                MemorySegment sumOut = empty(n + d);
                cuda.binary4(0, 1, 1, 1, n, onGpu(f), s, 0, 0, 0, 1, onGpu(y), d, 0, 0, 0, 1, sumOut, d);
                assertArrayEquals(java.util.Arrays.copyOfRange(sum, d, n + d),
                        java.util.Arrays.copyOfRange(back(sumOut, n + d), d, n + d), "binary4 add, " + what);
                for (int type : new int[] {Kernels.BFLOAT16, Kernels.FLOAT16}) {
                    short[] h = halves(type, n + d, -2, 2);
                    for (int half16 = 0; half16 < 2; half16++) {
                        float[] mixed = new float[n + d];
                        MemorySegment hostA = half16 == 0 ? MemorySegment.ofArray(h) : MemorySegment.ofArray(f);
                        MemorySegment hostB = half16 == 0 ? MemorySegment.ofArray(f) : MemorySegment.ofArray(h);
                        long offA = half16 == 0 ? d : s;
                        long offB = half16 == 0 ? s : d;
                        CPU.binaryMixed(1, type, half16, 1, 1, 1, n, hostA, offA, 0, 0, 0, 1, hostB, offB, 0, 0, 0, 1,
                                MemorySegment.ofArray(mixed), d);
                        MemorySegment mixedOut = empty(n + d);
                        cuda.binaryMixed(1, type, half16, 1, 1, 1, n, half16 == 0 ? onGpu(h) : onGpu(f), offA, 0, 0, 0,
                                1, half16 == 0 ? onGpu(f) : onGpu(h), offB, 0, 0, 0, 1, mixedOut, d);
                        assertArrayEquals(java.util.Arrays.copyOfRange(mixed, d, n + d),
                                java.util.Arrays.copyOfRange(back(mixedOut, n + d), d, n + d),
                                "binaryMixed sub, 16-bit operand " + half16 + ", " + what);
                    }
                    short[] h2 = halves(type, n + s, -2, 2);
                    short[] prod = new short[n + d];
                    CPU.binary16(2, type, 1, 1, 1, n, MemorySegment.ofArray(h2), s, 0, 0, 0, 1, MemorySegment.ofArray(h),
                            d, 0, 0, 0, 1, MemorySegment.ofArray(prod), d);
                    MemorySegment prodOut = empty(n + d);
                    cuda.binary16(2, type, 1, 1, 1, n, onGpu(h2), s, 0, 0, 0, 1, onGpu(h), d, 0, 0, 0, 1, prodOut, d);
                    assertArrayEquals(java.util.Arrays.copyOfRange(prod, d, n + d),
                            java.util.Arrays.copyOfRange(backHalves(prodOut, n + d), d, n + d), "binary16 mul, " + what);
                }
            }
        }
    }

    /**
     * A cuBLASLt product that fails (on the stand-in: {@code CUBLAS_STATUS_EXECUTION_FAILED}, nothing queued) is
     * taken by cuBLAS instead, with the right values, and cuBLASLt is left out from then on: a training run keeps
     * going where cuBLASLt errs. Needs the stand-in, which can be told to fail.
     */
    @Test
    void aFailingCublasLtIsLeftOutAndTheProductsGoOnThroughCublas() {
        Assumptions.assumeTrue(Boolean.getBoolean(EmulatedGpuSession.PROPERTY),
                "needs the stand-in cuBLAS, which can be told to fail");
        int m = 9;
        int n = 12;
        int k = 16;
        float[] a = values(m * k, -1, 1);
        float[] b = values(k * n, -1, 1);
        float[] bias = values(n, -3, 3);
        float[] expected = new float[m * n];
        CPU.sgemmBias(false, false, m, n, k, 1f, MemorySegment.ofArray(a), 0, k, MemorySegment.ofArray(b), 0, n,
                MemorySegment.ofArray(bias), 0, 1, MemorySegment.ofArray(expected), 0, n);
        try (CudaKernels own = CudaKernels.create(alloc, gpu.defaultStream())) {
            MemorySegment da = onGpu(a);
            MemorySegment db = onGpu(b);
            MemorySegment dbias = onGpu(bias);
            MemorySegment first = empty(m * n);
            own.sgemmBias(false, false, m, n, k, 1f, da, 0, k, db, 0, n, dbias, 0, 1, first, 0, n);
            assertTrue(own.usesCublasLt(), "cuBLASLt taken at first");
            NativeTestBuild.fakeCublasLtFails(true);
            try {
                long gemm = NativeTestBuild.fakeCublasCount("gemm");
                MemorySegment second = empty(m * n);
                own.sgemmBias(false, false, m, n, k, 1f, da, 0, k, db, 0, n, dbias, 0, 1, second, 0, n);
                closeSums(expected, back(second, m * n), k, "after cuBLASLt failed");
                assertFalse(own.usesCublasLt(), "cuBLASLt left out after it failed");
                assertEquals(gemm + 1, NativeTestBuild.fakeCublasCount("gemm"), "the product went to cuBLAS");
            } finally {
                NativeTestBuild.fakeCublasLtFails(false);
            }
            MemorySegment third = empty(m * n);
            own.sgemmBias(false, false, m, n, k, 1f, da, 0, k, db, 0, n, dbias, 0, 1, third, 0, n);
            assertFalse(own.usesCublasLt(), "and stays out");
            closeSums(expected, back(third, m * n), k, "later products");
        }
    }

    /**
     * cuBLASLt is told how far each pointer is aligned, as PyTorch's {@code gemm_and_bias} tells it: operands that are
     * views at odd offsets (4-byte aligned) run on cuBLASLt with the CPU kernels' values. The stand-in's heuristic,
     * like cuBLASLt's, assumes 256-byte alignment unless told, and its product refuses a pointer aligned less than
     * its algorithm assumed (where a GPU's kernel could fault). A bias aligned to less than 16 bytes takes the cuBLAS
     * path, with the same values. The plan of a product on aligned operands is not used for views of the same shape.
     */
    @Test
    void cublasLtIsToldHowFarItsOperandsAreAligned() {
        Assumptions.assumeTrue(Boolean.getBoolean(EmulatedGpuSession.PROPERTY),
                "counts the stand-in cuBLAS's products and refusals");
        int m = 7;
        int n = 12;
        int k = 16;
        float[] a = values(1 + m * k, -1, 1);
        float[] b = values(3 + k * n, -1, 1);
        float[] bias = values(4 + n, -3, 3);
        try (CudaKernels own = CudaKernels.create(alloc, gpu.defaultStream())) {
            MemorySegment da = onGpu(a);
            MemorySegment db = onGpu(b);
            MemorySegment dbias = onGpu(bias);
            // first the same product on 256-byte aligned operands: its plan must not serve the views below
            float[] aligned = new float[m * n];
            CPU.sgemmBias(false, false, m, n, k, 1f, MemorySegment.ofArray(a), 0, k, MemorySegment.ofArray(b), 0, n,
                    MemorySegment.ofArray(bias), 0, 1, MemorySegment.ofArray(aligned), 0, n);
            MemorySegment first = empty(m * n);
            own.sgemmBias(false, false, m, n, k, 1f, da, 0, k, db, 0, n, dbias, 0, 1, first, 0, n);
            closeSums(aligned, back(first, m * n), k, "aligned operands");
            for (int biasOff : new int[] {4, 1}) {   // 16-byte aligned, then 4
                float[] expected = new float[1 + m * n];
                CPU.sgemmBias(false, false, m, n, k, 1f, MemorySegment.ofArray(a), 1, k, MemorySegment.ofArray(b), 3,
                        n, MemorySegment.ofArray(bias), biasOff, 1, MemorySegment.ofArray(expected), 1, n);
                long lt = NativeTestBuild.fakeCublasCount("lt_matmul");
                long gemm = NativeTestBuild.fakeCublasCount("gemm");
                long refused = NativeTestBuild.fakeCublasCount("lt_misaligned");
                MemorySegment dc = empty(1 + m * n);
                own.sgemmBias(false, false, m, n, k, 1f, da, 1, k, db, 3, n, dbias, biasOff, 1, dc, 1, n);
                float[] got = back(dc, 1 + m * n);
                closeSums(java.util.Arrays.copyOfRange(expected, 1, expected.length),
                        java.util.Arrays.copyOfRange(got, 1, got.length), k, "bias at element " + biasOff);
                assertEquals(refused, NativeTestBuild.fakeCublasCount("lt_misaligned"), "no pointer refused");
                assertTrue(own.usesCublasLt(), "cuBLASLt still in use");
                if (biasOff == 4) {
                    assertEquals(lt + 1, NativeTestBuild.fakeCublasCount("lt_matmul"), "on cuBLASLt");
                } else {
                    assertEquals(lt, NativeTestBuild.fakeCublasCount("lt_matmul"), "a 4-byte aligned bias: not");
                    assertEquals(gemm + 1, NativeTestBuild.fakeCublasCount("gemm"), "on cuBLAS");
                }
            }
        }
    }

    /**
     * A product's cuBLASLt plan (its descriptor, three layouts and algorithm) is made once for its shape, type and
     * alignments and kept: a second product of the same kind, with other operands and another bias, makes no object
     * and asks the heuristic nothing, and gets its own bias; another shape gets a plan of its own; closing the kernels
     * frees every plan and the handle.
     */
    @Test
    void cublasLtPlansAreMadeOncePerKindOfProductAndFreedWithTheKernels() {
        Assumptions.assumeTrue(Boolean.getBoolean(EmulatedGpuSession.PROPERTY),
                "counts the stand-in cuBLAS's objects and heuristic calls");
        int n = 12;
        int k = 16;
        long before = NativeTestBuild.fakeCublasCount("lt_live");
        try (CudaKernels own = CudaKernels.create(alloc, gpu.defaultStream())) {
            long heuristic = NativeTestBuild.fakeCublasCount("lt_heuristic");
            long live = 0;
            for (int round = 0; round < 3; round++) {
                int m = round < 2 ? 9 : 5;   // the third product has another shape
                float[] a = values(m * k, -1, 1);
                float[] b = values(k * n, -1, 1);
                float[] bias = values(n, -3, 3);
                float[] expected = new float[m * n];
                CPU.sgemmBias(false, false, m, n, k, 1f, MemorySegment.ofArray(a), 0, k, MemorySegment.ofArray(b), 0,
                        n, MemorySegment.ofArray(bias), 0, 1, MemorySegment.ofArray(expected), 0, n);
                MemorySegment dc = empty(m * n);
                own.sgemmBias(false, false, m, n, k, 1f, onGpu(a), 0, k, onGpu(b), 0, n, onGpu(bias), 0, 1, dc, 0, n);
                closeSums(expected, back(dc, m * n), k, "product " + round);
                long objects = NativeTestBuild.fakeCublasCount("lt_live");
                long asked = NativeTestBuild.fakeCublasCount("lt_heuristic") - heuristic;
                switch (round) {
                    case 0 -> {
                        live = objects;
                        assertEquals(1, asked, "the first product asks the heuristic");
                    }
                    case 1 -> {
                        assertEquals(live, objects, "the same kind of product: no object made");
                        assertEquals(1, asked, "nor the heuristic asked");
                    }
                    default -> {
                        assertEquals(live + 4, objects, "another shape: a descriptor and three layouts more");
                        assertEquals(2, asked, "and the heuristic asked for it");
                    }
                }
            }
        }
        assertEquals(before, NativeTestBuild.fakeCublasCount("lt_live"), "closing frees the plans and the handle");
    }

    /**
     * A float32 product from a bias (a float32 linear layer) is one {@code cublasLtMatmul} with the bias epilogue, B
     * taken as stored and transposed (a weight); with no cuBLASLt algorithm the bias is written into C and a cuBLAS
     * product added. Both give the CPU kernels' values within 1e-5 and never read the old C; on the emulated GPU the
     * two paths give the same bits.
     */
    @Test
    void float32GemmFromABiasRunsOnCublasLt() {
        boolean emulated = Boolean.getBoolean(EmulatedGpuSession.PROPERTY);
        int m = 37;
        int n = 20;
        int k = 50;
        float[] a = values(m * k, -1, 1);
        float[] b = values(n * k, -1, 1);   // stored [n, k], used transposed
        float[] bias = values(n, -3, 3);
        float[] nan = new float[m * n];
        java.util.Arrays.fill(nan, Float.NaN);
        float[] expected = new float[m * n];
        CPU.sgemmBias(false, true, m, n, k, 1f, MemorySegment.ofArray(a), 0, k, MemorySegment.ofArray(b), 0, k,
                MemorySegment.ofArray(bias), 0, 1, MemorySegment.ofArray(expected), 0, n);
        MemorySegment da = onGpu(a);
        MemorySegment db = onGpu(b);
        MemorySegment dbias = onGpu(bias);
        MemorySegment dc = onGpu(nan);
        long lt = emulated ? NativeTestBuild.fakeCublasCount("lt_matmul") : 0;
        cuda.sgemmBias(false, true, m, n, k, 1f, da, 0, k, db, 0, k, dbias, 0, 1, dc, 0, n);
        float[] viaLt = back(dc, m * n);
        closeSums(expected, viaLt, k, "float32, cuBLASLt");
        if (emulated) {
            assertEquals(lt + 1, NativeTestBuild.fakeCublasCount("lt_matmul"), "one cuBLASLt product");
            long gemm = NativeTestBuild.fakeCublasCount("gemm");
            NativeTestBuild.fakeCublasLtAlgorithms(0);
            try (CudaKernels fresh = CudaKernels.create(alloc, gpu.defaultStream())) {   // no plan kept yet
                MemorySegment written = onGpu(nan);
                fresh.sgemmBias(false, true, m, n, k, 1f, da, 0, k, db, 0, k, dbias, 0, 1, written, 0, n);
                assertArrayEquals(viaLt, back(written, m * n), "no algorithm: the bias written first, same bits");
                assertEquals(gemm + 1, NativeTestBuild.fakeCublasCount("gemm"), "then one cuBLAS product");
            } finally {
                NativeTestBuild.fakeCublasLtAlgorithms(1);
            }
        }
    }

    /**
     * The fused attention kernels (forward; backward in its two passes) against the scalar reference: t across the
     * 64-row blocks, odd head dimensions and one (200) where the shared-memory tile shrinks below 64 rows, causal
     * and not; the head dimensions take each path of the CUDA kernels (7: rows in registers up to 32; 33 and 64: up
     * to 64; 200: in memory). Sums run in another order, so the absolute floor grows with the t terms of each sum.
     */
    @Test
    void fusedAttentionForwardAndBackward() {
        int[][] shapes = {{3, 130, 33}, {2, 64, 64}, {1, 97, 200}, {4, 1, 7}};
        for (int[] sh : shapes) {
            for (boolean causal : new boolean[] {true, false}) {
                int bh = sh[0];
                int t = sh[1];
                int d = sh[2];
                int n = bh * t * d;
                float scale = (float) (1 / Math.sqrt(d));
                float[] q = values(n, -2, 2);
                float[] k = values(n, -2, 2);
                float[] v = values(n, -1, 1);
                float[] dout = values(n, -1, 1);
                float[][] e = {new float[n], new float[bh * t], new float[n], new float[n], new float[n]};
                CPU.attentionForward(bh, t, d, scale, causal, MemorySegment.ofArray(q), 0, MemorySegment.ofArray(k), 0,
                        MemorySegment.ofArray(v), 0, MemorySegment.ofArray(e[0]), 0, MemorySegment.ofArray(e[1]), 0);
                CPU.attentionBackward(bh, t, d, scale, causal, MemorySegment.ofArray(q), 0, MemorySegment.ofArray(k), 0,
                        MemorySegment.ofArray(v), 0, MemorySegment.ofArray(e[0]), 0, MemorySegment.ofArray(e[1]), 0,
                        MemorySegment.ofArray(dout), 0, MemorySegment.ofArray(e[2]), 0, MemorySegment.ofArray(e[3]), 0,
                        MemorySegment.ofArray(e[4]), 0);
                MemorySegment gq = onGpu(q);
                MemorySegment gk = onGpu(k);
                MemorySegment gv = onGpu(v);
                MemorySegment[] g = {empty(n), empty(bh * t), empty(n), empty(n), empty(n)};
                cuda.attentionForward(bh, t, d, scale, causal, gq, 0, gk, 0, gv, 0, g[0], 0, g[1], 0);
                cuda.attentionBackward(bh, t, d, scale, causal, gq, 0, gk, 0, gv, 0, g[0], 0, g[1], 0, onGpu(dout), 0,
                        g[2], 0, g[3], 0, g[4], 0);
                String[] names = {"out", "lse", "dq", "dk", "dv"};
                for (int i = 0; i < names.length; i++) {
                    closeSums(e[i], back(g[i], e[i].length), t,
                            "attention " + names[i] + " " + java.util.Arrays.toString(sh) + (causal ? " causal" : ""));
                }
            }
        }
    }

    @Test
    void sixteenBitStridedCopiesAreBitExact() {
        int rows = 301;
        int cols = 333;
        short[] src = new short[rows * cols];
        for (int i = 0; i < src.length; i++) {
            src[i] = (short) (i * 7919 + 0x7C01);
        }
        short[] expected = new short[2 * rows * cols];
        CPU.copy16(1, 1, cols, rows, MemorySegment.ofArray(src), 0, 0, 0, 1, cols, MemorySegment.ofArray(expected), 0,
                0, 0, 2L * rows, 1);
        MemorySegment out = empty(rows * cols);
        cuda.fill(rows * cols, 0f, out, 0);
        cuda.copy16(1, 1, cols, rows, onGpu(src), 0, 0, 0, 1, cols, out, 0, 0, 0, 2L * rows, 1);
        assertArrayEquals(expected, backHalves(out, 2 * rows * cols), "copy16 of a transpose into every other row");
    }

    /**
     * The 16-bit attention, strided as the Transformer's head split leaves q, k and v, its results in PyTorch's
     * [batch, t, heads, d] layout, against the CPU kernels, at a head dimension of each of the CUDA kernels' paths:
     * tensor cores up to 64 (padded to 32 at 20 and 32, to 64 at 33 and 64), rows in memory above (80, accumulated in
     * a float32 workspace), causal and not. The CUDA-core path computes what the CPU kernels do up to float32's last
     * bits, so its 16-bit results are the CPU's to that and a unit of rounding ({@link #closeSums16}); the tensor-core path
     * rounds the probabilities and ds to 16 bits before their products, so it is held to {@link #closeInPrecision}.
     */
    @ParameterizedTest(name = "d = {0}")
    @ValueSource(ints = {20, 32, 33, 64, 80})
    void fusedAttentionOnSixteenBitInputsMatchesTheCpuKernels(int d) {
        int bh = 3;
        int t = 130;
        int n = bh * t * d;
        float scale = (float) (1 / Math.sqrt(d));
        for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
            for (boolean causal : new boolean[] {true, false}) {
                // q, k, v as the heads split off one projection: [batch 1, heads 3, t, d] inside rows of 3 * 3 * d,
                // q at column 0, k at 3 * d, v at 6 * d; out, dout and the gradients as the transpose of a
                // contiguous [t, heads, d]
                long qkvRows = 9L * d;
                long[] o = {(long) t * bh * d, d, (long) bh * d};
                short[] qkv = halves(type, (int) (t * qkvRows), -2, 2);
                short[] out = halves(type, n, -1, 1);   // stands for the forward's rounded output
                short[] dout = halves(type, n, -1, 1);
                short[][] e = {new short[n], null, new short[n], new short[n], new short[n]};
                float[] eLse = new float[bh * t];
                MemorySegment hq = MemorySegment.ofArray(qkv);
                CPU.attentionForwardStrided(type, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], t, d, scale, causal, hq, 0, hq,
                        3L * d, hq, 6L * d, MemorySegment.ofArray(e[0]), 0, MemorySegment.ofArray(eLse), 0);
                CPU.attentionBackwardStrided(type, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], o[0], o[1], o[2], o[0], o[1],
                        o[2], t, d, scale, causal, hq, 0, hq, 3L * d, hq, 6L * d, MemorySegment.ofArray(out), 0,
                        MemorySegment.ofArray(eLse), 0, MemorySegment.ofArray(dout), 0, MemorySegment.ofArray(e[2]), 0,
                        MemorySegment.ofArray(e[3]), 0, MemorySegment.ofArray(e[4]), 0);
                MemorySegment gqkv = onGpu(qkv);
                MemorySegment[] g = {empty(n), empty(bh * t), empty(n), empty(n), empty(n)};
                cuda.attentionForwardStrided(type, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], t, d, scale, causal, gqkv, 0,
                        gqkv, 3L * d, gqkv, 6L * d, g[0], 0, g[1], 0);
                MemorySegment lse = onGpu(eLse);   // the CPU's lse, so that the backward's inputs are the same
                cuda.attentionBackwardStrided(type, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], o[0], o[1], o[2], o[0],
                        o[1], o[2], t, d, scale, causal, gqkv, 0, gqkv, 3L * d, gqkv, 6L * d, onGpu(out), 0, lse, 0,
                        onGpu(dout), 0, g[2], 0, g[3], 0, g[4], 0);
                // again with the gradients in q's layout, all three in one tensor shaped as the projection
                MemorySegment whole = empty(t * qkvRows);
                cuda.attentionBackwardStrided(type, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], o[0], o[1], o[2], 0, d,
                        qkvRows, t, d, scale, causal, gqkv, 0, gqkv, 3L * d, gqkv, 6L * d, onGpu(out), 0, lse, 0,
                        onGpu(dout), 0, whole, 0, whole, 3L * d, whole, 6L * d);
                short[] packed = backHalves(whole, (int) (t * qkvRows));
                float[] gotLse = back(g[1], bh * t);
                String lseWhat = "16-bit attention lse type " + type + " d " + d + (causal ? " causal" : "");
                if (d <= 64) {
                    closeInPrecision(eLse, gotLse, type, lseWhat);   // sums of rounded probabilities
                } else {
                    closeSums(eLse, gotLse, t, lseWhat);
                }
                String[] names = {"out", null, "dq", "dk", "dv"};
                for (int i : new int[] {0, 2, 3, 4}) {
                    String what = "16-bit attention " + names[i] + " type " + type + " d " + d
                            + (causal ? " causal" : "");
                    short[] actual = backHalves(g[i], n);
                    if (d <= 64) {
                        closeInPrecision(widen(type, e[i]), widen(type, actual), type, what);
                    } else {
                        closeSums16(e[i], actual, type, t, what);
                    }
                    if (i >= 2) {
                        short[] inPlace = new short[n];
                        for (int x = 0; x < n; x++) {
                            inPlace[x] = packed[(int) projectionIndex(x, i - 2, bh, d, o, qkvRows)];
                        }
                        assertArrayEquals(actual, inPlace, what + ", written in q's layout");
                    }
                }
            }
        }
    }

    /**
     * @return where element {@code x} of a gradient in the output's layout ({@code o}: [t, heads, d] strides of a
     *     batch of 1) lies in the projection-shaped tensor of rows {@code qkvRows} that holds gradient {@code which}
     *     (0 dq, 1 dk, 2 dv) at column {@code which * heads * d}, as q, k and v lie in their projection
     */
    private static long projectionIndex(int x, int which, int heads, int d, long[] o, long qkvRows) {
        long row = x / o[2];
        long head = x % o[2] / o[1];
        long col = x % o[1];
        return row * qkvRows + (long) which * heads * d + head * d + col;
    }

    /**
     * The float32 attention on q, k, v as the Transformer's head split leaves them and the output and gradients in
     * PyTorch's [batch, t, heads, d] layout (read and written in place, as PyTorch's memory-efficient attention), on
     * the CUDA-core kernels' register paths (20, 64) and generic path (80), against the CPU kernels.
     */
    @ParameterizedTest(name = "d = {0}")
    @ValueSource(ints = {20, 64, 80})
    void fusedAttentionOnStridedFloat32MatchesTheCpuKernels(int d) {
        int bh = 3;
        int t = 70;
        int n = bh * t * d;
        float scale = (float) (1 / Math.sqrt(d));
        long qkvRows = 9L * d;
        long[] o = {(long) t * bh * d, d, (long) bh * d};
        float[] qkv = new float[(int) (t * qkvRows)];
        float[] out = new float[n];
        float[] dout = new float[n];
        for (float[] a : new float[][] {qkv, out, dout}) {
            for (int i = 0; i < a.length; i++) {
                a[i] = random.nextFloat() * 4 - 2;
            }
        }
        for (boolean causal : new boolean[] {true, false}) {
            float[][] e = {new float[n], new float[bh * t], new float[n], new float[n], new float[n]};
            MemorySegment hq = MemorySegment.ofArray(qkv);
            CPU.attentionForwardStrided(Kernels.FLOAT32, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], t, d, scale, causal,
                    hq, 0, hq, 3L * d, hq, 6L * d, MemorySegment.ofArray(e[0]), 0, MemorySegment.ofArray(e[1]), 0);
            CPU.attentionBackwardStrided(Kernels.FLOAT32, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], o[0], o[1], o[2],
                    o[0], o[1], o[2], t, d, scale, causal, hq, 0, hq, 3L * d, hq, 6L * d, MemorySegment.ofArray(out), 0,
                    MemorySegment.ofArray(e[1]), 0, MemorySegment.ofArray(dout), 0, MemorySegment.ofArray(e[2]), 0,
                    MemorySegment.ofArray(e[3]), 0, MemorySegment.ofArray(e[4]), 0);
            MemorySegment gqkv = onGpu(qkv);
            MemorySegment[] g = {empty(n), empty(bh * t), empty(n), empty(n), empty(n)};
            cuda.attentionForwardStrided(Kernels.FLOAT32, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], t, d, scale,
                    causal, gqkv, 0, gqkv, 3L * d, gqkv, 6L * d, g[0], 0, g[1], 0);
            cuda.attentionBackwardStrided(Kernels.FLOAT32, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], o[0], o[1], o[2],
                    o[0], o[1], o[2], t, d, scale, causal, gqkv, 0, gqkv, 3L * d, gqkv, 6L * d, onGpu(out), 0,
                    onGpu(e[1]), 0, onGpu(dout), 0, g[2], 0, g[3], 0, g[4], 0);
            MemorySegment whole = empty(t * qkvRows);   // the gradients in q's layout, in one projection-shaped tensor
            cuda.attentionBackwardStrided(Kernels.FLOAT32, bh, bh, 0, d, qkvRows, o[0], o[1], o[2], o[0], o[1], o[2],
                    0, d, qkvRows, t, d, scale, causal, gqkv, 0, gqkv, 3L * d, gqkv, 6L * d, onGpu(out), 0,
                    onGpu(e[1]), 0, onGpu(dout), 0, whole, 0, whole, 3L * d, whole, 6L * d);
            float[] packed = back(whole, (int) (t * qkvRows));
            String[] names = {"out", "lse", "dq", "dk", "dv"};
            for (int i = 0; i < names.length; i++) {
                String what = "strided float32 attention " + names[i] + " d " + d + (causal ? " causal" : "");
                float[] actual = back(g[i], e[i].length);
                closeSums(e[i], actual, t, what);
                if (i >= 2) {
                    float[] inPlace = new float[n];
                    for (int x = 0; x < n; x++) {
                        inPlace[x] = packed[(int) projectionIndex(x, i - 2, bh, d, o, qkvRows)];
                    }
                    assertArrayEquals(actual, inPlace, what + ", written in q's layout");
                }
            }
        }
    }

    /**
     * {@code VRAM4J_CUDA_ATTENTION=cuda-cores} runs the 16-bit attention at d 64 on the CUDA-core kernels: the CPU
     * kernels' values up to float32's last bits (so their 16-bit roundings at most a unit apart), which the
     * tensor-core kernels' rounding of p (a unit of 16-bit roundoff before the products) would not meet.
     */
    @Test
    void theCudaCoreAttentionCanBeChosen() {
        int bh = 2;
        int t = 70;
        int d = 64;
        int n = bh * t * d;
        float scale = 0.125f;
        short[] q = halves(Kernels.BFLOAT16, n, -2, 2);
        short[] k = halves(Kernels.BFLOAT16, n, -2, 2);
        short[] v = halves(Kernels.BFLOAT16, n, -2, 2);
        short[] eOut = new short[n];
        float[] eLse = new float[bh * t];
        CPU.attentionForwardStrided(Kernels.BFLOAT16, bh, 1, (long) t * d, 0, d, (long) t * d, 0, d, t, d, scale, true,
                MemorySegment.ofArray(q), 0, MemorySegment.ofArray(k), 0, MemorySegment.ofArray(v), 0,
                MemorySegment.ofArray(eOut), 0, MemorySegment.ofArray(eLse), 0);
        try (CudaKernels cores = CudaKernels.create(alloc, gpu.defaultStream(),
                java.util.Map.of(CudaKernels.ATTENTION_ENV, "cuda-cores"))) {
            MemorySegment[] g = {empty(n), empty(bh * t)};
            cores.attentionForwardStrided(Kernels.BFLOAT16, bh, 1, (long) t * d, 0, d, (long) t * d, 0, d, t, d, scale,
                    true, onGpu(q), 0, onGpu(k), 0, onGpu(v), 0, g[0], 0, g[1], 0);
            closeSums16(eOut, backHalves(g[0], n), Kernels.BFLOAT16, t, "cuda-core attention out");
            closeSums(eLse, back(g[1], bh * t), t, "cuda-core attention lse");
        }
    }

    /** The float values of 16-bit {@code h} of {@code type}. */
    private static float[] widen(int type, short[] h) {
        float[] f = new float[h.length];
        for (int i = 0; i < h.length; i++) {
            f[i] = type == Kernels.FLOAT16 ? Half.fp16ToFloat(h[i]) : Half.bf16ToFloat(h[i]);
        }
        return f;
    }

    /**
     * Holds 16-bit results rounded from float32 sums of {@code k} terms to {@link #closeSums}' tolerance plus one
     * unit of the 16-bit type (the two float32 values may lie on either side of a rounding boundary).
     */
    private static void closeSums16(short[] expected, short[] actual, int type, int k, String what) {
        float[] e = widen(type, expected);
        float[] a = widen(type, actual);
        for (int i = 0; i < e.length; i++) {
            // one unit: the float32 ulp of the larger magnitude, scaled to the 16-bit type's 11 or 8 significant bits
            float unit = Math.max(Math.ulp(Math.max(Math.abs(e[i]), Math.abs(a[i]))) * (type == Kernels.FLOAT16
                    ? 0x1p13f : 0x1p16f), type == Kernels.FLOAT16 ? 0x1p-24f : 0f);
            float tol = 1e-5f * Math.abs(e[i]) + 1e-6f * k + unit;
            if (!(Math.abs(e[i] - a[i]) <= tol)) {
                fail(what + "[" + i + "]: expected " + e[i] + ", got " + a[i] + " (tolerance " + tol + ")");
            }
        }
    }

    /**
     * Holds a tensor-core attention result to the CPU kernels' within what rounding the probabilities (or ds) to
     * {@code type} allows: every element within 3 units of roundoff ({@code 2^-11} float16, {@code 2^-8}
     * bfloat16) of the largest magnitude of {@code expected} (the emulated GPU's worst, over d 20 to 64, both types,
     * causal and not, is 1.98 units, in fp16 dq at d 33: the results are 16-bit, and one unit in the last place of the
     * largest element is up to 2). Faults planted in the kernels (a mask off by one, the output's rescale left out, a
     * query tile skipped in dk/dv, D left out of dq's ds, D's warp sum left out, the warp barrier between the scores
     * and the online softmax left out) all failed it, the last in reverse thread order.
     */
    private static void closeInPrecision(float[] expected, float[] actual, int type, String what) {
        float largest = 0;
        for (float x : expected) {
            largest = Math.max(largest, Math.abs(x));
        }
        float tol = 3 * (type == Kernels.FLOAT16 ? 0x1p-11f : 0x1p-8f) * largest;
        for (int i = 0; i < expected.length; i++) {
            if (!(Math.abs(expected[i] - actual[i]) <= tol)) {
                fail(what + "[" + i + "]: expected " + expected[i] + ", got " + actual[i] + " (tolerance " + tol + ")");
            }
        }
    }
}
