package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharDataset;
import io.vram4j.data.CharVocabulary;
import io.vram4j.data.FashionMnist;
import io.vram4j.data.ImageDataset;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.nn.Parameter;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The train flags of the memory-saving techniques, on both models. */
class TrainTechniquesTest {
    static CharCorpus corpus;
    static CharVocabulary vocab;
    static ImageDataset images;

    @BeforeAll
    static void load() {
        corpus = CharCorpus.bundled();
        vocab = corpus.vocabulary();
        images = FashionMnist.bundled().test().limit(256);
    }

    static TrainOptions lm() {
        return CharTransformerTest.tiny().withLayers(3).withSchedule("constant");
    }

    static TrainOptions mlp() {
        return TrainOptions.defaults().withHidden(32).withLayers(2).withBatchSize(32).withHistorySteps(0).withPrefetch(0)
                .withSchedule("constant").withTestLimit(64);
    }

    /** Trains {@code steps} steps; returns {final train loss, peak allocated bytes, skipped steps} and the parameters. */
    static double[] run(TrainOptions o, int steps, List<float[]> params) {
        try (DeviceBackend dev = Devices.open("host:1GiB"); CachingAllocator alloc = CachingAllocator.create(dev)) {
            TrainResult r;
            long skipped;
            try (Trainer t = o.isTransformer() ? new Trainer(alloc, o, vocab)
                    : new Trainer(alloc, o, images.features(), images.numClasses())) {
                if (o.isTransformer()) {
                    CharDataset[] d = CharTransformerTest.data(o, vocab, corpus);
                    r = t.fit(d[0], d[1], TrainListener.NONE);
                } else {
                    r = t.fit(images, images, TrainListener.NONE);
                }
                skipped = t.skippedSteps();
                if (params != null) {
                    for (Parameter p : t.model().parameters()) {
                        params.add(p.toFloatArray());
                    }
                }
            }
            assertEquals(0, alloc.memoryAllocated(), "everything freed");
            return new double[] {r.finalTrainLoss(), alloc.maxMemoryAllocated(), skipped};
        }
    }

    @Test
    void everyTechniqueTrainsBothModels() {
        for (TrainOptions base : List.of(lm(), mlp())) {
            for (TrainOptions o : List.of(base.withCheckpoint(2), base.withAmp(Precision.BF16), base.withAmp(Precision.FP16),
                    base.withAccumulate(2), base.withMicroBatch(8), base.withCheckpoint(3).withAmp(Precision.BF16).withMicroBatch(8))) {
                double[] r = run(o.withMaxSteps(4), 4, null);
                assertTrue(Double.isFinite(r[0]) && r[0] > 0, o.describe(17, 96) + ": loss " + r[0]);
                assertEquals(o.amp() == Precision.FP16 ? 0 : -1, r[2], 0, "skipped steps are reported for fp16 only");
            }
        }
    }

    /** Peak allocated bytes of one training step. */
    static long stepPeak(TrainOptions o) {
        try (DeviceBackend dev = Devices.open("host:1GiB"); CachingAllocator alloc = CachingAllocator.create(dev);
             Trainer t = new Trainer(alloc, o, vocab)) {
            return t.dryRun(CharTransformerTest.data(o, vocab, corpus)[0]).memory().peakAllocated();
        }
    }

    @Test
    void checkpointingAndBf16LowerThePeakOfTheTransformer() {
        TrainOptions o = lm().withBlockSize(64);
        double base = stepPeak(o);
        double ckpt = stepPeak(o.withCheckpoint(3));
        double bf16 = stepPeak(o.withAmp(Precision.BF16));
        assertTrue(ckpt < 0.8 * base, "checkpointing: " + ckpt + " vs " + base);
        assertTrue(bf16 < base, "bf16: " + bf16 + " vs " + base);
    }

    @Test
    void microBatchesAndAccumulationGiveTheBigBatchStep() {
        List<float[]> whole = new ArrayList<>();
        run(mlp().withMaxSteps(1), 1, whole);
        List<float[]> micro = new ArrayList<>();
        run(mlp().withMaxSteps(1).withMicroBatch(8), 1, micro);
        List<float[]> accumulated = new ArrayList<>();
        // two batches of 16 from the same shuffled order are the first batch of 32
        run(mlp().withBatchSize(16).withAccumulate(2).withMaxSteps(2), 2, accumulated);
        for (List<float[]> other : List.of(micro, accumulated)) {
            assertEquals(whole.size(), other.size());
            for (int i = 0; i < whole.size(); i++) {
                float[] a = whole.get(i);
                float[] b = other.get(i);
                for (int j = 0; j < a.length; j++) {
                    assertEquals(a[j], b[j], 1e-5f * Math.max(1f, Math.abs(a[j])), "parameter " + i + " element " + j);
                }
            }
        }
    }
}
