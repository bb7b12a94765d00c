package io.vram4j.train;

import io.vram4j.autograd.NoGrad;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Module;
import io.vram4j.nn.ReLU;
import io.vram4j.nn.Sequential;
import io.vram4j.nn.TransformerBlock;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import io.vram4j.tensor.TestDevice;
import org.junit.jupiter.api.Test;

import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link CheckpointEqualitySuite} on {@code host}, and the rest of checkpointing's behaviour there. */
class CheckpointTest extends CheckpointEqualitySuite {

    @Override
    TestDevice openDevice() {
        return TestDevice.host("host:512MiB");
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
