package io.vram4j.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vram4j.amp.Autocast;
import io.vram4j.autograd.Prim;
import io.vram4j.nn.GPT;
import io.vram4j.nn.TransformerBlock;
import io.vram4j.train.Checkpoint;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link Functional#scaledDotProductAttention} on its two backends: the fused op ({@link SDPBackend#FLASH_ATTENTION},
 * the default) against the unfused ops ({@link SDPBackend#MATH}), forward and gradients, on random shapes with
 * {@code T} off the kernels' tiles and odd head dimensions; the choice of backend ({@link SdpaKernel}); autocast;
 * checkpointing; and the memory the fused op saves, computed from the shapes.
 */
class FusedAttentionTest {
    Device dev;

    @BeforeEach
    void open() {
        dev = Device.open("host:512MiB");
    }

    @AfterEach
    void close() {
        assertEquals(0, dev.memoryAllocated(), "everything freed");
        dev.close();
    }

    /** The output, then the gradients of q, k and v of {@code sum(out * w)}, for inputs of {@code shape}. */
    List<float[]> run(SDPBackend backend, int[] shape, boolean causal, long seed, Prim expectedNode) {
        Random r = new Random(seed);
        try (MemoryScope s = MemoryScope.open(); SdpaKernel k = SdpaKernel.enable(backend)) {
            Tensor[] in = new Tensor[3];
            for (int i = 0; i < 3; i++) {
                in[i] = dev.tensor(random(r, shape, 1.5f), shape).requiresGrad(true);
            }
            Tensor out = Functional.scaledDotProductAttention(in[0], in[1], in[2], causal);
            assertEquals(expectedNode, out.gradFn().prim(), backend + ": the node of the output");
            Tensor w = dev.tensor(random(r, shape, 1f), shape);
            out.mul(w).sum().backward();
            List<float[]> values = new ArrayList<>();
            values.add(out.toFloatArray());
            for (Tensor t : in) {
                values.add(t.grad().toFloatArray());
            }
            return values;
        }
    }

    static float[] random(Random r, int[] shape, float scale) {
        float[] v = new float[Math.toIntExact(Shapes.numel(shape))];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) r.nextGaussian() * scale;
        }
        return v;
    }

    static void assertClose(float[] expected, float[] actual, double tol, String what) {
        assertEquals(expected.length, actual.length, what);
        for (int i = 0; i < expected.length; i++) {
            assertTrue(Math.abs(expected[i] - actual[i]) <= tol * (1 + Math.abs(expected[i])),
                    what + "[" + i + "]: math " + expected[i] + ", fused " + actual[i]);
        }
    }

    @Test
    void fusedAndMathAgreeForwardAndBackward() {
        int[][] shapes = {{2, 3, 37, 5}, {1, 2, 70, 33}, {1, 1, 1, 1}, {3, 65, 8}, {1, 2, 129, 16}};
        long seed = 1;
        for (int[] shape : shapes) {
            for (boolean causal : new boolean[] {true, false}) {
                List<float[]> math = run(SDPBackend.MATH, shape, causal, seed, Prim.MATMUL);
                List<float[]> fused = run(SDPBackend.FLASH_ATTENTION, shape, causal, seed,
                        Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION);
                String where = java.util.Arrays.toString(shape) + (causal ? " causal" : " full");
                for (int i = 0; i < math.size(); i++) {
                    assertClose(math.get(i), fused.get(i), 2e-5, where + (i == 0 ? " output" : " gradient " + i));
                }
                seed++;
            }
        }
    }

    @Test
    void theFusedOpIsTheDefaultAndMathIsKeptOnRequest() {
        assertEquals(EnumSet.allOf(SDPBackend.class), SdpaKernel.enabled());
        try (MemoryScope s = MemoryScope.open()) {
            Tensor q = dev.randn(new Generator(1), 2, 4, 3).requiresGrad(true);
            assertEquals(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION,
                    Functional.scaledDotProductAttention(q, q, q, true).gradFn().prim());
            try (SdpaKernel math = SdpaKernel.enable(SDPBackend.MATH)) {
                assertEquals(EnumSet.of(SDPBackend.MATH), SdpaKernel.enabled());
                assertEquals(Prim.MATMUL, Functional.scaledDotProductAttention(q, q, q, true).gradFn().prim());
                try (SdpaKernel flash = SdpaKernel.enable(SDPBackend.FLASH_ATTENTION)) {
                    assertEquals(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION,
                            Functional.scaledDotProductAttention(q, q, q, false).gradFn().prim());
                }
                assertEquals(EnumSet.of(SDPBackend.MATH), SdpaKernel.enabled(), "nested blocks restore");
            }
            assertEquals(EnumSet.allOf(SDPBackend.class), SdpaKernel.enabled());
            // keys of another length (cross-attention shaped) are not fused: math takes them by default
            Tensor k = dev.randn(new Generator(2), 2, 6, 3);
            assertEquals(Prim.MATMUL, Functional.scaledDotProductAttention(q, k, k, false).gradFn().prim());
        }
    }

    @Test
    void flashAloneRefusesWhatItCannotTakeAndAllocatesNothing() {
        try (MemoryScope s = MemoryScope.open(); SdpaKernel flash = SdpaKernel.enable(SDPBackend.FLASH_ATTENTION)) {
            Tensor q = dev.randn(new Generator(1), 2, 4, 3);
            Tensor k = dev.randn(new Generator(2), 2, 6, 3);
            Tensor h = q.to(DType.BFLOAT16);
            long before = dev.memoryAllocated();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Functional.scaledDotProductAttention(q, k, k, true));
            assertTrue(e.getMessage().startsWith("scaled_dot_product_attention: no available kernel")
                    && e.getMessage().contains("[2, 4, 3], [2, 6, 3]"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> Functional.scaledDotProductAttention(q, h, q, true));
            assertTrue(e.getMessage().contains("not of one floating-point dtype (float32, bfloat16, float32)"),
                    e.getMessage());
            assertEquals(before, dev.memoryAllocated(), "nothing allocated by a refused call");
        }
    }

    @Test
    void backendNamesParseAndOthersAreRefusedInOneLine() {
        assertEquals(SDPBackend.FLASH_ATTENTION, SDPBackend.parse("flash"));
        assertEquals(SDPBackend.FLASH_ATTENTION, SDPBackend.parse("FLASH_ATTENTION"));
        assertEquals(SDPBackend.MATH, SDPBackend.parse(" Math "));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SDPBackend.parse("efficient"));
        assertEquals("attention backend 'efficient' is not one of flash, math", e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"FLOAT16", "BFLOAT16"})
    void underAutocastTheFusedOpTakesAndGivesTheLowerPrecision(DType low) {
        int[] shape = {2, 2, 19, 8};
        List<List<float[]>> results = new ArrayList<>();
        for (SDPBackend b : SDPBackend.values()) {
            Random r = new Random(9);
            try (MemoryScope s = MemoryScope.open(); SdpaKernel k = SdpaKernel.enable(b)) {
                Tensor[] in = new Tensor[3];
                for (int i = 0; i < 3; i++) {
                    in[i] = dev.tensor(random(r, shape, 1f), shape).requiresGrad(true);
                }
                Tensor out;
                try (Autocast ac = Autocast.enable(low)) {
                    out = Functional.scaledDotProductAttention(in[0], in[1], in[2], true);
                }
                assertEquals(low, out.dtype(), b + ": the output's dtype");
                out.to(DType.FLOAT32).sum().backward();
                List<float[]> v = new ArrayList<>();
                v.add(out.toFloatArray());
                for (Tensor t : in) {
                    assertEquals(DType.FLOAT32, t.grad().dtype(), b + ": gradients of float32 inputs");
                    v.add(t.grad().toFloatArray());
                }
                results.add(v);
            }
        }
        // both compute from the same rounded inputs; the math path also rounds its T x T intermediates
        double tol = low == DType.BFLOAT16 ? 3e-2 : 4e-3;
        for (int i = 0; i < results.get(0).size(); i++) {
            assertClose(results.get(0).get(i), results.get(1).get(i), tol, low + (i == 0 ? " output" : " gradient " + i));
        }
    }

    @ParameterizedTest
    @EnumSource(SDPBackend.class)
    void checkpointedTransformerBlockGradientsEqualThePlainOnesBitForBit(SDPBackend backend) {
        Generator gen = new Generator(5);
        try (SdpaKernel k = SdpaKernel.enable(backend);
             TransformerBlock blk = new TransformerBlock(dev, 24, 3, 0.1f, gen);
             Tensor x = dev.randn(new Generator(9), 2, 37, 24).requiresGrad(true)) {
            long seed = gen.state();
            List<float[]> plain = grads(blk, x, blk::forward);
            gen.setState(seed);
            List<float[]> ck = grads(blk, x, in -> Checkpoint.checkpoint(blk, in));
            assertEquals(plain.size(), ck.size());
            for (int i = 0; i < plain.size(); i++) {
                assertArrayEquals(plain.get(i), ck.get(i), 0f, backend + ": gradient " + i);
            }
        }
    }

    private List<float[]> grads(TransformerBlock blk, Tensor x, Function<Tensor, Tensor> forward) {
        blk.zeroGrad(true);
        x.setGrad(null);
        try (MemoryScope s = MemoryScope.open()) {
            forward.apply(x).sum().backward();
        }
        List<float[]> g = new ArrayList<>();
        blk.parameters().forEach(p -> g.add(p.grad().toFloatArray()));
        g.add(x.grad().toFloatArray());
        return g;
    }

    /** Bytes allocated with a GPT's loss computed (its graph alive), and the peak of forward plus backward. */
    static long[] stepMemory(Device d, SDPBackend backend, GPT.Config cfg, int batch) {
        try (SdpaKernel k = SdpaKernel.enable(backend); GPT gpt = new GPT(d, cfg, new Generator(1));
             MemoryScope s = MemoryScope.open()) {
            long[] ids = new long[batch * cfg.blockSize()];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = (i * 7L) % cfg.vocabSize();
            }
            Tensor tokens = d.tensor(ids, batch, cfg.blockSize());
            long base = d.memoryAllocated();
            d.allocator().resetPeakMemoryStats();
            Tensor logits = gpt.forward(tokens);
            Tensor loss = Functional.crossEntropy(logits, tokens);
            long afterForward = d.memoryAllocated() - base;
            loss.backward();
            return new long[] {afterForward, d.allocator().maxMemoryAllocated() - base};
        }
    }

    @Test
    void aTransformerStepNoLongerKeepsTheProbabilitiesAndPeaksLower() {
        // sizes in multiples of 512 bytes, so the allocator's rounding does not enter the expected difference
        int b = 2;
        int t = 64;
        GPT.Config cfg = new GPT.Config(16, t, 3, 2, 32, 0f);
        int h = cfg.nHead();
        try (Device sim = Device.open("sim:1GiB")) {
            long[] math = stepMemory(sim, SDPBackend.MATH, cfg, b);
            long[] fused = stepMemory(sim, SDPBackend.FLASH_ATTENTION, cfg, b);
            // per layer, math saves the probabilities [B, H, T, T] and the heads merged back into [B, T, C] (a copy,
            // c_proj's input; it frees its own product); the fused op saves the log-sum-exps [B, H, T] and its
            // output, which has PyTorch's [B, T, H, C / H] layout, so that merging the heads is a view of it and
            // c_proj saves that same storage
            long perLayer = 4L * b * h * t * t - 4L * b * h * t;
            assertEquals(cfg.nLayer() * perLayer, math[0] - fused[0], "saved for backward: math " + math[0]
                    + " bytes, fused " + fused[0]);
            assertTrue(fused[1] < math[1], "peak of a step: fused " + fused[1] + " bytes, math " + math[1]);
            // at least the probabilities of every layer less what the fused op saves instead
            assertTrue(math[1] - fused[1] >= cfg.nLayer() * perLayer, "peak difference " + (math[1] - fused[1]));
        }
    }

    /**
     * The fused op's output has PyTorch's flash-attention layout: {@code [B, H, T, d]} stored as {@code [B, T, H, d]},
     * so merging the heads back is a view of it (no copy for the next projection to save), with the math path's
     * values.
     */
    @Test
    void mergingTheHeadsOfTheFusedOutputIsAView() {
        int b = 2;
        int h = 3;
        int t = 5;
        int d = 4;
        float[] data = new float[b * h * t * d];
        for (int i = 0; i < data.length; i++) {
            data[i] = (float) Math.sin(i * 0.37);
        }
        try (MemoryScope s = MemoryScope.open()) {
            Tensor q = dev.tensor(data, b, h, t, d);
            Tensor k = q.mul(q);
            Tensor v = q.neg();
            Tensor fused;
            Tensor math;
            try (SdpaKernel f = SdpaKernel.enable(SDPBackend.FLASH_ATTENTION)) {
                fused = Functional.scaledDotProductAttention(q, k, v, true);
            }
            try (SdpaKernel m = SdpaKernel.enable(SDPBackend.MATH)) {
                math = Functional.scaledDotProductAttention(q, k, v, true);
            }
            assertArrayEquals(new long[] {(long) t * h * d, d, (long) h * d, 1}, fused.strides);
            Tensor merged = fused.transpose(1, 2).reshape(b, t, h * d);
            assertSame(fused.storage, merged.storage, "the heads merged back share the output's storage");
            float[] want = math.transpose(1, 2).reshape(b, t, h * d).toFloatArray();
            float[] got = merged.toFloatArray();
            for (int i = 0; i < want.length; i++) {
                assertEquals(want[i], got[i], 1e-5f, "element " + i);
            }
        }
    }

    /**
     * Float32 q, k and v split off one projection (narrow, view, transpose, as {@code CausalSelfAttention}) are read
     * in place: the forward allocates its output and lse only (no gathered copies of q, k, v, no scratch for the
     * strided output), the backward gives the three gradients as views of one tensor laid out as the projection, each
     * where its input lies (so the split's backward is a view of that tensor), with the values of the kernels on
     * contiguous copies.
     */
    @Test
    void float32HeadsSplitOffOneProjectionAreReadInPlace() {
        int b = 2;
        int t = 9;
        int h = 3;
        int d = 5;
        int c = h * d;
        Random r = new Random(17);
        try (MemoryScope s = MemoryScope.open()) {
            Tensor qkv = dev.tensor(random(r, new int[] {b, t, 3 * c}, 1f), b, t, 3 * c);
            Tensor[] in = new Tensor[3];
            for (int i = 0; i < 3; i++) {
                in[i] = qkv.narrow(2, i * c, c).view(b, t, h, d).transpose(1, 2);
            }
            CachingAllocatorProbe peak = new CachingAllocatorProbe(dev);
            Tensor out = FusedAttention.forward(in[0], in[1], in[2], true, 0.4f);
            long outBytes = (long) b * h * t * d * Float.BYTES;
            long lseBytes = (long) b * h * t * Float.BYTES;
            assertTrue(peak.rise() <= outBytes + lseBytes + 2 * 512, "forward peak " + peak.rise()
                    + " over the output and lse: q, k, v or the output were copied");
            assertArrayEquals(new long[] {(long) t * h * d, d, (long) h * d, 1}, out.strides);
            Tensor g = dev.tensor(random(r, new int[] {b, t, h, d}, 1f), b, t, h, d).transpose(1, 2);
            Tensor lse = Tensor.allocate(dev, DType.FLOAT32, new int[] {b, h, t});
            Tensor[] contiguous = {in[0].contiguous(), in[1].contiguous(), in[2].contiguous()};
            dev.kernels().attentionForward(b * h, t, d, 0.4f, true, contiguous[0].storage.kernelSegment(),
                    contiguous[0].offset, contiguous[1].storage.kernelSegment(), contiguous[1].offset,
                    contiguous[2].storage.kernelSegment(), contiguous[2].offset,
                    Tensor.allocate(dev, DType.FLOAT32, new int[] {b, h, t, d}).storage.kernelSegment(), 0,
                    lse.storage.kernelSegment(), lse.offset);
            Tensor[] got = BackwardOps.attentionBackward(g, in[0], in[1], in[2], out, lse, true, 0.4f);
            Tensor[] want = BackwardOps.attentionBackward(g.contiguous(), contiguous[0], contiguous[1], contiguous[2],
                    out.contiguous(), lse, true, 0.4f);
            for (int i = 0; i < 3; i++) {
                assertArrayEquals(in[i].strides, got[i].strides, "gradient " + i + " in q's layout");
                assertSame(got[0].storage, got[i].storage, "one tensor holds the three gradients");
                assertEquals(in[i].offset - in[0].offset, got[i].offset, "gradient " + i + " where its input lies");
                assertArrayEquals(want[i].toFloatArray(), got[i].toFloatArray(), "gradient " + i);
            }
            for (int i = 0; i < 3; i++) {
                got[i].close();
                want[i].close();
            }
        }
    }

    /** The rise of the allocated bytes' peak since it was made. */
    private static final class CachingAllocatorProbe {
        private final io.vram4j.alloc.CachingAllocator alloc;
        private final long base;

        CachingAllocatorProbe(Device dev) {
            alloc = dev.allocator();
            alloc.resetPeakMemoryStats();
            base = alloc.memoryAllocated();
        }

        long rise() {
            return alloc.maxMemoryAllocated() - base;
        }
    }

    @Test
    void simulatedAndHostDevicesAllocateAlikeOnTheFusedPath() {
        GPT.Config cfg = new GPT.Config(11, 20, 2, 2, 12, 0f);
        try (Device sim = Device.open("sim:1GiB")) {
            assertArrayEquals(stepMemory(dev, SDPBackend.FLASH_ATTENTION, cfg, 3),
                    stepMemory(sim, SDPBackend.FLASH_ATTENTION, cfg, 3));
        }
    }
}
