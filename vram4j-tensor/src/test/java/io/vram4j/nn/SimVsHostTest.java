package io.vram4j.nn;

import io.vram4j.compute.Kernels;
import java.lang.reflect.Proxy;
import io.vram4j.memory.stats.MemoryStats;
import io.vram4j.optim.AdamW;
import io.vram4j.optim.Optimizer;
import io.vram4j.optim.SGD;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import org.junit.jupiter.api.Test;

import java.util.function.BiFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The same program on host and on sim allocates identically, so sim predicts host memory without computing. */
class SimVsHostTest {

    interface Program {
        void run(Device dev);
    }

    private static MemoryStats statsOf(String spec, Program p) {
        try (Device dev = Device.open(spec)) {
            p.run(dev);
            assertEquals(0, dev.memoryAllocated(), "program leaked on " + spec);
            return dev.memoryStats();
        }
    }

    private static void train(Device dev, Module model, BiFunction<Module, Device, Tensor[]> batch, Optimizer opt, int steps) {
        for (int i = 0; i < steps; i++) {
            try (MemoryScope s = MemoryScope.open()) {
                Tensor[] xy = batch.apply(model, dev);
                Tensor loss = Functional.crossEntropy(model.forward(xy[0]), xy[1]);
                loss.backward();
                opt.step();
                opt.zeroGrad(true);
            }
        }
    }

    private static void mlp(Device dev) {
        Generator gen = new Generator(5);
        try (Sequential m = new Sequential(new Linear(dev, 32, 300, gen), new ReLU(), new Dropout(0.1f, gen),
                new Linear(dev, 300, 300, gen), new GELU(), new Linear(dev, 300, 10, gen));
             SGD opt = new SGD(m.parameters(), 0.1f, 0.9f, 1e-4f)) {
            long[] targets = new long[64];
            for (int i = 0; i < targets.length; i++) {
                targets[i] = i % 10;
            }
            train(dev, m, (mod, d) -> new Tensor[] {d.randn(gen, 64, 32), d.tensor(targets, 64)}, opt, 2);
        }
    }

    @Test
    void mlpForwardBackwardSgdStepHasTheSameMemoryStatsOnSimAndHost() {
        MemoryStats host = statsOf("host:1GiB", SimVsHostTest::mlp);
        MemoryStats sim = statsOf("sim:1GiB", SimVsHostTest::mlp);
        assertTrue(host.maxAllocatedBytes() > 1_000_000, "peak " + host.maxAllocatedBytes());
        assertEquals(host.maxAllocatedBytes(), sim.maxAllocatedBytes());
        assertEquals(host.maxReservedBytes(), sim.maxReservedBytes());
        assertEquals(host.asMap(), sim.asMap());
    }

    private static void gpt(Device dev) {
        Generator gen = new Generator(11);
        int b = 2;
        int t = 8;
        try (GPT m = new GPT(dev, new GPT.Config(50, 16, 2, 4, 32, 0.1f), gen); AdamW opt = new AdamW(m.parameters(), 1e-3f)) {
            long[] tok = new long[b * t];
            long[] next = new long[b * t];
            for (int i = 0; i < tok.length; i++) {
                tok[i] = (i * 7) % 50;
                next[i] = (i * 7 + 7) % 50;
            }
            train(dev, m, (mod, d) -> new Tensor[] {d.tensor(tok, b, t), d.tensor(next, b, t)}, opt, 2);
        }
    }

    @Test
    void transformerTrainingStepHasTheSameMemoryStatsOnSimAndHost() {
        MemoryStats host = statsOf("host:1GiB", SimVsHostTest::gpt);
        MemoryStats sim = statsOf("sim:1GiB", SimVsHostTest::gpt);
        assertEquals(host.maxAllocatedBytes(), sim.maxAllocatedBytes());
        assertEquals(host.maxReservedBytes(), sim.maxReservedBytes());
        assertEquals(host.asMap(), sim.asMap());
    }

    @Test
    void simPredictsAGpt2SmallTrainingStepWithoutComputing() {
        try (Device simDevice = Device.open("sim:A100-80GB:host")) {   // standing for host: no kernels run at all
            Device sim = simDevice.withKernels(kernelsThatThrow()); // any kernel call fails the test
            Generator gen = new Generator(0);
            int b = 2;
            int t = 1024;
            try (GPT m = new GPT(sim, new GPT.Config(50257, 1024, 12, 12, 768, 0.1f), gen);
                 AdamW opt = new AdamW(m.parameters(), 6e-4f)) {
                long params = m.parameterCount();
                assertEquals(124_439_808L + 768L * 50257, params, "GPT-2 small without weight tying");
                long weights = sim.memoryAllocated();
                assertTrue(weights >= params * 4);
                train(sim, m, (mod, d) -> new Tensor[] {d.empty(DType.INT64, b, t), d.empty(DType.INT64, b, t)}, opt, 1);
                // weights + AdamW moments stay; peak also held gradients and activations
                assertTrue(sim.memoryAllocated() >= 3 * params * 4);
                assertTrue(sim.allocator().maxMemoryAllocated() > 4 * params * 4);
                System.out.println("sim GPT-2 small, B=2, T=1024, AdamW: peak allocated "
                        + sim.allocator().maxMemoryAllocated() + " reserved " + sim.allocator().maxMemoryReserved());
                try (Tensor x = sim.ones(1)) {
                    assertThrows(UnsupportedOperationException.class, x::item);
                    assertThrows(UnsupportedOperationException.class, x::toFloatArray);
                }
            }
        }
    }

    /** Kernels whose every compute call throws: a device using them proves that nothing was computed. */
    private static Kernels kernelsThatThrow() {
        return (Kernels) Proxy.newProxyInstance(Kernels.class.getClassLoader(), new Class<?>[] {Kernels.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "name" -> "throwing";
                    case "threads" -> 1;
                    case "toString" -> "kernels that throw";
                    case "hashCode" -> System.identityHashCode(proxy);
                    case "equals" -> proxy == args[0];
                    default -> throw new AssertionError("sim computed: Kernels." + method.getName());
                });
    }

    @Test
    void tinyGptLearnsOnHost() {
        try (Device dev = Device.open("host:1GiB")) {
            Generator gen = new Generator(3);
            int b = 4;
            int t = 8;
            long[] tok = new long[b * t];
            long[] next = new long[b * t];
            for (int i = 0; i < tok.length; i++) {
                tok[i] = (i * 3) % 20;
                next[i] = (i * 3 + 3) % 20;
            }
            float first = 0;
            float last = 0;
            try (GPT m = new GPT(dev, new GPT.Config(20, 8, 2, 4, 32, 0.1f), gen); AdamW opt = new AdamW(m.parameters(), 6e-3f)) {
                m.eval();
                for (int i = 0; i < 25; i++) {
                    try (MemoryScope s = MemoryScope.open()) {
                        Tensor loss = Functional.crossEntropy(m.forward(dev.tensor(tok, b, t)), dev.tensor(next, b, t));
                        loss.backward();
                        opt.step();
                        opt.zeroGrad(true);
                        if (i == 0) {
                            first = loss.item();
                        }
                        last = loss.item();
                    }
                }
            }
            assertTrue(last < first / 5, first + " -> " + last);
            assertEquals(0, dev.memoryAllocated());
        }
    }
}
