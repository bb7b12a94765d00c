package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharDataset;
import io.vram4j.data.CharVocabulary;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.nn.Parameter;
import io.vram4j.tensor.MemoryCategory;
import io.vram4j.tensor.MemoryProfile;
import io.vram4j.tensor.MemoryProfiler;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The peak of a training step split by category. */
class MemoryProfileTest {
    record Run(MemoryProfile profile, long peakAllocated, long parameterBlocks, long parameterBytes) {
    }

    /** Profiles {@code steps} training steps of a tiny GPT. */
    static Run profile(TrainOptions o, int steps) {
        CharCorpus corpus = CharCorpus.bundled();
        CharVocabulary vocab = corpus.vocabulary();
        CharDataset train = new CharDataset(corpus.trainText(), vocab, o.blockSize(), o.blockSize(), "train");
        try (DeviceBackend dev = Devices.open("host:1GiB"); CachingAllocator alloc = CachingAllocator.create(dev);
             Trainer t = new Trainer(alloc, o, vocab)) {
            long blocks = 0;
            long bytes = 0;
            for (Parameter p : t.model().parameters()) {
                blocks += alloc.blockSize(p.storage().address());
                bytes += p.nbytes();
            }
            try (MemoryProfiler prof = MemoryProfiler.start(alloc)) {
                for (int i = 0; i < steps; i++) {
                    t.dryRun(train);
                }
                return new Run(prof.profile(), alloc.maxMemoryAllocated(), blocks, bytes);
            }
        }
    }

    @Test
    void categoriesAddUpToTheAllocatorsPeak() {
        Run r = profile(CharTransformerTest.tiny().withLayers(3), 2);
        MemoryProfile p = r.profile();
        assertEquals(r.peakAllocated(), p.peakAllocated(), "the profiler saw the allocator's peak");
        long sum = 0;
        for (MemoryCategory c : MemoryCategory.values()) {
            sum += p.bytes(c);
        }
        assertEquals(0, p.untracked(), "every allocated byte belongs to a tensor storage");
        assertEquals(p.peakAllocated(), sum);
        // parameters: the blocks of the parameter storages (their sizes rounded up to 512 bytes)
        assertEquals(r.parameterBlocks(), p.bytes(MemoryCategory.PARAMETERS));
        assertTrue(r.parameterBlocks() >= r.parameterBytes() && r.parameterBlocks() < r.parameterBytes() + 512L * 64);
        // the second step's peak has AdamW's two moments per parameter
        assertEquals(2 * r.parameterBlocks(), p.bytes(MemoryCategory.OPTIMIZER_STATE));
        assertTrue(p.bytes(MemoryCategory.ACTIVATIONS) > 0, p.table());
        assertTrue(p.where().startsWith("forward") || p.where().startsWith("backward") || p.where().startsWith("optimizer"),
                p.where());
        assertTrue(p.table().contains("optimizer state"), p.table());
    }

    @Test
    void checkpointingShrinksTheActivationsAtThePeak() {
        TrainOptions o = CharTransformerTest.tiny().withLayers(4).withBlockSize(64);
        MemoryProfile base = profile(o, 1).profile();
        MemoryProfile ckpt = profile(o.withCheckpoint(4), 1).profile();
        assertTrue(ckpt.bytes(MemoryCategory.ACTIVATIONS) < 0.5 * base.bytes(MemoryCategory.ACTIVATIONS),
                base.table() + ckpt.table());
    }

    @Test
    void onlyOneProfilerAtATime() {
        try (DeviceBackend dev = Devices.open("host:64MiB"); CachingAllocator alloc = CachingAllocator.create(dev);
             MemoryProfiler p = MemoryProfiler.start(alloc)) {
            assertThrows(IllegalStateException.class, () -> MemoryProfiler.start(alloc));
            assertEquals(0, p.profile().peakAllocated());
        }
    }
}
