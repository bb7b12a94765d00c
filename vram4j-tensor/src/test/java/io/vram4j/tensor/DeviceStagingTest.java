package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.amp.Autocast;
import io.vram4j.compute.Kernels;
import io.vram4j.nn.Dropout;
import io.vram4j.nn.GPT;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Module;
import io.vram4j.nn.ReLU;
import io.vram4j.nn.Sequential;
import io.vram4j.optim.AdamW;
import io.vram4j.optim.Optimizer;
import io.vram4j.optim.SGD;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The acceptance test of issue 10's device paths: one training step on device memory (an {@link OpaqueDevice} with
 * {@link OpaqueKernels}, as a GPU's memory and kernels) copies to the host only what the user asks for, the loss's
 * {@code item()}, copies nothing to the device (the batch is already there), reads no value back from a kernel, and
 * launches as many kernels at batch 16 as at batch 8 (no op launches once per element or per row), and updates
 * the parameters with one fused optimizer call. For the default
 * MLP (784-512-512-10, here with dropout after each ReLU) under SGD with momentum and AdamW, in float32 and under
 * bfloat16 autocast, and for a tiny GPT (embeddings, layer norm, causal attention, GELU, dropout) under AdamW.
 */
class DeviceStagingTest {

    /** What a step asked of the device: copies each way and kernel calls. */
    record Step(long toHost, long toDevice, long valueReads, long launches, Map<String, Long> byKernel) {
    }

    private interface Model {
        /** Builds the model and its batch on {@code d}; returns the step to run (forward, backward, optimizer). */
        Runnable open(Device d, int batch, List<AutoCloseable> owned);
    }

    private static Step measure(Model model, int batch) {
        OpaqueDevice backend = new OpaqueDevice(256L << 20);
        OpaqueKernels.Counters counters = new OpaqueKernels.Counters();
        List<AutoCloseable> owned = new ArrayList<>();
        try (CachingAllocator alloc = CachingAllocator.create(backend); MemoryScope scope = MemoryScope.open()) {
            Device dev = Device.of(alloc).withKernels(OpaqueKernels.over(backend, Kernels.scalar(), new AtomicLong(),
                    counters));
            Runnable step = model.open(dev, batch, owned);
            step.run();   // the first step allocates the optimizer state
            long toHost = backend.toHost.get();
            long toDevice = backend.toDevice.get();
            long reads = counters.valueReads().get();
            long launches = counters.launches().get();
            Map<String, Long> before = new TreeMap<>(counters.byKernel());
            step.run();
            Map<String, Long> byKernel = new TreeMap<>(counters.byKernel());
            before.forEach((k, v) -> byKernel.merge(k, -v, Long::sum));
            Step s = new Step(backend.toHost.get() - toHost, backend.toDevice.get() - toDevice,
                    counters.valueReads().get() - reads, counters.launches().get() - launches, byKernel);
            for (int i = owned.size() - 1; i >= 0; i--) {
                owned.get(i).close();
            }
            return s;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        } finally {
            backend.close();
        }
    }

    private static void assertStaysOnTheDevice(String what, Model model) {
        Step small = measure(model, 8);
        Step large = measure(model, 16);
        for (Step s : new Step[] {small, large}) {
            assertEquals(1, s.toHost(), what + ": copies to the host in a step (only loss.item()): " + s);
            assertEquals(0, s.toDevice() + s.byKernel().getOrDefault("copyFromHost", 0L),
                    what + ": copies to the device in a step (the backend's, and those queued through the kernels): " + s);
            assertEquals(0, s.valueReads(), what + ": kernel results read back by Java in a step: " + s);
        }
        assertTrue(small.launches() > 10, what + ": the step ran on the device's kernels: " + small);
        if (what.endsWith("+bf16")) {
            assertTrue(small.byKernel().getOrDefault("gemmBatched16", 0L) > 0
                            && !small.byKernel().containsKey("sgemm") && !small.byKernel().containsKey("sgemmBatched"),
                    what + ": the products under autocast are 16-bit GEMMs: " + small.byKernel());
        }
        String fused = what.contains("sgd") ? "sgdMulti" : "adamwMulti";
        assertEquals(1L, small.byKernel().get(fused), what + ": the optimizer step is one fused call: " + small);
        assertEquals(small.byKernel(), large.byKernel(),
                what + ": launches of each kernel at batch 8 and 16 (a launch per element or per row grows with the batch)");
    }

    /** One step: zero_grad, forward and loss (under autocast when asked), backward, optimizer step, loss.item(). */
    private static Runnable step(Module net, Optimizer opt, Tensor x, Tensor y, DType amp) {
        return () -> {
            try (MemoryScope s = MemoryScope.open()) {
                opt.zeroGrad(true);
                Tensor loss;
                try (Autocast ac = Autocast.enter(amp == null ? DType.BFLOAT16 : amp, amp != null)) {
                    Tensor logits = net.forward(x);
                    loss = Functional.crossEntropy(logits.reshape(-1, logits.size(-1)), y);
                }
                loss.backward();
                opt.step();
                assertTrue(Float.isFinite(loss.item()));
            }
        };
    }

    private static float[] inputs(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) Math.sin(i * 0.37);
        }
        return v;
    }

    private static long[] labels(int n, int classes) {
        long[] v = new long[n];
        for (int i = 0; i < n; i++) {
            v[i] = (i * 7L + 3) % classes;
        }
        return v;
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"sgd", "adamw", "sgd+bf16", "adamw+bf16"})
    void anMlpStepCopiesOnlyTheLossToTheHost(String kind) {
        DType amp = kind.endsWith("+bf16") ? DType.BFLOAT16 : null;
        assertStaysOnTheDevice("mlp " + kind, (d, batch, owned) -> {
            Generator gen = new Generator(1);
            Sequential net = new Sequential(new Linear(d, 784, 512, gen), new ReLU(), new Dropout(0.1f, gen),
                    new Linear(d, 512, 512, gen), new ReLU(), new Dropout(0.1f, gen), new Linear(d, 512, 10, gen));
            net.train();
            Optimizer opt = kind.startsWith("sgd") ? new SGD(net.parameters(), 0.05f, 0.9f, 0f)
                    : new AdamW(net.parameters(), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f);
            owned.add(net);
            owned.add(opt);
            Tensor x = d.tensor(inputs(batch * 784), batch, 784);
            Tensor y = d.tensor(labels(batch, 10), batch);
            return step(net, opt, x, y, amp);
        });
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"adamw"})
    void aTransformerStepCopiesOnlyTheLossToTheHost(String kind) {
        assertStaysOnTheDevice("gpt " + kind, (d, batch, owned) -> {
            int vocab = 11;
            int t = 6;
            GPT gpt = new GPT(d, new GPT.Config(vocab, t, 2, 2, 8, 0.1f), new Generator(5));
            gpt.train();
            Optimizer opt = new AdamW(gpt.parameters(), 0.01f);
            owned.add(gpt);
            owned.add(opt);
            long[] tokens = labels(batch * t + 1, vocab);
            Tensor x = d.tensor(java.util.Arrays.copyOf(tokens, batch * t), batch, t);
            Tensor y = d.tensor(java.util.Arrays.copyOfRange(tokens, 1, batch * t + 1), batch * t);
            return step(gpt, opt, x, y, null);
        });
    }
}
