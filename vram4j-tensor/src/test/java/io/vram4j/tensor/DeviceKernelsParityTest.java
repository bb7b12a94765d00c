package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.amp.Autocast;
import io.vram4j.amp.GradScaler;
import io.vram4j.compute.Kernels;
import io.vram4j.nn.GPT;
import io.vram4j.optim.AdamW;
import io.vram4j.optim.Optimizer;
import io.vram4j.optim.SGD;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tensor ops on device memory compute through the device's kernels: on an {@link OpaqueDevice} (addresses no
 * host load can use: any op that touched device bytes from Java would crash this JVM) whose kernels are the
 * scalar host kernels applied to the mirrored bytes ({@link OpaqueKernels}), every op's forward result and
 * gradients, and a short MLP training run, equal the same computation on {@code host} with the scalar kernels
 * bit for bit.
 */
class DeviceKernelsParityTest {
    OpaqueDevice backend;
    CachingAllocator alloc;
    Device dev;
    Device hostOwner;
    Device host;
    final AtomicLong deviceSegments = new AtomicLong();

    @BeforeEach
    void open() {
        backend = new OpaqueDevice(64L << 20);
        alloc = CachingAllocator.create(backend);
        dev = Device.of(alloc).withKernels(OpaqueKernels.over(backend, Kernels.scalar(), deviceSegments));
        hostOwner = Device.open("host:64MiB");
        host = hostOwner.withKernels(Kernels.scalar());
    }

    @AfterEach
    void close() {
        hostOwner.close();
        alloc.close();
        backend.close();
    }

    /** An op under test: inputs (by shape; index tensors are made by {@link #indices}) to one output. */
    record Case(String name, int[][] shapes, Function<Tensor[], Tensor> op) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Case c(String name, Function<Tensor[], Tensor> op, int[]... shapes) {
        return new Case(name, shapes, op);
    }

    static Stream<Arguments> ops() {
        return Stream.of(
                c("add", t -> t[0].add(t[1]), new int[] {3, 5}, new int[] {3, 5}),
                c("add bias (row broadcast)", t -> t[0].add(t[1]), new int[] {4, 5}, new int[] {5}),
                c("add column broadcast", t -> t[0].add(t[1]), new int[] {4, 5}, new int[] {4, 1}),
                c("sub scalar tensor", t -> t[0].sub(t[1]), new int[] {3, 5}, new int[] {1}),
                c("mul broadcast", t -> t[0].mul(t[1]), new int[] {2, 3, 4}, new int[] {3, 1}),
                c("div", t -> t[0].div(t[1].exp()), new int[] {3, 4}, new int[] {3, 4}),
                c("neg", t -> t[0].neg(), new int[] {7}),
                c("exp", t -> t[0].exp(), new int[] {3, 4}),
                c("log", t -> t[0].exp().add(1f).log(), new int[] {3, 4}),
                c("sqrt", t -> t[0].exp().sqrt(), new int[] {3, 4}),
                c("tanh", t -> t[0].tanh(), new int[] {3, 4}),
                c("relu", t -> t[0].relu(), new int[] {5, 6}),
                c("gelu", t -> t[0].gelu(), new int[] {5, 6}),
                c("mul and add a float", t -> t[0].mul(1.7f).add(-0.3f).div(3f), new int[] {9}),
                c("sum", t -> t[0].sum(), new int[] {4, 6}),
                c("sum dim 0", t -> t[0].sum(0, false), new int[] {4, 6}),
                c("mean dim 1 keepdim", t -> t[0].mean(1, true), new int[] {4, 6}),
                c("sum of a transposed view", t -> t[0].t().sum(1, false), new int[] {4, 6}),
                c("max dim 1", t -> t[0].max(1, false), new int[] {4, 6}),
                c("matmul", t -> t[0].matmul(t[1]), new int[] {4, 6}, new int[] {6, 3}),
                c("matmul transposed", t -> t[0].matmul(t[1].t()), new int[] {4, 6}, new int[] {3, 6}),
                c("batched matmul", t -> t[0].matmul(t[1]), new int[] {2, 4, 6}, new int[] {2, 6, 3}),
                c("tall matmul", t -> t[0].matmul(t[1]), new int[] {2, 4, 6}, new int[] {6, 3}),
                c("linear", t -> Functional.linear(t[0], t[1], t[2]), new int[] {5, 6}, new int[] {3, 6}, new int[] {3}),
                c("linear of a 3-D input", t -> Functional.linear(t[0], t[1], t[2]),
                        new int[] {2, 5, 6}, new int[] {3, 6}, new int[] {3}),
                c("bfloat16 linear of a 3-D input", t -> Functional.linear(t[0].to(DType.BFLOAT16),
                        t[1].to(DType.BFLOAT16), t[2].to(DType.BFLOAT16)), new int[] {2, 5, 6}, new int[] {3, 6}, new int[] {3}),
                c("float16 linear", t -> Functional.linear(t[0].to(DType.FLOAT16), t[1].to(DType.FLOAT16),
                        t[2].to(DType.FLOAT16)), new int[] {5, 6}, new int[] {3, 6}, new int[] {3}),
                c("softmax", t -> t[0].softmax(), new int[] {4, 7}),
                c("logSoftmax", t -> t[0].logSoftmax(), new int[] {4, 7}),
                c("layerNorm", t -> Functional.layerNorm(t[0], t[1], t[2], 1e-5f),
                        new int[] {4, 8}, new int[] {8}, new int[] {8}),
                c("transpose contiguous", t -> t[0].transpose(0, 1).contiguous().mul(t[0].t()), new int[] {3, 5}),
                c("narrow", t -> t[0].narrow(1, 1, 3).mul(2f), new int[] {4, 6}),
                c("expand", t -> t[0].expand(4, 3).mul(t[1]), new int[] {1, 3}, new int[] {4, 3}),
                c("reshape of a transposed view", t -> t[0].t().reshape(12).mul(t[1]), new int[] {3, 4}, new int[] {12}),
                c("to bfloat16 and back", t -> t[0].to(DType.BFLOAT16).mul(t[1].to(DType.BFLOAT16)).to(DType.FLOAT32),
                        new int[] {3, 5}, new int[] {3, 5}),
                c("float16 ops", t -> t[0].to(DType.FLOAT16).exp().add(t[1].to(DType.FLOAT16)).softmax(),
                        new int[] {3, 5}, new int[] {5}),
                c("bfloat16 matmul of a transposed view", t -> t[0].to(DType.BFLOAT16).t().matmul(t[1].to(DType.BFLOAT16)),
                        new int[] {4, 3}, new int[] {4, 2}),
                c("dropout", t -> Functional.dropout(t[0], 0.4f, 1234L), new int[] {6, 7}),
                c("causal mask then softmax", t -> Functional.causalMask(t[0]).softmax(), new int[] {2, 5, 5}),
                c("cross-entropy", t -> Functional.crossEntropy(t[0], indices(t[0].device(), 4, 5)), new int[] {4, 5}),
                c("embedding", t -> Functional.embedding(t[0], indices(t[0].device(), 6, 5)).mul(t[1]),
                        new int[] {5, 3}, new int[] {6, 3}),
                c("attention", t -> Functional.scaledDotProductAttention(t[0], t[1], t[2], true),
                        new int[] {2, 5, 4}, new int[] {2, 5, 4}, new int[] {2, 5, 4}),
                c("fused attention of transposed views, not causal", t -> Functional.scaledDotProductAttention(
                        t[0].transpose(0, 1), t[1].transpose(0, 1), t[2].transpose(0, 1), false),
                        new int[] {7, 2, 3}, new int[] {7, 2, 3}, new int[] {7, 2, 3}),
                c("math attention", t -> {
                    try (SdpaKernel math = SdpaKernel.enable(SDPBackend.MATH)) {
                        return Functional.scaledDotProductAttention(t[0], t[1], t[2], true);
                    }
                }, new int[] {2, 5, 4}, new int[] {2, 5, 4}, new int[] {2, 5, 4}))
                .map(Arguments::of);
    }

    /** Indices {@code 0..bound-1} in a fixed order, as int64. */
    static Tensor indices(Device d, int n, int bound) {
        long[] v = new long[n];
        for (int i = 0; i < n; i++) {
            v[i] = (i * 3L + 1) % bound;
        }
        return d.tensor(v, n);
    }

    static float[] random(Random r, int[] shape) {
        float[] v = new float[Math.toIntExact(Shapes.numel(shape))];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) r.nextGaussian();
        }
        return v;
    }

    /** Runs the op on one device: the output's values, then the gradient of each input. */
    static List<float[]> run(Device d, Case c) {
        Random r = new Random(42);
        try (MemoryScope s = MemoryScope.open()) {
            Tensor[] in = new Tensor[c.shapes().length];
            for (int i = 0; i < in.length; i++) {
                in[i] = d.tensor(random(r, c.shapes()[i]), c.shapes()[i]).requiresGrad(true);
            }
            Tensor out = c.op().apply(in);
            List<float[]> values = new ArrayList<>();
            values.add(out.toFloatArray());
            Tensor w = d.tensor(random(r, out.shape()), out.shape());
            out.mul(w).sum().backward();
            for (Tensor t : in) {
                assertNotNull(t.grad(), c.name() + ": no gradient");
                values.add(t.grad().toFloatArray());
            }
            return values;
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("ops")
    void forwardAndGradientEqualHostBitForBit(Case c) {
        List<float[]> expected = run(host, c);
        long before = deviceSegments.get();
        List<float[]> actual = run(dev, c);
        assertEquals(expected.size(), actual.size());
        for (int i = 0; i < expected.size(); i++) {
            assertArrayEquals(expected.get(i), actual.get(i), c.name() + (i == 0 ? ": output" : ": gradient " + i));
        }
        assertTrue(deviceSegments.get() > before, c.name() + ": no kernel was given device memory");
        assertEquals(0, dev.memoryAllocated(), c.name() + ": device memory left allocated");
    }

    /**
     * A 2-layer MLP, 6 steps of SGD (momentum, weight decay, Nesterov), of SGD without momentum, of AdamW, of AdamW
     * under float16 autocast with a GradScaler (growing its scale every 2 steps) or of SGD under bfloat16 autocast:
     * the same losses and weights as on host.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"sgd-nesterov", "sgd", "adamw", "adamw+fp16", "sgd+bf16"})
    void mlpTrainingEqualsHostBitForBit(String optimizer) {
        float[][] expected = train(host, optimizer);
        float[][] actual = train(dev, optimizer);
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < expected.length; i++) {
            assertArrayEquals(expected[i], actual[i], "row " + i + " (0: losses, then the weights)");
        }
        assertFalse(expected[0][0] == expected[0][expected[0].length - 1], "the loss did not move");
    }

    static Optimizer optimizer(String kind, List<Tensor> params) {
        return switch (kind.replaceAll("\\+.*", "")) {
            case "sgd-nesterov" -> new SGD(params, 0.1f, 0.9f, 1e-3f, true);
            case "sgd" -> new SGD(params, 0.1f);
            default -> new AdamW(params, 0.01f, 0.9f, 0.999f, 1e-8f, 0.01f);
        };
    }

    static float[][] train(Device d, String kind) {
        Random r = new Random(7);
        int[][] shapes = {{16, 8}, {16}, {3, 16}, {3}};
        try (MemoryScope s = MemoryScope.open()) {
            List<Tensor> params = new ArrayList<>();
            for (int[] shape : shapes) {
                float[] v = random(r, shape);
                for (int i = 0; i < v.length; i++) {
                    v[i] *= 0.3f;
                }
                params.add(d.tensor(v, shape).requiresGrad(true));
            }
            Tensor x = d.tensor(random(r, new int[] {10, 8}), 10, 8);
            Tensor y = indices(d, 10, 3);
            float[] losses = new float[6];
            DType amp = kind.endsWith("+fp16") ? DType.FLOAT16 : kind.endsWith("+bf16") ? DType.BFLOAT16 : null;
            GradScaler scaler = new GradScaler(1024f, 2f, 0.5f, 2, amp == DType.FLOAT16);
            try (Optimizer opt = optimizer(kind, params)) {
                for (int step = 0; step < losses.length; step++) {
                    opt.zeroGrad();
                    Tensor loss;
                    try (Autocast ac = Autocast.enter(amp == null ? DType.FLOAT16 : amp, amp != null)) {
                        Tensor h = Functional.linear(x, params.get(0), params.get(1)).relu();
                        loss = Functional.crossEntropy(Functional.linear(h, params.get(2), params.get(3)), y);
                    }
                    scaler.scale(loss).backward();
                    losses[step] = loss.item();
                    scaler.step(opt);
                    scaler.update();
                }
            }
            return lossesAndWeights(losses, params);
        }
    }

    /**
     * A 2-block GPT (embeddings, layer norm, causal attention, GELU, dropout 0.1), 3 AdamW steps: the same losses
     * and weights as on host.
     */
    @Test
    void transformerTrainingEqualsHostBitForBit() {
        float[][] expected = trainGpt(host);
        float[][] actual = trainGpt(dev);
        assertEquals(expected.length, actual.length);
        for (int i = 0; i < expected.length; i++) {
            assertArrayEquals(expected[i], actual[i], "row " + i + " (0: losses, then the weights)");
        }
        assertFalse(expected[0][0] == expected[0][expected[0].length - 1], "the loss did not move");
    }

    /**
     * The same GPT under bfloat16 autocast: its 16-bit activations are made contiguous from strided views (the
     * heads' transposes), a narrow's bfloat16 gradient is written into its slice, and bfloat16 gradients are summed
     * in place, which device memory does through float32 temporaries; the same bits as on host.
     */
    @Test
    void transformerTrainingUnderBf16AutocastEqualsHostBitForBit() {
        float[][] expected = trainGpt(host, DType.BFLOAT16);
        float[][] actual = trainGpt(dev, DType.BFLOAT16);
        for (int i = 0; i < expected.length; i++) {
            assertArrayEquals(expected[i], actual[i], "row " + i + " (0: losses, then the weights)");
        }
        assertFalse(java.util.Arrays.equals(expected[0], trainGpt(host)[0]), "autocast changed the losses");
    }

    static float[][] trainGpt(Device d) {
        return trainGpt(d, null);
    }

    /** @param amp the autocast dtype of the forward pass and loss, or null for float32 */
    static float[][] trainGpt(Device d, DType amp) {
        int vocab = 11;
        int t = 6;
        long[] tokens = new long[2 * (t + 1)];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = (i * 7L + 3) % vocab;
        }
        long[] x = new long[2 * t];
        long[] y = new long[2 * t];
        for (int b = 0; b < 2; b++) {
            for (int j = 0; j < t; j++) {
                x[b * t + j] = tokens[b * (t + 1) + j];
                y[b * t + j] = tokens[b * (t + 1) + j + 1];
            }
        }
        try (MemoryScope s = MemoryScope.open();
             GPT gpt = new GPT(d, new GPT.Config(vocab, t, 2, 2, 8, 0.1f), new Generator(5))) {
            gpt.train();
            Tensor xs = d.tensor(x, 2, t);
            Tensor ys = d.tensor(y, 2 * t);
            List<Tensor> params = new ArrayList<>(gpt.parameters());
            float[] losses = new float[3];
            try (Optimizer opt = new AdamW(params, 0.01f)) {
                for (int step = 0; step < losses.length; step++) {
                    opt.zeroGrad();
                    Tensor loss;
                    try (Autocast ac = Autocast.enter(amp == null ? DType.BFLOAT16 : amp, amp != null)) {
                        Tensor logits = gpt.forward(xs);
                        loss = Functional.crossEntropy(logits.reshape(2 * t, vocab), ys);
                    }
                    loss.backward();
                    losses[step] = loss.item();
                    opt.step();
                }
            }
            return lossesAndWeights(losses, params);
        }
    }

    @Test
    void conversionsWithoutAKernelAreRefusedInOneLineLeavingMemoryAsItWas() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor ids = dev.tensor(new long[] {1, 2, 3}, 3);
            Tensor h = dev.tensor(DType.FLOAT16, new float[] {1, 2, 3});
            long allocated = dev.memoryAllocated();
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                    () -> ids.to(DType.FLOAT32));
            assertEquals("this operation has no kernel for tensors on " + dev.description() + " for int64 to float32: "
                    + "device kernels compute float32 and convert between float32 and float16/bfloat16", e.getMessage());
            assertThrows(UnsupportedOperationException.class, () -> h.to(DType.BFLOAT16));
            assertEquals(allocated, dev.memoryAllocated());
            assertArrayEquals(new float[] {1, 2, 3}, h.toFloatArray());
            assertArrayEquals(new long[] {1, 2, 3}, ids.toLongArray());
        }
    }

    /**
     * In-place ops and same-type copies of float16/bfloat16 tensors in device memory (through float32
     * temporaries, freed before they return) give host's bits, strided views included, and leave nothing allocated.
     */
    @Test
    void sixteenBitInPlaceOpsAndStridedCopiesEqualHostBitForBit() {
        for (DType type : new DType[] {DType.FLOAT16, DType.BFLOAT16}) {
            float[] expected = sixteenBitWork(host, type);
            long allocated = dev.memoryAllocated();
            assertArrayEquals(expected, sixteenBitWork(dev, type), type.toString());
            assertEquals(allocated, dev.memoryAllocated(), type + ": the temporaries were freed");
        }
    }

    /** @return a 16-bit tensor after in-place ops on it and on a strided view of it, and copies of strided views */
    private static float[] sixteenBitWork(Device d, DType type) {
        float[] v = new float[24];
        for (int i = 0; i < v.length; i++) {
            v[i] = (i * 37 % 11 - 5) * 0.3337f;
        }
        try (MemoryScope s = MemoryScope.open(); io.vram4j.autograd.NoGrad ng = io.vram4j.autograd.NoGrad.enter()) {
            Tensor x = d.tensor(v, 2, 3, 4).to(type);
            x.mulInPlace(1.7f);
            Tensor t = x.transpose(0, 2);                        // strided view of the same storage
            t.addInPlace(d.tensor(v, 4, 3, 2).to(type), 0.5f);
            t.narrow(1, 1, 2).mulInPlace(-3f);
            Tensor copied = t.contiguous();                       // same-type copy from a strided view
            Tensor slice = x.narrow(2, 1, 2);
            slice.copyFrom(x.narrow(2, 2, 2).contiguous());       // into a strided destination
            float[] a = x.toFloatArray();
            float[] b = copied.toFloatArray();
            float[] out = java.util.Arrays.copyOf(a, a.length + b.length);
            System.arraycopy(b, 0, out, a.length, b.length);
            return out;
        }
    }

    /** The losses, then each parameter's values: what a training run is compared by. */
    private static float[][] lossesAndWeights(float[] losses, List<? extends Tensor> params) {
        float[][] out = new float[1 + params.size()][];
        out[0] = losses;
        for (int i = 0; i < params.size(); i++) {
            out[1 + i] = params.get(i).toFloatArray();
        }
        return out;
    }
}
