package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.data.CharVocabulary;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BatchSizeFinderTest {
    static final CharVocabulary VOCAB = CharVocabulary.of("abcdefghijklmnopqrstuvwxyz .,\n");

    static List<BatchSizeFinder.Result> search(String device, TrainOptions base, int maxBatch) {
        try (DeviceBackend dev = Devices.open(device); CachingAllocator alloc = CachingAllocator.create(dev)) {
            BatchSizeFinder f = base.isTransformer() ? BatchSizeFinder.forTransformer(alloc, VOCAB, maxBatch)
                    : BatchSizeFinder.forMlp(alloc, 784, 10, maxBatch);
            List<BatchSizeFinder.Result> out = BatchSizeFinder.standardSettings(base, base.isTransformer() ? base.layers() : 5, Precision.BF16)
                    .stream().map(f::find).toList();
            assertEquals(0, alloc.memoryAllocated(), "every try freed everything");
            return out;
        }
    }

    /**
     * Every try of the dry run on sim, replayed for real on host: the same outcome and the same peak reserved and
     * allocated bytes, and the same largest batch for every setting. Exact, because host places segments as sim
     * does (at one constant offset), so the allocator's best fit breaks ties by address the same way on both.
     */
    @Test
    void dryRunOnSimPredictsTheRealRunOnHost() {
        TrainOptions lm = TrainOptions.defaults(ModelKind.TRANSFORMER).withHidden(32).withHeads(2).withLayers(2).withBlockSize(32);
        TrainOptions mlp = TrainOptions.defaults().withHidden(256).withLayers(2);
        for (TrainOptions base : List.of(lm, mlp)) {
            List<BatchSizeFinder.Result> sim = search("sim:12MiB", base, 4096);
            try (DeviceBackend dev = Devices.open("host:12MiB"); CachingAllocator alloc = CachingAllocator.create(dev)) {
                BatchSizeFinder host = base.isTransformer() ? BatchSizeFinder.forTransformer(alloc, VOCAB, 4096)
                        : BatchSizeFinder.forMlp(alloc, 784, 10, 4096);
                for (BatchSizeFinder.Result s : sim) {
                    assertTrue(s.largest() > 1 && s.largest() < 4096, s.technique() + ": " + s.largest());
                    for (BatchSizeFinder.Attempt a : s.attempts()) {
                        BatchSizeFinder.Attempt h = host.attempt(s.options(), a.batchSize());
                        String what = s.technique() + " batch " + a.batchSize();
                        assertEquals(a.fits(), h.fits(), what + ": fits");
                        assertEquals(a.peakReserved(), h.peakReserved(), what + ": peak reserved");
                        assertEquals(a.peakAllocated(), h.peakAllocated(), what + ": peak allocated");
                    }
                    BatchSizeFinder.Result real = host.find(s.options());
                    assertEquals(s.largest(), real.largest(), s.technique() + ": largest batch");
                    assertEquals(s.peakReserved(), real.peakReserved(), s.technique() + ": peak reserved");
                    assertEquals(s.peakAllocated(), real.peakAllocated(), s.technique() + ": peak allocated");
                }
                assertEquals(0, alloc.memoryAllocated());
            }
        }
    }

    @Test
    void searchDoublesThenBisects() {
        TrainOptions lm = TrainOptions.defaults(ModelKind.TRANSFORMER).withHidden(32).withHeads(2).withLayers(4).withBlockSize(64);
        BatchSizeFinder.Result r = search("sim:12MiB", lm, 1 << 20).getFirst();
        List<BatchSizeFinder.Attempt> a = r.attempts();
        int i = 0;
        for (int b = 1; a.get(i).fits(); b *= 2, i++) {
            assertEquals(b, a.get(i).batchSize());
        }
        int firstFail = a.get(i).batchSize();
        assertTrue(r.largest() >= firstFail / 2 && r.largest() < firstFail);
        // every later try halves the interval: about log2(firstFail / 2) of them
        assertTrue(a.size() - i - 1 <= Integer.numberOfTrailingZeros(firstFail), a.toString());
        for (BatchSizeFinder.Attempt t : a) {
            assertEquals(t.batchSize() <= r.largest(), t.fits(), t.toString());
        }
        // the techniques let a larger batch fit
        List<BatchSizeFinder.Result> all = search("sim:12MiB", lm, 1 << 20);
        assertTrue(all.get(1).largest() > all.get(0).largest(), "checkpointing: " + all);
        assertTrue(all.get(3).largest() > all.get(1).largest(), "checkpointing + bf16: " + all);
    }

    @Test
    void maxBatchCapsTheSearch() {
        TrainOptions mlp = TrainOptions.defaults().withHidden(16).withLayers(1);
        BatchSizeFinder.Result r = search("sim:64MiB", mlp, 40).getFirst();
        assertEquals(40, r.largest());
        assertEquals(List.of(1, 2, 4, 8, 16, 32, 40), r.attempts().stream().map(BatchSizeFinder.Attempt::batchSize).toList());
    }

    /**
     * The run (transformer, checkpointing and bf16, a small host device): the batch the finder chose
     * trains for two epochs and evaluates after each without running out of memory, and the first batch it
     * refused runs out of memory in the real run (whose two full steps, evaluation and next step are what a try
     * rehearses), so the verdict holds both ways.
     */
    @Test
    void theBatchTheFinderChoseRunsTheWholeJobAndTheNextOneDoesNot() {
        io.vram4j.data.CharCorpus corpus = io.vram4j.data.CharCorpus.bundled();
        CharVocabulary vocab = corpus.vocabulary();
        TrainOptions o = CharTransformerTest.tiny().withTestLimit(0).withCheckpoint(2).withAmp(Precision.BF16).withEpochs(2);
        io.vram4j.data.CharDataset[] d = CharTransformerTest.data(o, vocab, corpus);
        io.vram4j.data.Dataset test = Trainer.limit(d[1], 64);
        String device = "host:4MiB";
        BatchSizeFinder.Result r;
        try (DeviceBackend dev = Devices.open(device); CachingAllocator alloc = CachingAllocator.create(dev)) {
            r = BatchSizeFinder.forTransformer(alloc, vocab, 1024).evaluatingAtMost(test.size()).find(o);
        }
        assertTrue(r.largest() >= 1 && !r.hitUpperBound(), r.toString());
        BatchSizeFinder.Attempt refused = r.attempts().stream().filter(a -> a.batchSize() == r.largest() + 1).findFirst().orElseThrow();
        assertFalse(refused.fits());
        io.vram4j.data.Dataset train = Trainer.limit(d[0], 2 * (r.largest() + 1));
        for (int batch : new int[] {r.largest(), r.largest() + 1}) {
            boolean ran;
            try (DeviceBackend dev = Devices.open(device); CachingAllocator alloc = CachingAllocator.create(dev);
                 Trainer t = new Trainer(alloc, o.withBatchSize(batch), vocab)) {
                t.fit(train, test, TrainListener.NONE);
                ran = true;
            } catch (io.vram4j.alloc.DeviceOutOfMemoryException e) {
                ran = false;
            }
            assertEquals(batch == r.largest(), ran, "batch " + batch + " of " + r);
        }
    }

    /** A dry-run try on sim holds no batch in host memory: 3,000,000 MLP samples would need 9.4 GB of floats. */
    @Test
    void aTryOnSimAllocatesNoHostMemoryForData() {
        try (DeviceBackend dev = Devices.open("sim:1TiB"); CachingAllocator alloc = CachingAllocator.create(dev)) {
            BatchSizeFinder.Attempt a = BatchSizeFinder.forMlp(alloc, 784, 10, 1 << 30).attempt(TrainOptions.defaults(), 3_000_000);
            assertTrue(a.fits(), a.toString());
            // the input alone: 3,000,000 x 784 float32 on the device
            assertTrue(a.peakAllocated() > 3_000_000L * 784 * 4, a.toString());
            assertEquals(3_000_000, a.phases().evaluationBatch(), "evaluation at the training batch");
        }
    }

    @Test
    void aBatchBelowOneIsRefused() {
        try (DeviceBackend dev = Devices.open("sim:1GiB"); CachingAllocator alloc = CachingAllocator.create(dev)) {
            BatchSizeFinder f = BatchSizeFinder.forMlp(alloc, 784, 10, 16);
            IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                    () -> f.attempt(TrainOptions.defaults(), 0));
            assertTrue(e.getMessage().contains("at least 1"), e.getMessage());
            org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> f.evaluatingAtMost(0));
        }
    }

    @Test
    void aSearchThatFitsItsUpperBoundSaysSo() {
        BatchSizeFinder.Result r = search("sim:1GiB", TrainOptions.defaults().withHidden(16).withLayers(1), 100).getFirst();
        assertEquals(100, r.largest());
        assertTrue(r.hitUpperBound());
        BatchSizeFinder.Result small = search("sim:12MiB", TrainOptions.defaults().withHidden(256), 1 << 20).getFirst();
        assertFalse(small.hitUpperBound(), small.toString());
    }
}
