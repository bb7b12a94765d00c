package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.data.FashionMnist;
import io.vram4j.data.ImageDataset;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.MemorySnapshot;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TrainerTest {
    static ImageDataset train;
    static ImageDataset test;

    @BeforeAll
    static void load() {
        FashionMnist.Source bundled = FashionMnist.bundled();
        train = bundled.train();
        test = bundled.test();
    }

    /** A small MLP so that the test is quick even on the scalar kernels. */
    private static TrainOptions small() {
        return TrainOptions.defaults().withHidden(64).withLayers(1).withBatchSize(32).withEpochs(3).withLimit(3200)
                .withTestLimit(1000).withHistorySteps(3);
    }

    @Test
    void lossFallsAndAccuracyIsFarAboveChance() {
        List<StepInfo> steps = new ArrayList<>();
        List<EpochResult> epochs = new ArrayList<>();
        int[] captured = {0};
        TrainListener listener = new TrainListener() {
            @Override
            public void stepDone(StepInfo info) {
                steps.add(info);
            }

            @Override
            public void epochDone(EpochResult result) {
                epochs.add(result);
            }

            @Override
            public void historyCaptured(int n) {
                captured[0] = n;
            }
        };
        try (DeviceBackend dev = Devices.open("host:1GiB")) {
            CachingAllocator alloc = CachingAllocator.create(dev);
            TrainResult r;
            long paramBytes;
            try (Trainer trainer = new Trainer(alloc, small(), train.features(), train.numClasses())) {
                assertEquals(784L * 64 + 64 + 64 * 10 + 10, trainer.parameters());
                paramBytes = alloc.memoryAllocated();
                assertTrue(paramBytes >= 4 * trainer.parameters());
                r = trainer.fit(train, test, listener);
            }
            assertEquals(0, alloc.memoryAllocated(), "parameters and optimizer state freed on close");
            alloc.close(); // throws if anything leaked

            assertEquals(300, steps.size(), "3 epochs of 100 steps");
            assertEquals(3, epochs.size());
            assertEquals(3, captured[0]);
            assertTrue(epochs.get(2).loss() < epochs.get(0).loss(), "loss falls: " + epochs);
            assertTrue(steps.getLast().loss() < 0.8 * steps.getFirst().loss(), "loss falls from the first step");
            assertTrue(r.test().accuracy() > 0.6, "test accuracy " + r.test().accuracy());
            assertEquals(1000, r.test().samples());
            assertEquals(3200, r.trainSamples());
            assertTrue(r.samplesPerSec() > 0);
            // memory: parameters and momentum live at the end, activations came and went
            assertTrue(r.memory().allocated() >= 2 * paramBytes - 4096, r.memory().toString());
            assertTrue(r.memory().peakAllocated() > r.memory().allocated());
            assertTrue(r.memory().peakReserved() >= r.memory().peakAllocated());
            assertEquals(r.memory().peakAllocated(), r.memoryStats().get("allocated_bytes.all.peak"));
            assertTrue(r.memorySummary().contains("Allocated memory"));
            assertTrue(r.epochs().getLast().memory().line("epoch 3").startsWith("epoch 3: allocated "));
            // the snapshot holds the trace of the first steps
            MemorySnapshot snap = r.snapshot();
            assertNotNull(snap);
            assertEquals(3, r.historySteps());
            assertFalse(snap.segments().isEmpty());
        }
    }

    @Test
    void trainingIsDeterministicForASeed() {
        TrainOptions opts = small().withEpochs(1).withLimit(640).withTestLimit(200).withHistorySteps(0);
        double[] acc = new double[2];
        for (int run = 0; run < 2; run++) {
            try (DeviceBackend dev = Devices.open("host:1GiB")) {
                CachingAllocator alloc = CachingAllocator.create(dev);
                try (Trainer trainer = new Trainer(alloc, opts, 784, 10)) {
                    TrainResult r = trainer.fit(train, test, TrainListener.NONE);
                    acc[run] = r.finalTrainLoss();
                    assertNull(r.snapshot());
                }
                alloc.close();
            }
        }
        assertEquals(acc[0], acc[1], 1e-3);
    }

    @Test
    void dryRunOnASimulatedDeviceMeasuresOneStep() {
        TrainOptions opts = TrainOptions.defaults(); // 784-512-512-10, batch 128, SGD with momentum
        try (DeviceBackend dev = Devices.open("sim:1GiB")) {
            CachingAllocator alloc = CachingAllocator.create(dev);
            DryRunResult r;
            try (Trainer trainer = new Trainer(alloc, opts, 784, 10)) {
                r = trainer.dryRun(train);
            }
            alloc.close();
            long params = 4 * (784L * 512 + 512 + 512L * 512 + 512 + 512 * 10 + 10);
            assertEquals(128, r.batchSize());
            // after the step: parameters and momentum buffers
            assertTrue(r.memory().allocated() >= 2 * params, r.memory().toString());
            // at the peak: parameters, gradients and momentum, plus activations
            assertTrue(r.memory().peakAllocated() >= 3 * params, r.memory().toString());
            assertTrue(r.memory().peakAllocated() < 3 * params + 4 * 1024 * 1024, r.memory().toString());
            assertNotNull(r.snapshot());
        }
    }

    /**
     * The dry run of the whole job on sim (no data read, nothing computed) predicts the real run on host: the
     * training steps' and the evaluation's allocated peaks apart, each epoch, and the evaluation batch.
     */
    @Test
    void dryRunOnSimPredictsTheTrainingAndEvaluationPeaksOfTheRealRun() {
        TrainOptions o = small().withHistorySteps(0).withLimit(128).withTestLimit(100).withEpochs(2).withBatchSize(48)
                .withPrefetch(0);
        DryRunResult dry;
        try (DeviceBackend dev = Devices.open("sim:1GiB"); CachingAllocator alloc = CachingAllocator.create(dev);
             Trainer trainer = new Trainer(alloc, o, 784, 10)) {
            dry = trainer.dryRun(train, test.limit(100));
        }
        assertEquals(48, dry.peaks().evaluationBatch());
        assertTrue(dry.peaks().evaluationAllocated() > 0 && dry.peaks().trainingAllocated() > dry.peaks().evaluationAllocated(),
                dry.peaks().toString());
        try (DeviceBackend dev = Devices.open("host:1GiB"); CachingAllocator alloc = CachingAllocator.create(dev);
             Trainer trainer = new Trainer(alloc, o, 784, 10)) {
            TrainResult r = trainer.fit(train, test, TrainListener.NONE);
            assertEquals(2, r.epochs().size());
            // epoch 1's first step has no optimizer state yet; from the second step on every step peaks alike
            for (EpochResult e : r.epochs()) {
                assertEquals(dry.peaks().trainingAllocated(), e.peaks().trainingAllocated(), "epoch " + e.epoch());
                assertEquals(dry.peaks().evaluationAllocated(), e.peaks().evaluationAllocated(), "epoch " + e.epoch());
                assertEquals(48, e.peaks().evaluationBatch());
            }
            assertEquals(dry.peaks().peakAllocated(), r.peaks().peakAllocated());
            assertTrue(r.peaks().peakReserved() <= dry.peaks().peakReserved(), r.peaks() + " vs " + dry.peaks());
        }
    }

    @Test
    void trainStepLowersTheLossOnARepeatedBatchAndFreesItsBuffers() {
        TrainOptions opts = small().withSchedule("constant").withLr(0.05).withHistorySteps(0);
        float[] x = new float[32 * 784];
        int[] y = new int[32];
        for (int i = 0; i < 32; i++) {
            train.copyFeatures(i, x, i * 784);
            y[i] = train.label(i);
        }
        io.vram4j.data.Batch batch = new io.vram4j.data.Batch(0, 32, 784, x, y);
        try (DeviceBackend dev = Devices.open("host:1GiB")) {
            CachingAllocator alloc = CachingAllocator.create(dev);
            try (Trainer trainer = new Trainer(alloc, opts, 784, 10)) {
                // each tensor's block is rounded up to 512 bytes, as PyTorch's allocator does
                long params = round512(4 * 784L * 64) + round512(4 * 64) + round512(4 * 64 * 10) + round512(4 * 10);
                assertEquals(params, alloc.memoryAllocated());
                double first = trainer.trainStep(batch);
                // after a step only parameters and momentum buffers are live
                assertEquals(2 * params, alloc.memoryAllocated());
                double last = first;
                for (int i = 0; i < 20; i++) {
                    last = trainer.trainStep(batch);
                    assertEquals(2 * params, alloc.memoryAllocated());
                }
                assertTrue(first > 1.5 && first < 3.5, "initial loss near ln(10): " + first);
                assertTrue(last < first / 2, first + " -> " + last);
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> trainer.trainStep(new io.vram4j.data.Batch(0, 1, 10, new float[10], new int[1])));
                assertTrue(e.getMessage().contains("expects 784"), e.getMessage());
            }
            alloc.close();
        }
    }

    private static long round512(long bytes) {
        return (bytes + 511) / 512 * 512;
    }

    @Test
    void mismatchedDataIsRejected() {
        try (DeviceBackend dev = Devices.open("sim:1GiB")) {
            CachingAllocator alloc = CachingAllocator.create(dev);
            try (Trainer trainer = new Trainer(alloc, small().withHistorySteps(0), 100, 10)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> trainer.fit(train, test, TrainListener.NONE));
                assertTrue(e.getMessage().contains("the model expects 100 and 10"), e.getMessage());
            }
            alloc.close();
        }
    }

    @Test
    void optionsAreCheckedWithTheOptionName() {
        TrainOptions d = TrainOptions.defaults();
        assertEquals("--batch-size must be at least 1, got 0",
                assertThrows(IllegalArgumentException.class, () -> d.withBatchSize(0)).getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withOptimizer(OptimizerKind.parse("adam"))).getMessage()
                .startsWith("--optimizer: unknown optimizer 'adam'"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withModel(ModelKind.parse("cnn"))).getMessage().startsWith("--model"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withLr(-1)).getMessage().startsWith("--lr"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withLr(Double.NaN)).getMessage().startsWith("--lr"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withSchedule("step")).getMessage().startsWith("--schedule"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> d.withLimit(-1)).getMessage().startsWith("--limit"));
        assertEquals("mlp 784-512-512-10 relu, sgd lr 0.05 momentum 0.9, cosine schedule, batch 128, 3 epochs, seed 42",
                d.describe(784, 10));
        // cosine schedule: full rate at the start, half way at the middle, near 0 at the end
        assertEquals(0.05, d.learningRate(0, 100), 1e-12);
        assertEquals(0.025, d.learningRate(50, 100), 1e-12);
        assertTrue(d.learningRate(99, 100) < 0.001);
        assertEquals(0.05, d.withSchedule("constant").learningRate(99, 100), 1e-12);
    }
}
