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
            List<BatchSizeFinder.Result> out = BatchSizeFinder.standardSettings(base, base.isTransformer() ? base.layers() : 5, "bf16")
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
        TrainOptions lm = TrainOptions.defaults("transformer").withHidden(32).withHeads(2).withLayers(2).withBlockSize(32);
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
        TrainOptions lm = TrainOptions.defaults("transformer").withHidden(32).withHeads(2).withLayers(4).withBlockSize(64);
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
}
