package io.vram4j.train;

import io.vram4j.autograd.GradCheck;
import io.vram4j.autograd.NoGrad;
import io.vram4j.nn.Dropout;
import io.vram4j.nn.GELU;
import io.vram4j.nn.LayerNorm;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Module;
import io.vram4j.nn.Parameter;
import io.vram4j.nn.ReLU;
import io.vram4j.nn.Sequential;
import io.vram4j.nn.TransformerBlock;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CheckpointTest {
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

    /** A block with dropout, layer norm and a residual path: Linear-GELU-Dropout-Linear-LayerNorm. */
    private static final class Block extends Module {
        final Linear a;
        final Linear b;
        final Dropout drop;
        final LayerNorm ln;
        final GELU gelu = new GELU();

        Block(Device dev, int width, Generator init, Generator dropGen) {
            a = registerModule("a", new Linear(dev, width, 2 * width, init));
            b = registerModule("b", new Linear(dev, 2 * width, width, init));
            drop = registerModule("drop", new Dropout(0.3f, dropGen));
            ln = registerModule("ln", new LayerNorm(dev, width));
        }

        @Override
        public Tensor forward(Tensor x) {
            try (Tensor h = a.forward(x); Tensor g = gelu.forward(h); Tensor d = drop.forward(g);
                 Tensor o = b.forward(d); Tensor r = o.add(x)) {
                return ln.forward(r);
            }
        }
    }

    private Sequential model(Generator dropGen, int blocks, int width) {
        Generator init = new Generator(7);
        Module[] ms = new Module[blocks];
        for (int i = 0; i < blocks; i++) {
            ms[i] = new Block(dev, width, init, dropGen);
        }
        return new Sequential(ms);
    }

    /** Runs forward + backward of sum(out * w) and returns every gradient (parameters, then x if any). */
    private List<float[]> grads(Module m, Tensor x, Function<Tensor, Tensor> forward) {
        m.zeroGrad(true);
        if (x.requiresGrad()) {
            x.setGrad(null);
        }
        try (MemoryScope s = MemoryScope.open()) {
            Tensor out = forward.apply(x);
            Tensor w = dev.arange((int) out.numel()).reshape(out.shape()).mul(0.01f);
            out.mul(w).sum().backward();
        }
        List<float[]> g = new ArrayList<>();
        for (Parameter p : m.parameters()) {
            g.add(p.grad() == null ? null : p.grad().toFloatArray());
        }
        g.add(x.grad() == null ? null : x.grad().toFloatArray());
        return g;
    }

    private static void assertBitwiseEqual(List<float[]> expected, List<float[]> actual) {
        assertEquals(expected.size(), actual.size());
        for (int i = 0; i < expected.size(); i++) {
            if (expected.get(i) == null) {
                assertNull(actual.get(i), "gradient " + i);
                continue;
            }
            assertNotNull(actual.get(i), "gradient " + i);
            int[] e = new int[expected.get(i).length];
            int[] a = new int[e.length];
            for (int j = 0; j < e.length; j++) {
                e[j] = Float.floatToRawIntBits(expected.get(i)[j]);
                a[j] = Float.floatToRawIntBits(actual.get(i)[j]);
            }
            assertArrayEquals(e, a, "gradient " + i + " bitwise");
        }
    }

    @Test
    void checkpointedGradientsAreBitwiseEqualAndDropoutIsReplayed() {
        Generator dropGen = new Generator(42);
        try (Sequential m = model(dropGen, 4, 16); Tensor x = dev.randn(new Generator(3), 8, 16).requiresGrad(true)) {
            long seed = dropGen.state();
            List<float[]> base = grads(m, x, m::forward);
            long after = dropGen.state();
            assertFalse(seed == after, "dropout drew");

            dropGen.setState(seed);
            List<float[]> whole = grads(m, x, in -> Checkpoint.checkpoint(m, in));
            assertBitwiseEqual(base, whole);
            assertEquals(after, dropGen.state(), "the recomputation does not advance the generator (fork_rng)");

            for (int segments : new int[] {1, 2, 3, 4}) {
                dropGen.setState(seed);
                List<float[]> seq = grads(m, x, in -> Checkpoint.checkpointSequential(m, segments, in));
                assertBitwiseEqual(base, seq);
            }

            // without RNG preservation the recomputation draws other masks: the gradients differ
            dropGen.setState(seed);
            List<float[]> noRng = grads(m, x, in -> Checkpoint.checkpoint(a -> m.forward(a[0]), false, in));
            assertFalse(Arrays.equals(base.get(0), noRng.get(0)), "other dropout masks in the recomputation");
        }
    }

    @Test
    void transformerBlockGradientsAreBitwiseEqual() {
        Generator gen = new Generator(5);
        try (TransformerBlock blk = new TransformerBlock(dev, 32, 4, 0.1f, gen);
             Tensor x = dev.randn(new Generator(9), 2, 12, 32).requiresGrad(true)) {
            long seed = gen.state();
            List<float[]> base = grads(blk, x, blk::forward);
            gen.setState(seed);
            List<float[]> ck = grads(blk, x, in -> Checkpoint.checkpoint(blk, in));
            assertBitwiseEqual(base, ck);
        }
    }

    @Test
    void inputsThatDoNotRequireGradStillGiveParameterGradients() {
        Generator dropGen = new Generator(1);
        try (Sequential m = model(dropGen, 2, 8); Tensor x = dev.randn(new Generator(4), 5, 8)) {
            long seed = dropGen.state();
            List<float[]> base = grads(m, x, m::forward);
            dropGen.setState(seed);
            List<float[]> ck = grads(m, x, in -> Checkpoint.checkpoint(m, in));
            assertBitwiseEqual(base, ck);
            assertNull(x.grad());
            assertNotNull(ck.get(0), "parameters inside the region get gradients (non-reentrant semantics)");
        }
    }

    @Test
    void nestedCheckpointsGiveTheSameGradients() {
        Generator dropGen = new Generator(11);
        try (Sequential m = model(dropGen, 4, 8); Tensor x = dev.randn(new Generator(2), 3, 8).requiresGrad(true)) {
            List<Module> layers = m.layers();
            long seed = dropGen.state();
            List<float[]> base = grads(m, x, m::forward);
            dropGen.setState(seed);
            List<float[]> nested = grads(m, x, in -> Checkpoint.checkpoint(outer -> {
                try (Tensor h = layers.get(0).forward(outer[0]);
                     Tensor h2 = Checkpoint.checkpoint(inner -> {
                         try (Tensor t = layers.get(1).forward(inner[0])) {
                             return layers.get(2).forward(t);
                         }
                     }, h)) {
                    return layers.get(3).forward(h2);
                }
            }, in));
            assertBitwiseEqual(base, nested);
            long actual = dropGen.state();
            dropGen.setState(seed);
            try (NoGrad ng = NoGrad.enter(); Tensor y = m.forward(x)) {
                assertEquals(dropGen.state(), actual, "generator left as after a plain forward");
            }
        }
    }

    @Test
    void underNoGradTheFunctionJustRuns() {
        try (Sequential m = model(new Generator(0), 2, 8); Tensor x = dev.randn(new Generator(2), 3, 8)) {
            int[] calls = {0};
            try (NoGrad ng = NoGrad.enter();
                 Tensor y = Checkpoint.checkpoint(in -> {
                     calls[0]++;
                     return m.forward(in[0]);
                 }, x)) {
                assertNull(y.gradFn());
                assertFalse(y.requiresGrad());
            }
            assertEquals(1, calls[0]);
        }
    }

    @Test
    void earlyStopSkipsTheRegionsTrailingOps() {
        try (Linear l = new Linear(dev, 4, 4, new Generator(0)); Tensor x = dev.randn(new Generator(1), 2, 4)) {
            int[] tail = {0};
            Function<Tensor[], Tensor> fn = in -> {
                try (Tensor h = l.forward(in[0]); Tensor t = h.tanh()) {
                    tail[0]++;                 // after the last saving op (tanh saves its output)
                    return t.add(1f);
                }
            };
            for (boolean early : new boolean[] {true, false}) {
                tail[0] = 0;
                try (Checkpoint.EarlyStop es = Checkpoint.setEarlyStop(early);
                     Tensor y = Checkpoint.checkpoint(fn, x); Tensor s = y.sum()) {
                    s.backward();
                }
                assertEquals(early ? 1 : 2, tail[0], "early stop " + early);
                l.zeroGrad(true);
            }
        }
    }

    @Test
    void recomputationRunsOnceDuringBackward() {
        try (Linear l = new Linear(dev, 4, 4, new Generator(0)); Tensor x = dev.randn(new Generator(1), 2, 4)) {
            int[] calls = {0};
            try (Tensor y = Checkpoint.checkpoint(in -> {
                calls[0]++;
                try (Tensor h = l.forward(in[0])) {
                    return h.tanh();
                }
            }, x); Tensor s = y.sum()) {
                assertEquals(1, calls[0]);
                s.backward();
                assertEquals(2, calls[0]);
            }
            l.zeroGrad(true);
        }
    }

    @Test
    void aRecomputationThatSavesOtherTensorsIsAnError() {
        try (Linear l = new Linear(dev, 4, 4, new Generator(0)); Tensor x = dev.randn(new Generator(1), 2, 4)) {
            int[] calls = {0};
            Function<Tensor[], Tensor> unstable = in -> {
                calls[0]++;
                if (calls[0] == 1) {
                    return l.forward(in[0]);
                }
                try (Tensor x2 = in[0].narrow(0, 0, 1)) {
                    return l.forward(x2).expand(2, 4);
                }
            };
            try (Tensor y = Checkpoint.checkpoint(unstable, x); Tensor s = y.sum()) {
                CheckpointError e = assertThrows(CheckpointError.class, s::backward);
                assertTrue(e.getMessage().contains("different metadata"), e.getMessage());
            }
            int[] more = {0};
            Function<Tensor[], Tensor> extra = in -> {
                more[0]++;
                if (more[0] == 1) {
                    return l.forward(in[0]);
                }
                try (Tensor h = l.forward(in[0])) {
                    return h.exp();
                }
            };
            try (Checkpoint.EarlyStop off = Checkpoint.setEarlyStop(false);
                 Tensor y = Checkpoint.checkpoint(extra, x); Tensor s = y.sum()) {
                assertFalse(Checkpoint.isEarlyStop());
                CheckpointError e = assertThrows(CheckpointError.class, s::backward);
                assertTrue(e.getMessage().contains("more tensors during recomputation"), e.getMessage());
            }
            // with early stop (the default) the extra tensor is never reached: the gradients are right
            assertTrue(Checkpoint.isEarlyStop());
            more[0] = 0;
            l.zeroGrad(true);
            try (Tensor y = Checkpoint.checkpoint(extra, x); Tensor s = y.sum()) {
                s.backward();
            }
            float[] stopped = l.weight().grad().toFloatArray();
            l.zeroGrad(true);
            try (Tensor y = l.forward(x); Tensor s = y.sum()) {
                s.backward();
            }
            assertArrayEquals(l.weight().grad().toFloatArray(), stopped, 0f);
            l.zeroGrad(true);
        }
    }

    @Test
    void gradCheckThroughACheckpoint() {
        Generator g = new Generator(12);
        try (Tensor x = dev.randn(g, 3, 4).requiresGrad(true); Tensor w = dev.randn(g, 4, 5).requiresGrad(true)) {
            GradCheck.check(in -> Checkpoint.checkpoint(a -> {
                try (Tensor h = a[0].matmul(a[1]); Tensor t = h.tanh()) {
                    return t.mul(t);
                }
            }, in[0], in[1]), x, w);
        }
    }

    @Test
    void retainedGraphsBackwardTwiceWithOneRecomputation() {
        try (Linear l = new Linear(dev, 4, 3, new Generator(0)); Tensor x = dev.randn(new Generator(1), 2, 4)) {
            int[] calls = {0};
            float[] once;
            try (Tensor y = Checkpoint.checkpoint(in -> {
                calls[0]++;
                try (Tensor h = l.forward(in[0])) {
                    return h.tanh();
                }
            }, x); Tensor s = y.sum()) {
                s.backward(null, true);
                once = l.weight().grad().toFloatArray();
                s.backward();
            }
            assertEquals(2, calls[0]);
            float[] twice = l.weight().grad().toFloatArray();
            for (int i = 0; i < once.length; i++) {
                assertEquals(2 * once[i], twice[i], 1e-6f);
            }
            l.zeroGrad(true);
        }
    }

    @Test
    void closingTheOutputWithoutBackwardFreesTheRegion() {
        try (Sequential m = model(new Generator(0), 2, 16); Tensor x = dev.randn(new Generator(2), 4, 16)) {
            long base = dev.memoryAllocated();
            Tensor y = Checkpoint.checkpoint(m, x);
            assertTrue(dev.memoryAllocated() > base);
            y.close();
            assertEquals(base, dev.memoryAllocated(), "saved inputs released with the graph");
        }
    }

    @Test
    void nodesReleasedDuringTheForwardDoNotKeepTheirRecomputedTensors() {
        try (Linear l = new Linear(dev, 4, 4, new Generator(0)); Tensor x = dev.randn(new Generator(1), 2, 4)) {
            long base = dev.memoryAllocated();
            try (Tensor y = Checkpoint.checkpoint(in -> {
                try (Tensor h = l.forward(in[0]); Tensor unused = h.exp()) {   // exp saves its output, then is closed
                    return h.tanh();
                }
            }, x); Tensor s = y.sum()) {
                s.backward();
            }
            l.zeroGrad(true);
            assertEquals(base, dev.memoryAllocated(), "nothing kept for the discarded branch");
        }
    }

    @Test
    void simulatedAndHostDevicesAllocateAlike() {
        long host = checkpointedPeak(dev);
        try (Device sim = Device.open("sim:512MiB")) {
            assertEquals(host, checkpointedPeak(sim), "a dry run predicts the real peak");
        }
    }

    private static long checkpointedPeak(Device d) {
        Generator gen = new Generator(3);
        try (Sequential m = new Sequential(new TransformerBlock(d, 32, 4, 0.1f, gen), new TransformerBlock(d, 32, 4, 0.1f, gen),
                new TransformerBlock(d, 32, 4, 0.1f, gen), new TransformerBlock(d, 32, 4, 0.1f, gen));
             MemoryScope s = MemoryScope.open()) {
            Tensor x = d.zeros(2, 16, 32);
            d.allocator().resetPeakMemoryStats();
            Checkpoint.checkpointSequential(m, 2, x).mean().backward();
            long peak = d.allocator().maxMemoryAllocated();
            m.zeroGrad(true);
            return peak;
        }
    }

    @Test
    void segmentsMustBePositive() {
        try (Sequential m = new Sequential(new ReLU()); Tensor x = dev.zeros(2)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Checkpoint.checkpointSequential(m, 0, x));
            assertTrue(e.getMessage().contains("segments"));
            IllegalArgumentException many = assertThrows(IllegalArgumentException.class,
                    () -> Checkpoint.checkpointSequential(m, 2, x));
            assertTrue(many.getMessage().contains("2 segments for 1 modules"), many.getMessage());
        }
    }

    @Test
    void checkpointingLowersPeakMemory() {
        int blocks = 24;
        int width = 128;
        Generator init = new Generator(3);
        Module[] layers = new Module[2 * blocks];
        for (int i = 0; i < blocks; i++) {
            layers[2 * i] = new Linear(dev, width, width, init);
            layers[2 * i + 1] = new ReLU();
        }
        try (Sequential m = new Sequential(layers); Tensor x = dev.randn(new Generator(4), 512, width)) {
            long gradBytes = 4 * m.parameterCount();
            long basePeak = peak(m, x, m::forward);
            long ckPeak = peak(m, x, in -> Checkpoint.checkpointSequential(m, 6, in));
            assertTrue(ckPeak < basePeak, "peak allocated with checkpointing " + ckPeak + " vs " + basePeak);
            // activations (peak minus the parameter gradients, equal in both runs): 4 blocks recomputed at a
            // time and 5 segment inputs, instead of 24 blocks
            assertTrue(ckPeak - gradBytes < 0.6 * (basePeak - gradBytes), "activation peak with checkpointing "
                    + (ckPeak - gradBytes) + " vs " + (basePeak - gradBytes));
            m.zeroGrad(true);
        }
    }

    private long peak(Sequential m, Tensor x, Function<Tensor, Tensor> forward) {
        m.zeroGrad(true);
        long before = dev.memoryAllocated();
        dev.allocator().resetPeakMemoryStats();
        try (MemoryScope s = MemoryScope.open()) {
            forward.apply(x).sum().backward();
        }
        // activations only: parameter gradients are the same in both runs and stay allocated
        return dev.allocator().maxMemoryAllocated() - before;
    }
}
