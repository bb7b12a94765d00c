package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.Half;
import io.vram4j.compute.Kernels;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Unary ops, binary ops (broadcasting too) and the ReLU/GELU backward on float16 and bfloat16 tensors in device
 * memory ({@link OpaqueDevice}, as on a GPU) run as one 16-bit kernel ({@code Kernels.unary16},
 * {@code Kernels.binary16}, {@code Kernels.pointwiseBackward16}), as PyTorch's
 * kernels run under autocast: the op allocates its result and nothing else (no float32 copy of its input or output
 * from the caching allocator), and the result has the bits of the float32 path (widen, the float32 kernel, round
 * once).
 */
class HalfElementwiseOnDeviceMemoryTest {
    private static final int ROWS = 333;
    private static final int COLS = 257;   // an odd element count over several of the CPU kernels' chunks

    private OpaqueDevice backend;
    private CachingAllocator alloc;
    private OpaqueKernels.Counters counters;
    private Device dev;
    private final Random random = new Random(7);

    @BeforeEach
    void open() {
        backend = new OpaqueDevice(64L << 20);
        alloc = CachingAllocator.create(backend);
        counters = new OpaqueKernels.Counters();
        dev = Device.of(alloc).withKernels(OpaqueKernels.over(backend, Kernels.scalar(), new AtomicLong(), counters));
    }

    @AfterEach
    void close() {
        alloc.close();
        backend.close();
    }

    private float[] values(float lo, float hi) {
        float[] v = new float[ROWS * COLS];
        for (int i = 0; i < v.length; i++) {
            v[i] = lo + (hi - lo) * random.nextFloat();
        }
        return v;
    }

    /** A tensor of {@code type} in device memory holding {@code v} rounded (the float32 original closed). */
    private Tensor tensor(float[] v, DType type) {
        try (Tensor f = dev.tensor(v, ROWS, COLS)) {
            return f.to(type);
        }
    }

    /** A bias of {@code COLS} values in [-1, 1) of {@code type} in device memory. */
    private Tensor bias(DType type) {
        float[] v = new float[COLS];
        for (int i = 0; i < COLS; i++) {
            v[i] = random.nextFloat() * 2 - 1;
        }
        try (Tensor f = dev.tensor(v, COLS)) {
            return f.to(type);
        }
    }

    /** The values of a {@code [COLS]} bias as they broadcast over {@code ROWS} rows, row-major. */
    private static float[] rows(Tensor bias) {
        float[] b = bias.toFloatArray();
        float[] r = new float[ROWS * COLS];
        for (int i = 0; i < r.length; i++) {
            r[i] = b[i % COLS];
        }
        return r;
    }

    private static float round(DType t, float v) {
        return t == DType.FLOAT16 ? Half.fp16ToFloat(Half.floatToFp16(v)) : Half.bf16ToFloat(Half.floatToBf16(v));
    }

    /** The float32 path: the float32 kernel over the exactly widened values, each result rounded once. */
    private interface F32Kernel {
        void run(Kernels k, long n, MemorySegment a, MemorySegment b, MemorySegment out);
    }

    private static float[] expected(DType t, F32Kernel kernel, float[] a, float[] b) {
        float[] out = new float[a.length];
        kernel.run(Kernels.scalar(), a.length, MemorySegment.ofArray(a), b == null ? null : MemorySegment.ofArray(b),
                MemorySegment.ofArray(out));
        for (int i = 0; i < out.length; i++) {
            out[i] = round(t, out[i]);
        }
        return out;
    }

    /** Runs {@code op} and checks that it allocated its result and nothing more, with one 16-bit launch. */
    private Tensor onlyTheResult(String kernel, UnaryOperator<Tensor> op, Tensor in) {
        alloc.resetPeakMemoryStats();
        long before = alloc.memoryAllocated();
        Map<String, Long> launches = Map.copyOf(counters.byKernel());
        Tensor out = op.apply(in);
        long resultBytes = alloc.memoryAllocated() - before;
        assertEquals(alloc.memoryAllocated(), alloc.maxMemoryAllocated(), kernel + ": the peak is the result, no"
                + " float32 temporary (" + resultBytes + " bytes of result)");
        assertEquals(launches.getOrDefault(kernel, 0L) + 1, counters.byKernel().get(kernel), kernel + ": one launch");
        for (String conversion : new String[] {"bf16ToFloat", "fp16ToFloat", "floatToBf16", "floatToFp16"}) {
            assertEquals(launches.getOrDefault(conversion, 0L), counters.byKernel().getOrDefault(conversion, 0L),
                    kernel + ": no " + conversion);
        }
        return out;
    }

    private static void assertBits(float[] expected, float[] actual, String what) {
        assertEquals(expected.length, actual.length, what);
        for (int i = 0; i < expected.length; i++) {
            if (Float.floatToIntBits(expected[i]) != Float.floatToIntBits(actual[i])) {
                assertEquals(expected[i], actual[i], what + "[" + i + "]");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void unaryOpsAllocateOnlyTheirResultAndRoundOnce(DType type) {
        float[] v = values(-6, 6);
        try (Tensor x = tensor(v, type)) {
            float[] wide = x.toFloatArray();   // exactly the 16-bit values
            float[] positive = new float[wide.length];
            for (int i = 0; i < wide.length; i++) {
                positive[i] = Math.abs(wide[i]) + 0.125f;
            }
            try (Tensor gelu = onlyTheResult("unary16", Tensor::gelu, x);
                 Tensor relu = onlyTheResult("unary16", Tensor::relu, x);
                 Tensor exp = onlyTheResult("unary16", Tensor::exp, x);
                 Tensor tanh = onlyTheResult("unary16", Tensor::tanh, x);
                 Tensor neg = onlyTheResult("unary16", Tensor::neg, x);
                 Tensor p = tensor(positive, type);
                 Tensor sqrt = onlyTheResult("unary16", Tensor::sqrt, p);
                 Tensor log = onlyTheResult("unary16", Tensor::log, p)) {
                assertEquals(type, gelu.dtype());
                float[] pw = p.toFloatArray();
                assertBits(expected(type, (k, n, a, b, o) -> k.gelu(n, a, 0, o, 0), wide, null), gelu.toFloatArray(), "gelu");
                assertBits(expected(type, (k, n, a, b, o) -> k.relu(n, a, 0, o, 0), wide, null), relu.toFloatArray(), "relu");
                assertBits(expected(type, (k, n, a, b, o) -> k.exp(n, a, 0, o, 0), wide, null), exp.toFloatArray(), "exp");
                assertBits(expected(type, (k, n, a, b, o) -> k.tanh(n, a, 0, o, 0), wide, null), tanh.toFloatArray(), "tanh");
                assertBits(expected(type, (k, n, a, b, o) -> k.neg(n, a, 0, o, 0), wide, null), neg.toFloatArray(), "neg");
                assertBits(expected(type, (k, n, a, b, o) -> k.sqrt(n, a, 0, o, 0), pw, null), sqrt.toFloatArray(), "sqrt");
                assertBits(expected(type, (k, n, a, b, o) -> k.log(n, a, 0, o, 0), pw, null), log.toFloatArray(), "log");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void reluAndGeluBackwardAllocateOnlyTheirResultAndRoundOnce(DType type) {
        try (Tensor x = tensor(values(-6, 6), type);
             Tensor g = tensor(values(-2, 2), type)) {
            float[] xw = x.toFloatArray();
            float[] gw = g.toFloatArray();
            try (Tensor dGelu = onlyTheResult("pointwiseBackward16", t -> BackwardOps.geluBackward(t, x), g);
                 Tensor dRelu = onlyTheResult("pointwiseBackward16", t -> BackwardOps.reluBackward(t, x), g)) {
                assertEquals(type, dGelu.dtype());
                assertBits(expected(type, (k, n, a, b, o) -> k.geluBackward(n, a, 0, b, 0, o, 0), gw, xw),
                        dGelu.toFloatArray(), "geluBackward");
                assertBits(expected(type, (k, n, a, b, o) -> k.reluBackward(n, a, 0, b, 0, o, 0), gw, xw),
                        dRelu.toFloatArray(), "reluBackward");
            }
        }
    }

    /**
     * A bias gradient's sum over the rows (and a sum over the columns) reads the 16-bit values in place and writes
     * the 16-bit result: one {@code sumDimTo16} launch, no widening, no float32 copy of the input and no float32 sums
     * to narrow; the peak is the result. The sums are the float32 path's, rounded once.
     */
    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void sumsOverADimensionReadTheSixteenBitValuesInPlace(DType type) {
        try (Tensor g = tensor(values(-2, 2), type)) {
            float[] gw = g.toFloatArray();
            float[] columnSums = new float[COLS];
            float[] rowSums = new float[ROWS];
            Kernels.scalar().sumDim(1, ROWS, COLS, MemorySegment.ofArray(gw), 0, MemorySegment.ofArray(columnSums), 0);
            Kernels.scalar().sumDim(ROWS, COLS, 1, MemorySegment.ofArray(gw), 0, MemorySegment.ofArray(rowSums), 0);
            for (UnaryOperator<Tensor> sum : List.<UnaryOperator<Tensor>>of(t -> t.sumToSize(COLS), t -> t.sum(1, false))) {
                alloc.resetPeakMemoryStats();
                long before = alloc.memoryAllocated();
                Map<String, Long> launches = Map.copyOf(counters.byKernel());
                try (Tensor r = sum.apply(g)) {
                    long resultBytes = alloc.memoryAllocated() - before;
                    assertEquals(resultBytes, alloc.maxMemoryAllocated() - before, "peak: the result alone, no "
                            + "float32 copy of the " + g.numel() + " values and no float32 sums");
                    assertEquals(launches.getOrDefault("sumDimTo16", 0L) + 1, counters.byKernel().get("sumDimTo16"));
                    for (String widen : new String[] {"bf16ToFloat", "fp16ToFloat", "floatToBf16", "floatToFp16",
                                                      "sumDim16"}) {
                        assertEquals(launches.getOrDefault(widen, 0L), counters.byKernel().getOrDefault(widen, 0L),
                                "no " + widen);
                    }
                    assertEquals(type, r.dtype());
                    float[] want = r.numel() == COLS ? columnSums : rowSums;
                    float[] rounded = new float[want.length];
                    for (int i = 0; i < want.length; i++) {
                        rounded[i] = round(type, want[i]);
                    }
                    assertBits(rounded, r.toFloatArray(), "sum over " + (r.numel() == COLS ? "rows" : "columns"));
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void binaryOpsWithBroadcastingAllocateOnlyTheirResultAndRoundOnce(DType type) {
        try (Tensor x = tensor(values(-6, 6), type);
             Tensor y = tensor(values(0.5f, 3), type);
             Tensor b = bias(type)) {
            float[] xw = x.toFloatArray();
            float[] yw = y.toFloatArray();
            float[] bRows = rows(b);
            try (Tensor plusBias = onlyTheResult("binary16", t -> t.add(b), x);
                 Tensor quotient = onlyTheResult("binary16", t -> t.div(y), x);
                 Tensor product = onlyTheResult("binary16", t -> t.mul(y), x);
                 Tensor difference = onlyTheResult("binary16", t -> t.sub(b), x)) {
                assertEquals(type, plusBias.dtype());
                assertBits(expected(type, (k, n, p, q, o) -> k.add(n, p, 0, q, 0, o, 0), xw, bRows),
                        plusBias.toFloatArray(), "x + bias");
                assertBits(expected(type, (k, n, p, q, o) -> k.div(n, p, 0, q, 0, o, 0), xw, yw),
                        quotient.toFloatArray(), "x / y");
                assertBits(expected(type, (k, n, p, q, o) -> k.mul(n, p, 0, q, 0, o, 0), xw, yw),
                        product.toFloatArray(), "x * y");
                assertBits(expected(type, (k, n, p, q, o) -> k.sub(n, p, 0, q, 0, o, 0), xw, bRows),
                        difference.toFloatArray(), "x - bias");
            }
        }
    }

    /**
     * A float32 tensor and a 16-bit one (the residual stream plus a projection under autocast) make a float32 result
     * in one {@code binaryMixed} launch, the 16-bit operand read in place: no widened copy, and the float32 op's bits
     * on the exactly widened values. Either operand may be the 16-bit one, broadcast or not.
     */
    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void mixedFloat32AndSixteenBitOpsAllocateOnlyTheirResult(DType type) {
        float[] xv = values(-6, 6);
        try (Tensor x = dev.tensor(xv, ROWS, COLS);
             Tensor y = tensor(values(0.5f, 3), type);
             Tensor b = bias(type)) {
            float[] yw = y.toFloatArray();
            float[] bRows = rows(b);
            try (Tensor sum = onlyTheResult("binaryMixed", t -> t.add(y), x);
                 Tensor plusBias = onlyTheResult("binaryMixed", t -> t.add(b), x);
                 Tensor quotient = onlyTheResult("binaryMixed", t -> y.div(t), x);
                 Tensor difference = onlyTheResult("binaryMixed", t -> b.sub(t), x)) {
                assertEquals(DType.FLOAT32, sum.dtype());
                float[][] want = new float[4][xv.length];
                for (int i = 0; i < xv.length; i++) {
                    want[0][i] = xv[i] + yw[i];
                    want[1][i] = xv[i] + bRows[i];
                    want[2][i] = yw[i] / xv[i];
                    want[3][i] = bRows[i] - xv[i];
                }
                assertBits(want[0], sum.toFloatArray(), "x + y");
                assertBits(want[1], plusBias.toFloatArray(), "x + bias");
                assertBits(want[2], quotient.toFloatArray(), "y / x");
                assertBits(want[3], difference.toFloatArray(), "bias - x");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void fusedAttentionReadsSixteenBitInputsWithoutFloat32Copies(DType type) {
        int b = 2;
        int h = 3;
        int t = 40;
        int d = 16;
        long n = (long) b * h * t * d;
        float[] qv = new float[(int) n];
        float[] kv = new float[(int) n];
        float[] vv = new float[(int) n];
        for (int i = 0; i < n; i++) {
            qv[i] = random.nextFloat() * 4 - 2;
            kv[i] = random.nextFloat() * 4 - 2;
            vv[i] = random.nextFloat() * 2 - 1;
        }
        try (Tensor q32 = dev.tensor(qv, b, h, t, d); Tensor k32 = dev.tensor(kv, b, h, t, d);
             Tensor v32 = dev.tensor(vv, b, h, t, d);
             Tensor q = q32.to(type); Tensor k = k32.to(type); Tensor v = v32.to(type);
             Tensor qw = q.to(DType.FLOAT32); Tensor kw = k.to(DType.FLOAT32); Tensor vw = v.to(DType.FLOAT32)) {
            alloc.resetPeakMemoryStats();
            long before = alloc.memoryAllocated();
            long launches = counters.byKernel().getOrDefault("attentionForwardStrided", 0L);
            try (Tensor out = Functional.scaledDotProductAttention(q, k, v, true)) {
                // the call held its 16-bit output and the float32 lse: no widened q, k, v, no float32 image of the
                // output (the kernel writes the 16-bit values in the output's layout)
                long peak = alloc.maxMemoryAllocated() - before;
                long bound = 2 * n + 4L * b * h * t + 2 * 512;
                assertTrue(peak <= bound, "peak " + peak + " bytes over the " + bound + " of output and lse");
                assertEquals(launches + 1, counters.byKernel().get("attentionForwardStrided"), "one 16-bit launch");
                assertEquals(type, out.dtype());
                try (Tensor wide = Functional.scaledDotProductAttention(qw, kw, vw, true);
                     Tensor expected = wide.to(type)) {
                    assertBits(expected.toFloatArray(), out.toFloatArray(), "attention on 16-bit inputs");
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void addingInPlaceAllocatesNothingAndRoundsOnce(DType type) {
        try (Tensor acc = tensor(values(-6, 6), type);
             Tensor more = tensor(values(-6, 6), type);
             Tensor b = bias(type)) {
            float[] aw = acc.toFloatArray();
            float[] mw = more.toFloatArray();
            float[] bRows = rows(b);
            float[] once = expected(type, (k, n, p, q, o) -> k.add(n, p, 0, q, 0, o, 0), aw, mw);
            float[] twice = expected(type, (k, n, p, q, o) -> k.add(n, p, 0, q, 0, o, 0), once, bRows);
            alloc.resetPeakMemoryStats();
            long before = alloc.memoryAllocated();
            long launches = counters.byKernel().getOrDefault("binary16", 0L);
            acc.addInPlace(more);
            acc.addInPlace(b);   // broadcast over the rows
            assertEquals(before, alloc.maxMemoryAllocated(), "an in-place add allocates nothing");
            assertEquals(launches + 2, counters.byKernel().get("binary16"), "one 16-bit launch each");
            assertBits(twice, acc.toFloatArray(), "acc + more + bias, rounded after each add");
            acc.addInPlace(more, 0.5f);   // another alpha: the float32 path, which still works
            assertEquals(launches + 2, counters.byKernel().get("binary16"));
            // a source overlapping the destination in another layout: read whole first (the float32 path), so that
            // every element adds the value it had before the update
            float[] before16 = acc.toFloatArray();
            try (Tensor dst = acc.narrow(1, 0, COLS - 1); Tensor src = acc.narrow(1, 1, COLS - 1)) {
                dst.addInPlace(src);
            }
            assertEquals(launches + 2, counters.byKernel().get("binary16"), "overlap: not in place");
            float[] after = acc.toFloatArray();
            for (int r = 0; r < ROWS; r++) {
                for (int c = 0; c < COLS - 1; c++) {
                    assertEquals(round(type, before16[r * COLS + c] + before16[r * COLS + c + 1]), after[r * COLS + c],
                            "[" + r + ", " + c + "]");
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void attentionReadsTheHeadsSplitOffOneProjectionInPlace(DType type) {
        int b = 2;
        int t = 24;
        int heads = 3;
        int hd = 8;
        int c = heads * hd;
        float[] proj = new float[b * t * 3 * c];
        for (int i = 0; i < proj.length; i++) {
            proj[i] = random.nextFloat() * 4 - 2;
        }
        float[] grad = new float[b * t * c];
        for (int i = 0; i < grad.length; i++) {
            grad[i] = random.nextFloat() * 2 - 1;
        }
        try (Tensor p32 = dev.tensor(proj, b, t, 3 * c); Tensor qkv = p32.to(type);
             Tensor g32 = dev.tensor(grad, b, t, heads, hd); Tensor gBthd = g32.to(type);
             Tensor g = gBthd.transpose(1, 2)) {
            Tensor[] parts = new Tensor[3];
            Tensor[] views = new Tensor[3];
            Tensor[] split = new Tensor[3];
            Tensor[] wide = new Tensor[3];
            try {
                for (int i = 0; i < 3; i++) {   // as CausalSelfAttention splits them: narrow, view, transpose
                    parts[i] = qkv.narrow(2, i * c, c);
                    views[i] = parts[i].view(b, t, heads, hd);
                    split[i] = views[i].transpose(1, 2);
                    wide[i] = split[i].to(DType.FLOAT32);
                }
                assertFalse(split[0].isContiguous());
                long forward = counters.byKernel().getOrDefault("attentionForwardStrided", 0L);
                long backward = counters.byKernel().getOrDefault("attentionBackwardStrided", 0L);
                alloc.resetPeakMemoryStats();
                long before = alloc.memoryAllocated();
                try (Tensor out = FusedAttention.forward(split[0], split[1], split[2], true, 0.35f)) {
                    long n = (long) b * t * c;
                    long bound = 2 * n + 4L * b * heads * t + 2 * 512;
                    assertTrue(alloc.maxMemoryAllocated() - before <= bound, "forward peak "
                            + (alloc.maxMemoryAllocated() - before) + " over " + bound + ": q, k, v or the output"
                            + " were copied");
                    assertEquals(forward + 1, counters.byKernel().get("attentionForwardStrided"), "read in place");
                    try (Tensor out32 = FusedAttention.forward(wide[0], wide[1], wide[2], true, 0.35f);
                         Tensor expected = out32.to(type)) {
                        assertBits(expected.toFloatArray(), out.toFloatArray(), "strided 16-bit attention");
                    }
                    // the backward: the forward's lse from the float32 kernel, the gradient of the output the
                    // transpose of a contiguous [b, t, heads, d]; against the float32 path on the same values
                    try (Tensor o32 = Tensor.allocate(dev, DType.FLOAT32, new int[] {b, heads, t, hd});
                         Tensor lse = Tensor.allocate(dev, DType.FLOAT32, new int[] {b, heads, t});
                         Tensor gw = g.to(DType.FLOAT32); Tensor outw = out.to(DType.FLOAT32)) {
                        try (Tensor q32 = wide[0].contiguous(); Tensor k32 = wide[1].contiguous();
                             Tensor v32 = wide[2].contiguous()) {
                            dev.kernels().attentionForward(b * heads, t, hd, 0.35f, true, q32.storage.kernelSegment(),
                                    q32.offset, k32.storage.kernelSegment(), k32.offset, v32.storage.kernelSegment(),
                                    v32.offset, o32.storage.kernelSegment(), o32.offset, lse.storage.kernelSegment(),
                                    lse.offset);
                        }
                        alloc.resetPeakMemoryStats();
                        long beforeBackward = alloc.memoryAllocated();
                        Tensor[] got = BackwardOps.attentionBackward(g, split[0], split[1], split[2], out, lse, true,
                                0.35f);
                        long backwardPeak = alloc.maxMemoryAllocated() - beforeBackward;
                        assertTrue(backwardPeak <= 3 * 2 * n + 512, "backward peak " + backwardPeak + " over one "
                                + "tensor of the three 16-bit gradients: the saved output or a gradient was copied");
                        for (int i = 0; i < 3; i++) {
                            assertArrayEquals(split[i].strides(), got[i].strides(), "a gradient in q's layout, "
                                    + "which the split's backward merges into the projection's gradient as a view");
                            assertSame(got[0].storage, got[i].storage, "the three gradients in one tensor");
                        }
                        Tensor[] want = BackwardOps.attentionBackward(gw, wide[0], wide[1], wide[2], outw, lse, true,
                                0.35f);
                        try {
                            assertEquals(backward + 1, counters.byKernel().get("attentionBackwardStrided"), "read in place");
                            String[] names = {"dq", "dk", "dv"};
                            for (int i = 0; i < 3; i++) {
                                assertEquals(type, got[i].dtype());
                                try (Tensor w = want[i].to(type)) {
                                    assertBits(w.toFloatArray(), got[i].toFloatArray(), "strided 16-bit " + names[i]);
                                }
                            }
                        } finally {
                            for (int i = 0; i < 3; i++) {
                                got[i].close();
                                want[i].close();
                            }
                        }
                    }
                }
            } finally {
                for (Tensor[] ts : new Tensor[][] {wide, split, views, parts}) {
                    for (Tensor x : ts) {
                        if (x != null) {
                            x.close();
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"FLOAT16", "BFLOAT16"})
    void aStridedOrMixedOperandTakesTheFloat32Path(DType type) {
        try (Tensor x = tensor(values(-6, 6), type);
             Tensor xt = x.transpose(0, 1);
             Tensor g32 = dev.tensor(values(-2, 2), ROWS, COLS)) {
            assertFalse(xt.isContiguous());
            long before = counters.byKernel().getOrDefault("unary16", 0L);
            try (Tensor y = xt.gelu()) {
                assertEquals(before, counters.byKernel().getOrDefault("unary16", 0L), "a strided input is gathered first");
                assertEquals(type, y.dtype());
            }
            long backward = counters.byKernel().getOrDefault("pointwiseBackward16", 0L);
            long binary = counters.byKernel().getOrDefault("binary16", 0L);
            try (Tensor sum = g32.add(x)) {
                assertEquals(binary, counters.byKernel().getOrDefault("binary16", 0L), "float32 + 16-bit: float32");
                assertEquals(DType.FLOAT32, sum.dtype());
            }
            try (Tensor d = BackwardOps.geluBackward(g32, x)) {
                assertEquals(backward, counters.byKernel().getOrDefault("pointwiseBackward16", 0L),
                        "a float32 gradient with a 16-bit input: the float32 path");
                assertEquals(DType.FLOAT32, d.dtype());
            }
        }
    }
}
