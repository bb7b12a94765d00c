package io.vram4j.nn;

import io.vram4j.optim.AdamW;
import io.vram4j.optim.Optimizer;
import io.vram4j.optim.SGD;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import org.junit.jupiter.api.Test;

import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LearningTest {

    private static float[] train(Function<Sequential, Optimizer> opt, int steps) {
        try (Device dev = Device.open("host:256MiB")) {
            Generator gen = new Generator(42);
            float first;
            float last;
            try (Sequential mlp = new Sequential(new Linear(dev, 2, 16, gen), new ReLU(), new Linear(dev, 16, 2, gen));
                 Optimizer o = opt.apply(mlp);
                 Tensor x = dev.tensor(new float[] {0, 0, 0, 1, 1, 0, 1, 1}, 4, 2);
                 Tensor y = dev.tensor(new long[] {0, 1, 1, 0}, 4)) {
                first = Float.NaN;
                last = Float.NaN;
                for (int i = 0; i < steps; i++) {
                    try (MemoryScope s = MemoryScope.open()) {
                        Tensor logits = mlp.forward(x);
                        Tensor loss = Functional.crossEntropy(logits, y);
                        loss.backward();
                        o.step();
                        o.zeroGrad(true);
                        if (i == 0) {
                            first = loss.item();
                        }
                        last = loss.item();
                    }
                }
            }
            assertEquals(0, dev.memoryAllocated());
            return new float[] {first, last};
        }
    }

    @Test
    void xorWithSgd() {
        float[] l = train(m -> new SGD(m.parameters(), 0.5f, 0.9f, 0f), 300);
        assertTrue(l[1] < l[0] / 20, "loss " + l[0] + " -> " + l[1]);
    }

    @Test
    void xorWithAdamW() {
        float[] l = train(m -> new AdamW(m.parameters(), 0.05f), 300);
        assertTrue(l[1] < l[0] / 20, "loss " + l[0] + " -> " + l[1]);
    }
}
