package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharDataset;
import io.vram4j.data.CharVocabulary;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CharTransformerTest {
    /** A tiny GPT: 2 blocks of width 32, 2 heads, context 16. */
    static TrainOptions tiny() {
        return TrainOptions.defaults(ModelKind.TRANSFORMER).withHidden(32).withHeads(2).withLayers(2).withBlockSize(16)
                .withBatchSize(16).withLr(3e-3).withHistorySteps(0).withTestLimit(64).withPrefetch(0);
    }

    static CharDataset[] data(TrainOptions o, CharVocabulary v, CharCorpus c) {
        return new CharDataset[] {new CharDataset(c.trainText(), v, o.blockSize(), o.blockSize(), "train"),
                new CharDataset(c.validationText(), v, o.blockSize(), o.blockSize(), "validation")};
    }

    @Test
    void languageModelLearnsEnglishCharactersAndGeneratesText() {
        CharCorpus corpus = CharCorpus.bundled();
        CharVocabulary vocab = corpus.vocabulary();
        TrainOptions o = tiny().withMaxSteps(60).withSchedule("constant");
        CharDataset[] d = data(o, vocab, corpus);
        try (DeviceBackend dev = Devices.open("host:1GiB"); CachingAllocator alloc = CachingAllocator.create(dev)) {
            try (Trainer t = new Trainer(alloc, o, vocab)) {
                double before = t.evaluate(d[1]).loss();
                // an untrained model predicts about uniformly: ln(vocabulary size)
                assertEquals(Math.log(vocab.size()), before, 0.3);
                TrainResult r = t.fit(d[0], d[1], TrainListener.NONE);
                double after = r.test().loss();
                assertTrue(after < before - 1.0, "validation loss " + before + " -> " + after);
                // statistics count characters: 60 steps x 16 windows x 16 characters
                assertEquals(60L * 16 * 16, r.epochs().getFirst().samples());
                String s = t.sample("The ", 40, 1.0, 7);
                assertTrue(s.startsWith("The "));
                assertEquals(44, s.length());
                for (char c : s.toCharArray()) {
                    assertTrue(vocab.encode(c) >= 0);
                }
                assertEquals(s, t.sample("The ", 40, 1.0, 7), "same seed, same sample");
            }
            assertEquals(0, alloc.memoryAllocated(), "everything freed");
        }
    }

    @Test
    void trainerRejectsAMismatchedModel() {
        CharVocabulary v = CharVocabulary.of("abc");
        try (DeviceBackend dev = Devices.open("host:64MiB"); CachingAllocator alloc = CachingAllocator.create(dev)) {
            assertThrows(IllegalArgumentException.class, () -> new Trainer(alloc, TrainOptions.defaults(), v));
            assertThrows(IllegalArgumentException.class, () -> new Trainer(alloc, tiny(), 17, 3));
        }
    }

    @Test
    void optionsCheckTheTransformerSettings() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> tiny().withHeads(3));
        assertTrue(e.getMessage().contains("--heads 3"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> tiny().withBlockSize(0));
        assertThrows(IllegalArgumentException.class, () -> tiny().withAmp(Precision.parse("fp8")));
        assertThrows(IllegalArgumentException.class, () -> tiny().withAccumulate(0));
        assertThrows(IllegalArgumentException.class, () -> tiny().withMicroBatch(-1));
        assertThrows(IllegalArgumentException.class, () -> tiny().withMicroBatch(17));
        assertThrows(IllegalArgumentException.class, () -> tiny().withCheckpoint(-2));
        assertEquals(Precision.OFF, tiny().withAmp(Precision.parse("none")).amp());
        assertTrue(tiny().withCheckpoint(2).withAmp(Precision.parse("BF16")).describe(17, 96).endsWith("checkpointing (2 segments), bf16 autocast"));
    }
}
