package io.vram4j.amp;

import io.vram4j.autograd.NoGrad;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Parameter;
import io.vram4j.optim.SGD;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GradScalerTest {
    Device dev;

    @BeforeEach
    void open() {
        dev = Device.open("host:64MiB");
    }

    @AfterEach
    void close() {
        assertEquals(0, dev.memoryAllocated(), "everything freed");
        dev.close();
    }

    /** Forward + backward of a mean squared output, the loss optionally scaled. */
    private static void backward(Linear fc, Tensor x, GradScaler scaler) {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor y = fc.forward(x);
            Tensor loss = y.mul(y).mean();
            (scaler == null ? loss : scaler.scale(loss)).backward();
        }
    }

    private static List<float[]> grads(Linear fc) {
        List<float[]> g = new ArrayList<>();
        for (Parameter p : fc.parameters()) {
            g.add(p.grad().toFloatArray());
        }
        return g;
    }

    private static List<float[]> values(Linear fc) {
        List<float[]> g = new ArrayList<>();
        for (Parameter p : fc.parameters()) {
            g.add(p.toFloatArray());
        }
        return g;
    }

    @Test
    void defaultsAreTorchs() {
        GradScaler s = new GradScaler();
        assertEquals(65536f, s.getScale());
        assertEquals(2.0f, s.getGrowthFactor());
        assertEquals(0.5f, s.getBackoffFactor());
        assertEquals(2000, s.getGrowthInterval());
        assertEquals(0, s.getGrowthTracker());
        assertTrue(s.isEnabled());
    }

    @Test
    void scaleMultipliesAndUnscaleDividesGradientsExactly() {
        Generator g = new Generator(1);
        try (Linear fc = new Linear(dev, 6, 3, g); Tensor x = dev.randn(g, 4, 6); SGD opt = new SGD(fc.parameters(), 0.1f)) {
            backward(fc, x, null);
            List<float[]> ref = grads(fc);
            fc.zeroGrad(true);
            GradScaler scaler = new GradScaler();
            try (Tensor loss = dev.scalar(3f); Tensor scaled = scaler.scale(loss)) {
                assertEquals(3f * 65536f, scaled.item());
            }
            backward(fc, x, scaler);
            List<float[]> scaled = grads(fc);
            for (int i = 0; i < ref.size(); i++) {
                for (int j = 0; j < ref.get(i).length; j++) {
                    assertEquals(ref.get(i)[j] * 65536f, scaled.get(i)[j], "scaled gradient");
                }
            }
            scaler.unscale(opt);
            List<float[]> unscaled = grads(fc);
            for (int i = 0; i < ref.size(); i++) {
                assertArrayEquals(ref.get(i), unscaled.get(i), 0f, "unscaled gradient equals the unscaled run bitwise");
            }
            IllegalStateException twice = assertThrows(IllegalStateException.class, () -> scaler.unscale(opt));
            assertEquals("unscale_() has already been called on this optimizer since the last update().", twice.getMessage());
            assertTrue(scaler.step(opt), "finite gradients: the step runs");
            assertFalse(scaler.lastStepSkipped());
            IllegalStateException again = assertThrows(IllegalStateException.class, () -> scaler.step(opt));
            assertEquals("step() has already been called since the last update().", again.getMessage());
            assertThrows(IllegalStateException.class, () -> scaler.unscale(opt));
            scaler.update();
            assertEquals(65536f, scaler.getScale());
            assertEquals(1, scaler.getGrowthTracker());
            fc.zeroGrad(true);
        }
    }

    @Test
    void stepWithInfOrNanGradientsIsSkippedAndTheScaleBacksOff() {
        Generator g = new Generator(2);
        try (Linear fc = new Linear(dev, 5, 2, g); Tensor x = dev.randn(g, 3, 5);
             SGD opt = new SGD(fc.parameters(), 0.1f, 0.9f, 0f)) {
            GradScaler scaler = new GradScaler();
            for (float bad : new float[] {Float.POSITIVE_INFINITY, Float.NaN}) {
                backward(fc, x, scaler);
                try (NoGrad ng = NoGrad.enter(); Tensor one = dev.full(DType.FLOAT32, bad, 1);
                     Tensor slot = fc.bias().grad().narrow(0, 1, 1)) {
                    slot.copyFrom(one);
                }
                List<float[]> before = values(fc);
                float scale = scaler.getScale();
                assertFalse(scaler.step(opt), "skipped");
                assertTrue(scaler.lastStepSkipped());
                for (int i = 0; i < before.size(); i++) {
                    assertArrayEquals(before.get(i), values(fc).get(i), 0f, "parameters unchanged");
                }
                assertEquals(0, opt.stateBytes(), "no momentum buffer created by a skipped step");
                scaler.update();
                assertEquals(scale * 0.5f, scaler.getScale(), "backoff");
                assertEquals(0, scaler.getGrowthTracker());
                fc.zeroGrad(true);
            }
            assertEquals(2, scaler.skippedSteps());
            backward(fc, x, scaler);
            assertTrue(scaler.step(opt));
            assertTrue(opt.stateBytes() > 0);
            assertEquals(3, scaler.steps());
            scaler.update();
            fc.zeroGrad(true);
        }
    }

    @Test
    void theScaleGrowsAfterGrowthIntervalCleanSteps() {
        try (Tensor p = dev.ones(1).requiresGrad(true); SGD opt = new SGD(List.of(p), 0f)) {
            GradScaler scaler = new GradScaler();
            for (int i = 1; i <= 4000; i++) {
                p.setGrad(dev.ones(1));
                scaler.step(opt);
                scaler.update();
                if (i == 1999) {
                    assertEquals(65536f, scaler.getScale());
                    assertEquals(1999, scaler.getGrowthTracker());
                }
                if (i == 2000) {
                    assertEquals(131072f, scaler.getScale(), "grown after 2000 clean steps");
                    assertEquals(0, scaler.getGrowthTracker());
                }
            }
            assertEquals(262144f, scaler.getScale());
            // an inf step resets the tracker: the next growth needs another full interval
            p.setGrad(dev.full(DType.FLOAT32, Float.POSITIVE_INFINITY, 1));
            scaler.step(opt);
            scaler.update();
            assertEquals(131072f, scaler.getScale());
        }
    }

    @Test
    void growthThatWouldOverflowIsNotApplied() {
        try (Tensor p = dev.ones(1).requiresGrad(true); SGD opt = new SGD(List.of(p), 0f)) {
            GradScaler scaler = new GradScaler(Float.MAX_VALUE / 1.5f, 2f, 0.5f, 1, true);
            p.setGrad(dev.ones(1));
            scaler.step(opt);
            scaler.update();
            assertEquals(Float.MAX_VALUE / 1.5f, scaler.getScale());
            assertEquals(0, scaler.getGrowthTracker());
        }
    }

    @Test
    void misuseIsReportedWithTorchsMessages() {
        GradScaler scaler = new GradScaler();
        IllegalStateException e = assertThrows(IllegalStateException.class, scaler::update);
        assertEquals("No inf checks were recorded prior to update.", e.getMessage());
        try (Tensor p = dev.ones(2).requiresGrad(true); SGD opt = new SGD(List.of(p), 0.1f)) {
            p.setGrad(dev.ones(DType.FLOAT16, 2));
            IllegalArgumentException f = assertThrows(IllegalArgumentException.class, () -> scaler.unscale(opt));
            assertEquals("Attempting to unscale FP16 gradients.", f.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> new GradScaler(65536f, 1f, 0.5f, 2000, true));
        assertThrows(IllegalArgumentException.class, () -> new GradScaler(65536f, 2f, 1f, 2000, true));
        assertThrows(IllegalArgumentException.class, () -> new GradScaler(65536f, 2f, 0.5f, 0, true));
        assertThrows(IllegalArgumentException.class, () -> new GradScaler(0f, 2f, 0.5f, 2000, true));
    }

    @Test
    void stateDictRoundTripsAndRejectsBadInput() {
        GradScaler a = new GradScaler(1024f, 4f, 0.25f, 10, true);
        try (Tensor p = dev.ones(1).requiresGrad(true); SGD opt = new SGD(List.of(p), 0f)) {
            for (int i = 0; i < 3; i++) {
                p.setGrad(dev.ones(1));
                a.step(opt);
                a.update();
            }
        }
        Map<String, Object> sd = a.stateDict();
        assertEquals(List.of("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"),
                new ArrayList<>(sd.keySet()));
        assertEquals(3, sd.get("_growth_tracker"));
        GradScaler b = new GradScaler();
        b.loadStateDict(sd);
        assertEquals(sd, b.stateDict());
        assertEquals(1024f, b.getScale());

        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> b.loadStateDict(Map.of()));
        assertTrue(empty.getMessage().contains("disabled instance"), empty.getMessage());
        Map<String, Object> missing = new HashMap<>(sd);
        missing.remove("growth_interval");
        IllegalArgumentException m = assertThrows(IllegalArgumentException.class, () -> b.loadStateDict(missing));
        assertTrue(m.getMessage().contains("'growth_interval'"), m.getMessage());
        Map<String, Object> wrong = new HashMap<>(sd);
        wrong.put("scale", "big");
        IllegalArgumentException w = assertThrows(IllegalArgumentException.class, () -> b.loadStateDict(wrong));
        assertTrue(w.getMessage().contains("'scale' must be a number"), w.getMessage());
        Map<String, Object> negative = new HashMap<>(sd);
        negative.put("scale", -1.0);
        assertThrows(IllegalArgumentException.class, () -> b.loadStateDict(negative));
        assertEquals(sd, b.stateDict(), "a rejected state dict changes nothing");
    }

    @Test
    void aDisabledScalerPassesThrough() {
        GradScaler off = new GradScaler(65536f, 2f, 0.5f, 2000, false);
        assertEquals(1f, off.getScale());
        assertTrue(off.stateDict().isEmpty());
        off.loadStateDict(Map.of());
        off.update();
        try (Tensor p = dev.ones(1).requiresGrad(true); SGD opt = new SGD(List.of(p), 0.5f);
             Tensor loss = dev.scalar(2f); Tensor same = off.scale(loss)) {
            assertEquals(2f, same.item());
            p.setGrad(dev.full(DType.FLOAT32, Float.POSITIVE_INFINITY, 1));
            assertTrue(off.step(opt), "no inf check when disabled");
        }
    }

    @Test
    void float16TrainingWithTheScalerLearns() {
        Generator g = new Generator(4);
        try (Linear fc = new Linear(dev, 8, 4, g); SGD opt = new SGD(fc.parameters(), 0.5f);
             Tensor x = dev.randn(g, 32, 8); Tensor t = dev.tensor(new long[32], 32)) {
            long[] labels = new long[32];
            float[] xv = x.toFloatArray();
            for (int i = 0; i < 32; i++) {
                labels[i] = xv[i * 8] > 0 ? (xv[i * 8 + 1] > 0 ? 0 : 1) : (xv[i * 8 + 1] > 0 ? 2 : 3);
            }
            GradScaler scaler = new GradScaler();
            float first = Float.NaN;
            float last = Float.NaN;
            try (Tensor y = dev.tensor(labels, 32)) {
                for (int step = 0; step < 60; step++) {
                    try (MemoryScope s = MemoryScope.open()) {
                        Tensor loss;
                        try (Autocast ac = Autocast.enable(DType.FLOAT16)) {
                            loss = Functional.crossEntropy(fc.forward(x), y);
                        }
                        assertEquals(DType.FLOAT32, loss.dtype());
                        scaler.scale(loss).backward();
                        scaler.step(opt);
                        scaler.update();
                        opt.zeroGrad();
                        last = loss.item();
                        if (step == 0) {
                            first = last;
                        }
                    }
                }
            }
            assertEquals(DType.FLOAT32, fc.weight().dtype());
            assertTrue(last < 0.6 * first, "loss " + first + " -> " + last);
        }
    }
}
