package io.vram4j.train;

import io.vram4j.autograd.GradCheck;
import io.vram4j.autograd.NoGrad;
import io.vram4j.nn.Dropout;
import io.vram4j.nn.GELU;
import io.vram4j.nn.LayerNorm;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Module;
import io.vram4j.nn.Parameter;
import io.vram4j.nn.Sequential;
import io.vram4j.nn.TransformerBlock;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import io.vram4j.tensor.TestDevice;
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

/**
 * Checkpointed gradients equal the plain ones bit for bit, on the device a subclass opens: an MLP of blocks with
 * dropout, layer norm and residuals (whole, sequential in 1 to 4 segments, nested; dropout masks replayed by the
 * recomputation, and not without RNG preservation) and a transformer block with dropout; a gradcheck through a
 * checkpoint. Each test gets a fresh device, which must have nothing allocated after it but what its kernels hold
 * for good (on {@code cuda}, the cuBLAS workspace of the first matrix product, as PyTorch's handle holds it; a
 * product before the test makes it part of the baseline).
 */
abstract class CheckpointEqualitySuite {
    TestDevice target;
    Device dev;
    private long baseline;

    /** @return the device one test runs on (a new one per test; closed after it) */
    abstract TestDevice openDevice();

    @BeforeEach
    void open() {
        target = openDevice();
        target.require();   // skipped with the reason where the device is unavailable (a GPU suite without a GPU)
        dev = target.device();
        if (dev != null) {
            try (Tensor a = dev.randn(new Generator(1), 2, 2); Tensor p = a.matmul(a)) {
                assertEquals(2, p.shape()[0]);
            }
            baseline = dev.memoryAllocated();
        }
    }

    @AfterEach
    void close() {
        try {
            if (dev != null) {
                assertEquals(baseline, dev.memoryAllocated(), "everything freed but what the kernels hold");
            }
        } finally {
            target.close();
        }
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

    Sequential model(Generator dropGen, int blocks, int width) {
        Generator init = new Generator(7);
        Module[] ms = new Module[blocks];
        for (int i = 0; i < blocks; i++) {
            ms[i] = new Block(dev, width, init, dropGen);
        }
        return new Sequential(ms);
    }

    /** Runs forward + backward of sum(out * w) and returns every gradient (parameters, then x if any). */
    List<float[]> grads(Module m, Tensor x, Function<Tensor, Tensor> forward) {
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

    static void assertBitwiseEqual(List<float[]> expected, List<float[]> actual) {
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
}
