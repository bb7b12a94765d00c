package io.vram4j.train;

import io.vram4j.amp.Autocast;
import io.vram4j.amp.GradScaler;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Parameter;
import io.vram4j.nn.ReLU;
import io.vram4j.nn.Sequential;
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
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AccumulationTest {
    static final int BATCH = 32;
    static final int IN = 12;
    static final int CLASSES = 5;

    Device dev;
    Tensor x;
    Tensor y;

    @BeforeEach
    void open() {
        dev = Device.open("host:256MiB");
        Generator g = new Generator(21);
        x = dev.randn(g, BATCH, IN);
        long[] labels = new long[BATCH];
        for (int i = 0; i < BATCH; i++) {
            labels[i] = g.nextLong() >>> 1 & 0x7fffffff;
            labels[i] %= CLASSES;
        }
        y = dev.tensor(labels, BATCH);
    }

    @AfterEach
    void close() {
        x.close();
        y.close();
        assertEquals(0, dev.memoryAllocated(), "everything freed");
        dev.close();
    }

    private Sequential model() {
        Generator init = new Generator(8);
        return new Sequential(new Linear(dev, IN, 32, init), new ReLU(), new Linear(dev, 32, CLASSES, init));
    }

    private static Tensor loss(Sequential m, Tensor[] mb) {
        try (Tensor logits = m.forward(mb[0])) {
            return Functional.crossEntropy(logits, mb[1]);
        }
    }

    private static List<float[]> grads(Sequential m) {
        List<float[]> g = new ArrayList<>();
        for (Parameter p : m.parameters()) {
            g.add(p.grad().toFloatArray());
        }
        return g;
    }

    private static List<float[]> values(Sequential m) {
        List<float[]> g = new ArrayList<>();
        for (Parameter p : m.parameters()) {
            g.add(p.toFloatArray());
        }
        return g;
    }

    /**
     * Asserts the gradients agree within 1e-6 relative: per tensor, {@code ||a - e|| <= 1e-6 ||e||} (L2), and
     * per element {@code |a - e| <= 1e-6 |e|} plus 1e-6 of the tensor's largest magnitude (float32 sums in
     * another order differ by a few ulps, which for an element near 0 is a large relative error).
     */
    private static void assertClose(List<float[]> expected, List<float[]> actual) {
        for (int i = 0; i < expected.size(); i++) {
            float[] e = expected.get(i);
            float[] a = actual.get(i);
            assertEquals(e.length, a.length);
            float max = 0;
            double diff2 = 0;
            double norm2 = 0;
            for (int j = 0; j < e.length; j++) {
                max = Math.max(max, Math.abs(e[j]));
                diff2 += (double) (a[j] - e[j]) * (a[j] - e[j]);
                norm2 += (double) e[j] * e[j];
            }
            assertTrue(Math.sqrt(diff2) <= 1e-6 * Math.sqrt(norm2), "parameter " + i + ": relative L2 error "
                    + Math.sqrt(diff2 / norm2));
            for (int j = 0; j < e.length; j++) {
                double tol = 1e-6 * Math.abs(e[j]) + 1e-6 * max;
                assertTrue(Math.abs(e[j] - a[j]) <= tol, "parameter " + i + " element " + j + ": " + a[j] + " vs " + e[j]);
            }
        }
    }

    private List<float[]> bigBatchGrads(Sequential m) {
        m.zeroGrad(true);
        try (MemoryScope s = MemoryScope.open()) {
            loss(m, new Tensor[] {x, y}).backward();
        }
        return grads(m);
    }

    @Test
    void accumulatedGradientsEqualTheBigBatchGradients() {
        try (Sequential m = model(); SGD opt = new SGD(m.parameters(), 0.1f)) {
            List<float[]> big = bigBatchGrads(m);
            m.zeroGrad(true);
            GradientAccumulation acc = new GradientAccumulation(opt, 4);
            List<Tensor[]> parts = MicroBatcher.split(8, x, y);
            assertEquals(4, parts.size());
            List<float[]> before = values(m);
            for (int i = 0; i < 3; i++) {
                try (MemoryScope s = MemoryScope.open()) {
                    assertFalse(acc.backward(loss(m, parts.get(i))));
                }
            }
            assertEquals(3, acc.pending());
            assertClose(big, gradsAfterLast(m, parts.get(3)));
            // the fourth call steps: the update equals one SGD step with the big-batch gradients
            try (MemoryScope s = MemoryScope.open()) {
                assertTrue(acc.backward(loss(m, parts.get(3))));
            }
            assertEquals(0, acc.pending());
            assertEquals(1, acc.optimizerSteps());
            for (Parameter p : m.parameters()) {
                assertEquals(null, p.grad(), "gradients cleared after the step");
            }
            List<float[]> expected = new ArrayList<>();
            for (int i = 0; i < before.size(); i++) {
                float[] v = before.get(i).clone();
                for (int j = 0; j < v.length; j++) {
                    v[j] -= 0.1f * big.get(i)[j];
                }
                expected.add(v);
            }
            assertClose(expected, values(m));
            for (Tensor[] mb : parts) {
                mb[0].close();
                mb[1].close();
            }
        }
    }

    /** The gradients once the last micro-batch is added, read without stepping (backward on a copy of the state). */
    private List<float[]> gradsAfterLast(Sequential m, Tensor[] last) {
        List<float[]> saved = grads(m);
        try (MemoryScope s = MemoryScope.open()) {
            loss(m, last).div(4f).backward();
        }
        List<float[]> g = grads(m);
        // restore the three-micro-batch gradients
        List<Parameter> ps = m.parameters();
        for (int i = 0; i < ps.size(); i++) {
            ps.get(i).setGrad(dev.tensor(saved.get(i), ps.get(i).shape()));
        }
        return g;
    }

    @Test
    void microBatcherWeightsUnevenMicroBatches() {
        try (Sequential m = model()) {
            List<float[]> big = bigBatchGrads(m);
            float bigLoss;
            try (MemoryScope s = MemoryScope.open()) {
                bigLoss = loss(m, new Tensor[] {x, y}).item();
            }
            m.zeroGrad(true);
            assertEquals(4, MicroBatcher.count(BATCH, 9));
            float mbLoss = MicroBatcher.accumulate(9, mb -> loss(m, mb), x, y);   // 9, 9, 9, 5 rows
            assertEquals(bigLoss, mbLoss, 1e-6 * Math.abs(bigLoss));
            assertClose(big, grads(m));
            m.zeroGrad(true);
        }
    }

    @Test
    void microBatchingLowersPeakActivationMemory() {
        // activations dominate: 2048 rows through 64-wide layers
        int batch = 2048;
        try (Sequential m = new Sequential(new Linear(dev, 64, 64, new Generator(1)), new ReLU(),
                new Linear(dev, 64, 64, new Generator(2)), new ReLU(), new Linear(dev, 64, 4, new Generator(3)));
             Tensor xb = dev.randn(new Generator(4), batch, 64); Tensor yb = dev.tensor(new long[batch], batch)) {
            long gradBytes = 4 * m.parameterCount();
            long big = peak(m, () -> {
                try (MemoryScope s = MemoryScope.open()) {
                    loss(m, new Tensor[] {xb, yb}).backward();
                }
            }) - gradBytes;
            long micro = peak(m, () -> MicroBatcher.accumulate(batch / 4, mb -> loss(m, mb), xb, yb)) - gradBytes;
            assertTrue(micro < 0.35 * big, "activation peak with 4 micro-batches " + micro + " vs " + big);
            m.zeroGrad(true);
        }
    }

    private long peak(Sequential m, Runnable step) {
        m.zeroGrad(true);
        long base = dev.memoryAllocated();
        dev.allocator().resetPeakMemoryStats();
        step.run();
        return dev.allocator().maxMemoryAllocated() - base;
    }

    @Test
    void accumulationWithAGradScalerUnscalesOnce() {
        try (Sequential m = model(); Sequential ref = model(); SGD opt = new SGD(m.parameters(), 0.1f);
             SGD refOpt = new SGD(ref.parameters(), 0.1f)) {
            GradScaler scaler = new GradScaler();
            GradientAccumulation acc = new GradientAccumulation(opt, 2, scaler);
            GradientAccumulation plain = new GradientAccumulation(refOpt, 2);
            List<Tensor[]> parts = MicroBatcher.split(16, x, y);
            for (Tensor[] mb : parts) {
                try (MemoryScope s = MemoryScope.open()) {
                    acc.backward(loss(m, mb));
                    plain.backward(loss(ref, mb));
                }
                mb[0].close();
                mb[1].close();
            }
            assertEquals(1, scaler.steps());
            assertFalse(scaler.lastStepSkipped());
            List<float[]> a = values(m);
            List<float[]> b = values(ref);
            for (int i = 0; i < a.size(); i++) {
                assertArrayEquals(b.get(i), a.get(i), 0f, "scaling by 2^16 and back is exact");
            }
        }
    }

    @Test
    void float16AutocastAccumulationRunsInMixedPrecision() {
        try (Sequential m = model(); SGD opt = new SGD(m.parameters(), 0.1f)) {
            GradScaler scaler = new GradScaler();
            float loss = MicroBatcher.accumulate(8, mb -> {
                try (Autocast ac = Autocast.enable(DType.FLOAT16)) {
                    Tensor l = loss(m, mb);
                    assertEquals(DType.FLOAT32, l.dtype());
                    return l;
                }
            }, scaler, x, y);
            assertTrue(Float.isFinite(loss));
            for (Parameter p : m.parameters()) {
                assertEquals(DType.FLOAT32, p.grad().dtype());
            }
            assertTrue(scaler.step(opt));
            scaler.update();
            opt.zeroGrad();
        }
    }

    @Test
    void allTechniquesTogetherAllocateAlikeOnSimAndHost() {
        long host = combinedStepPeak(dev);
        try (Device sim = Device.open("sim:256MiB")) {
            assertEquals(host, combinedStepPeak(sim), "a dry run predicts the real peak");
        }
    }

    /** One SGD step with momentum: float16 autocast, GradScaler, 2 micro-batches, each checkpointed in 2 segments. */
    private static long combinedStepPeak(Device d) {
        Generator init = new Generator(5);
        try (Sequential m = new Sequential(new Linear(d, IN, 32, init), new ReLU(), new Linear(d, 32, 32, init), new ReLU(),
                new Linear(d, 32, CLASSES, init)); SGD opt = new SGD(m.parameters(), 0.1f, 0.9f, 0f);
             Tensor xb = d.zeros(BATCH, IN); Tensor yb = d.tensor(new long[BATCH], BATCH)) {
            GradScaler scaler = new GradScaler();
            long base = d.memoryAllocated();
            d.allocator().resetPeakMemoryStats();
            MicroBatcher.accumulate(BATCH / 2, mb -> {
                try (Autocast ac = Autocast.enable(DType.FLOAT16);
                     Tensor logits = Checkpoint.checkpointSequential(m, 2, mb[0])) {
                    return Functional.crossEntropy(logits, mb[1]);
                }
            }, scaler, xb, yb);
            scaler.step(opt);
            scaler.update();
            opt.zeroGrad();
            return d.allocator().maxMemoryAllocated() - base;
        }
    }

    @Test
    void badArgumentsAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> MicroBatcher.split(0, x));
        try (Tensor z = dev.zeros(31)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> MicroBatcher.split(8, x, z));
            assertTrue(e.getMessage().contains("32 and 31"), e.getMessage());
        }
        try (SGD opt = new SGD(List.of(x), 0.1f)) {
            assertThrows(IllegalArgumentException.class, () -> new GradientAccumulation(opt, 0));
        }
    }
}
