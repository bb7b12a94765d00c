package io.vram4j.optim;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Update rules against step-by-step float64 transcriptions of torch.optim's algorithms. */
class OptimizerTest {
    Device dev;

    @BeforeEach
    void open() {
        dev = Device.open("host:64MiB");
    }

    @AfterEach
    void close() {
        assertEquals(0, dev.memoryAllocated());
        dev.close();
    }

    /** Gradients of f(p) = sum(c * p^2) / 2 are c * p. */
    static final float[] C = {1, -2, 0.5f, 3};

    private static void setGrad(Tensor p) {
        try (MemoryScope s = MemoryScope.open()) {
            float[] pv = p.toFloatArray();
            float[] g = new float[pv.length];
            for (int i = 0; i < g.length; i++) {
                g[i] = C[i] * pv[i];
            }
            p.setGrad(s.detach(p.device().tensor(g)));
        }
    }

    @Test
    void sgdWithMomentumAndWeightDecayMatchesTorch() {
        double lr = 0.1;
        double mom = 0.9;
        double wd = 0.01;
        double[] p = {1, 2, -1, 0.5};
        double[] buf = new double[4];
        try (Tensor t = dev.tensor(new float[] {1, 2, -1, 0.5f}).requiresGrad(true);
             SGD opt = new SGD(List.of(t), (float) lr, (float) mom, (float) wd)) {
            for (int step = 0; step < 5; step++) {
                setGrad(t);
                opt.step();
                for (int i = 0; i < 4; i++) {
                    double d = C[i] * p[i] + wd * p[i];
                    buf[i] = step == 0 ? d : mom * buf[i] + d;
                    p[i] -= lr * buf[i];
                }
                float[] got = t.toFloatArray();
                for (int i = 0; i < 4; i++) {
                    assertEquals(p[i], got[i], 1e-5, "step " + step + " element " + i);
                }
            }
            assertEquals(16, opt.stateBytes());
            opt.zeroGrad(true);
        }
    }

    @Test
    void adamWMatchesTorch() {
        double lr = 0.01;
        double b1 = 0.9;
        double b2 = 0.999;
        double eps = 1e-8;
        double wd = 0.1;
        double[] p = {1, 2, -1, 0.5};
        double[] m = new double[4];
        double[] v = new double[4];
        try (Tensor t = dev.tensor(new float[] {1, 2, -1, 0.5f}).requiresGrad(true);
             AdamW opt = new AdamW(List.of(t), (float) lr, (float) b1, (float) b2, (float) eps, (float) wd)) {
            for (int step = 1; step <= 6; step++) {
                setGrad(t);
                double[] g = new double[4];
                for (int i = 0; i < 4; i++) {
                    g[i] = C[i] * p[i];
                }
                opt.step();
                double bc1 = 1 - Math.pow(b1, step);
                double bc2 = 1 - Math.pow(b2, step);
                for (int i = 0; i < 4; i++) {
                    p[i] *= 1 - lr * wd;
                    m[i] = b1 * m[i] + (1 - b1) * g[i];
                    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
                    p[i] -= lr / bc1 * m[i] / (Math.sqrt(v[i]) / Math.sqrt(bc2) + eps);
                }
                float[] got = t.toFloatArray();
                for (int i = 0; i < 4; i++) {
                    assertEquals(p[i], got[i], 1e-5, "step " + step + " element " + i);
                }
            }
            assertEquals(6, opt.stepCount(t));
            assertEquals(32, opt.stateBytes());
            opt.zeroGrad(true);
        }
    }

    @Test
    void zeroGradSetToNoneFreesGradientMemory() {
        try (Tensor w = dev.zeros(1000).requiresGrad(true); SGD opt = new SGD(List.of(w), 0.1f)) {
            try (MemoryScope s = MemoryScope.open()) {
                w.mul(2f).sum().backward();
            }
            assertNotNull(w.grad());
            long with = dev.memoryAllocated();
            opt.zeroGrad(false);
            assertEquals(with, dev.memoryAllocated());
            try (Tensor sum = w.grad().sum()) {
                assertEquals(0f, sum.item());
            }
            opt.zeroGrad(true);
            assertNull(w.grad());
            assertEquals(with - 4096, dev.memoryAllocated());
        }
    }

    @Test
    void stateLivesInAllocatorMemoryAndParametersWithoutGradsAreSkipped() {
        try (Tensor a = dev.ones(256).requiresGrad(true); Tensor b = dev.ones(DType.BFLOAT16, 256).requiresGrad(true);
             AdamW opt = new AdamW(List.of(a, b), 0.1f)) {
            long before = dev.memoryAllocated();
            try (MemoryScope s = MemoryScope.open()) {
                a.mul(b).sum().backward();
                opt.step();
            }
            // grads (1024 + 512) and moments (2 x 1024 + 2 x 512)
            assertEquals(before + 1024 + 512 + 2048 + 1024, dev.memoryAllocated());
            opt.zeroGrad();
            opt.step();
            assertEquals(1, opt.stepCount(a));
            opt.close();
            assertEquals(before, dev.memoryAllocated());
            assertThrows(IllegalArgumentException.class, () -> new SGD(List.of(a), -1f));
        }
    }
}
