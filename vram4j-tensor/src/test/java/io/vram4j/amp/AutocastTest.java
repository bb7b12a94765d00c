package io.vram4j.amp;

import io.vram4j.autograd.GradCheck;
import io.vram4j.autograd.NoGrad;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Module;
import io.vram4j.nn.Parameter;
import io.vram4j.nn.TransformerBlock;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import io.vram4j.train.Checkpoint;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AutocastTest {
    Device dev;

    @BeforeEach
    void open() {
        dev = Device.open("host:256MiB");
    }

    @AfterEach
    void close() {
        assertEquals(0, Autocast.cachedCasts());
        assertFalse(Autocast.isEnabled());
        assertEquals(0, dev.memoryAllocated(), "everything freed");
        dev.close();
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"FLOAT16", "BFLOAT16"})
    void opsRunInTheirPolicyDtype(DType low) {
        Generator g = new Generator(1);
        try (MemoryScope s = MemoryScope.open(); Linear fc = new Linear(dev, 8, 6, g)) {
            Tensor x = dev.randn(g, 4, 8);
            Tensor w = dev.randn(g, 8, 8);
            Tensor t = dev.tensor(new int[] {1, 0, 3, 5}, 4);
            try (Autocast ac = Autocast.enable(low)) {
                assertTrue(Autocast.isEnabled());
                assertEquals(low, Autocast.dtype());
                // lower precision: matrix products and linear layers
                Tensor mm = x.matmul(w);
                assertEquals(low, mm.dtype());
                Tensor y = fc.forward(x);
                assertEquals(low, y.dtype());
                Tensor att = Functional.scaledDotProductAttention(x.unsqueeze(0), x.unsqueeze(0), x.unsqueeze(0), true);
                assertEquals(low, att.dtype());
                // float32: softmax, log-softmax, layer norm, losses, reductions, exp, log
                assertEquals(DType.FLOAT32, y.softmax().dtype());
                assertEquals(DType.FLOAT32, y.logSoftmax().dtype());
                assertEquals(DType.FLOAT32, Functional.layerNorm(y, null, null, 1e-5f).dtype());
                assertEquals(DType.FLOAT32, Functional.crossEntropy(y, t).dtype());
                assertEquals(DType.FLOAT32, Functional.nllLoss(y, t, -100).dtype());
                assertEquals(DType.FLOAT32, y.sum().dtype());
                assertEquals(DType.FLOAT32, y.mean(0, false).dtype());
                assertEquals(DType.FLOAT32, y.exp().dtype());
                assertEquals(DType.FLOAT32, y.log().dtype());
                // ops not in the table keep their input dtype; element-wise ops promote to the widest input
                assertEquals(low, y.relu().dtype());
                assertEquals(low, y.gelu().dtype());
                assertEquals(low, y.add(y).dtype());
                Tensor f32 = dev.ones(4, 6);
                assertEquals(DType.FLOAT32, y.mul(f32).dtype());
                assertEquals(DType.FLOAT32, f32.add(y).dtype());
                DType other = low == DType.FLOAT16 ? DType.BFLOAT16 : DType.FLOAT16;
                assertEquals(DType.FLOAT32, y.add(y.to(other)).dtype(), "float16 with bfloat16 promotes to float32");
                // parameters stay float32 (master weights)
                assertEquals(DType.FLOAT32, fc.weight().dtype());
            }
            assertEquals(DType.FLOAT32, x.matmul(w).dtype(), "after the region ops run in their input dtype");
        }
    }

    @Test
    void regionsNestAndDisabledRegionsRunInInputDtypes() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor a = dev.ones(2, 2);
            try (Autocast outer = Autocast.enable(DType.BFLOAT16)) {
                assertEquals(DType.BFLOAT16, a.matmul(a).dtype());
                try (Autocast off = Autocast.disable()) {
                    assertFalse(Autocast.isEnabled());
                    assertEquals(DType.BFLOAT16, Autocast.dtype(), "a disabled region keeps the dtype");
                    assertEquals(DType.FLOAT32, a.matmul(a).dtype());
                    try (Autocast inner = Autocast.enable(DType.FLOAT16)) {
                        assertEquals(DType.FLOAT16, a.matmul(a).dtype());
                    }
                    assertEquals(DType.FLOAT32, a.matmul(a).dtype());
                }
                assertEquals(DType.BFLOAT16, a.matmul(a).dtype());
            }
            assertFalse(Autocast.isEnabled());
            assertEquals(DType.FLOAT32, a.matmul(a).dtype());
        }
    }

    @Test
    void onlyHalfTypesAreAutocastTypes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Autocast.enable(DType.FLOAT32));
        assertTrue(e.getMessage().contains("float16 or bfloat16"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Autocast.enable(DType.INT64));
        assertFalse(Autocast.isEnabled());
    }

    @Test
    void weightCastsAreCachedUntilTheOutermostRegionCloses() {
        Generator g = new Generator(2);
        try (Linear fc = new Linear(dev, 64, 64, g); MemoryScope s = MemoryScope.open()) {
            Tensor x = dev.randn(g, 2, 64);
            long before;
            try (Autocast ac = Autocast.enable(DType.BFLOAT16)) {
                fc.forward(x).close();
                assertEquals(2, Autocast.cachedCasts(), "weight and bias");
                before = dev.memoryAllocated();
                try (Autocast inner = Autocast.enable(DType.BFLOAT16)) {
                    fc.forward(x).close();
                }
                assertEquals(2, Autocast.cachedCasts(), "reused, kept after the inner region");
                assertEquals(before, dev.memoryAllocated(), "no new weight copy");
                try (NoGrad ng = NoGrad.enter()) {
                    fc.forward(x).close();
                }
                assertEquals(4, Autocast.cachedCasts(), "copies made without grad are cached apart");
            }
            assertEquals(0, Autocast.cachedCasts());
        }
    }

    private static List<float[]> grads(Module m) {
        List<float[]> out = new ArrayList<>();
        for (Parameter p : m.parameters()) {
            assertEquals(DType.FLOAT32, p.grad().dtype(), "gradients of float32 parameters are float32");
            out.add(p.grad().toFloatArray());
        }
        return out;
    }

    private List<float[]> run(Module m, Tensor x, DType low, Function<Tensor, Tensor> forward, boolean backwardInside) {
        m.zeroGrad(true);
        try (MemoryScope s = MemoryScope.open()) {
            Tensor loss;
            try (Autocast ac = low == null ? null : Autocast.enable(low)) {
                loss = forward.apply(x).mean();
                if (backwardInside) {
                    loss.backward();
                }
            }
            if (!backwardInside) {
                loss.backward();
            }
        }
        return grads(m);
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"FLOAT16", "BFLOAT16"})
    void gradientsFlowBackToFloat32ParametersAndApproximateFloat32(DType low) {
        Generator g = new Generator(3);
        try (TransformerBlock blk = new TransformerBlock(dev, 32, 4, 0f, g);
             Tensor x = dev.randn(new Generator(4), 2, 8, 32)) {
            List<float[]> ref = run(blk, x, null, blk::forward, false);
            List<float[]> amp = run(blk, x, low, blk::forward, false);
            double tol = low == DType.BFLOAT16 ? 0.05 : 0.01;
            for (int i = 0; i < ref.size(); i++) {
                assertArrayEquals(ref.get(i), amp.get(i), (float) (tol * maxAbs(ref.get(i)) + 1e-6), "parameter " + i);
            }
            // backward inside the region runs its ops in the forward dtypes (autocast is suspended)
            List<float[]> inside = run(blk, x, low, blk::forward, true);
            for (int i = 0; i < amp.size(); i++) {
                assertArrayEquals(amp.get(i), inside.get(i), 0f, "parameter " + i);
            }
            blk.zeroGrad(true);
        }
    }

    private static float maxAbs(float[] v) {
        float m = 0;
        for (float f : v) {
            m = Math.max(m, Math.abs(f));
        }
        return m;
    }

    @Test
    void checkpointRecomputesUnderTheForwardAutocastState() {
        Generator g = new Generator(5);
        try (TransformerBlock blk = new TransformerBlock(dev, 32, 4, 0.2f, g);
             Tensor x = dev.randn(new Generator(6), 2, 8, 32)) {
            long seed = g.state();
            List<float[]> plain = run(blk, x, DType.BFLOAT16, blk::forward, false);
            g.setState(seed);
            List<float[]> ck = run(blk, x, DType.BFLOAT16, in -> Checkpoint.checkpoint(blk, in), false);
            for (int i = 0; i < plain.size(); i++) {
                assertArrayEquals(plain.get(i), ck.get(i), 0f, "parameter " + i + " bitwise");
            }
            blk.zeroGrad(true);
        }
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"FLOAT16", "BFLOAT16"})
    void castGradientChecks(DType low) {
        // values on a 1/8 grid are exact in both half types, so the numeric derivative is exact; the analytic
        // one is rounded to the half type on its way back through the casts (CastBackward casts the gradient)
        double tol = low == DType.FLOAT16 ? 2e-3 : 1.6e-2;
        float[] v = {0.125f, -1.5f, 2.25f, 0.75f, -0.375f, 3f};
        try (Tensor x = dev.tensor(v, 2, 3).requiresGrad(true)) {
            GradCheck.check(in -> {
                try (Tensor h = in[0].to(low); Tensor sq = h.mul(h)) {
                    return sq.to(DType.FLOAT32);
                }
            }, 0.125, 1e-4, tol, x);
        }
    }

    @Test
    void linearUnderAutocastGradientCheck() {
        Generator g = new Generator(8);
        try (Tensor x = dev.randn(g, 3, 4).requiresGrad(true); Tensor w = dev.randn(g, 5, 4).requiresGrad(true);
             Tensor b = dev.randn(g, 5).requiresGrad(true)) {
            // linear is affine in each argument: wide steps are exact up to float16 rounding of the output
            GradCheck.check(in -> {
                try (Autocast ac = Autocast.enable(DType.FLOAT16); Tensor y = Functional.linear(in[0], in[1], in[2])) {
                    return y.to(DType.FLOAT32);
                }
            }, 0.5, 5e-3, 1e-2, x, w, b);
        }
    }

    @Test
    void autocastWorksOnSimulatedDevicesWithTheSameAllocations() {
        long hostPeak = peakOf(dev);
        try (Device sim = Device.open("sim:256MiB")) {
            assertEquals(hostPeak, peakOf(sim));
        }
    }

    private static long peakOf(Device d) {
        Generator g = new Generator(9);
        try (TransformerBlock blk = new TransformerBlock(d, 32, 4, 0f, g); MemoryScope s = MemoryScope.open()) {
            Tensor x = d.zeros(2, 8, 32);
            d.allocator().resetPeakMemoryStats();
            try (Autocast ac = Autocast.enable(DType.BFLOAT16)) {
                Tensor y = blk.forward(x);
                assertEquals(DType.FLOAT32, y.dtype(), "the float32 residual stream promotes the block's output");
                y.mean().backward();
            }
            assertNull(x.grad());
            return d.allocator().maxMemoryAllocated();
        }
    }
}
