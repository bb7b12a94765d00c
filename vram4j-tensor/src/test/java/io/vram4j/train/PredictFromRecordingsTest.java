package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.DeviceOutOfMemoryException;
import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharDataset;
import io.vram4j.data.CharVocabulary;
import io.vram4j.data.Dataset;
import io.vram4j.data.FashionMnist;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.predict.Growth;
import io.vram4j.predict.Prediction;
import io.vram4j.predict.Predictor;
import io.vram4j.predict.Recording;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.Replayer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code vram4j predict} validated on vram4j's own recordings on {@code host}: the first three training steps of
 * the MLP and the Transformer, with and without checkpointing and bf16, recorded at batches 2 and 4, predict the
 * recording at 8x and 32x the larger batch (32 and 128) within 1% of its peak reserved; and on a grid of
 * capacities around the peak the fit/out-of-memory verdict is the real run's on a host device of that capacity.
 */
class PredictFromRecordingsTest {
    static final int STEPS = 3;
    static CharVocabulary vocab;
    static CharDataset text;
    static Dataset images;

    @BeforeAll
    static void load() {
        CharCorpus corpus = CharCorpus.bundled();
        vocab = corpus.vocabulary();
        text = new CharDataset(corpus.trainText(), vocab, 16, 16, "train");
        images = FashionMnist.bundled().train();
    }

    static Stream<TrainOptions> cases() {
        TrainOptions mlp = TrainOptions.defaults().withHidden(64).withLayers(2);
        TrainOptions lm = CharTransformerTest.tiny();
        List<TrainOptions> out = new ArrayList<>();
        for (TrainOptions base : List.of(mlp, lm)) {
            TrainOptions o = base.withHistorySteps(STEPS).withMaxSteps(STEPS).withEpochs(1).withTestLimit(4).withPrefetch(0);
            out.add(o);
            out.add(o.withCheckpoint(2));
            out.add(o.withAmp(Precision.BF16));
            out.add(o.withCheckpoint(2).withAmp(Precision.BF16));
        }
        return out.stream();
    }

    /** @return the snapshot of the first steps at {@code batch}, or null when the run ran out of memory */
    static MemorySnapshot run(TrainOptions o, int batch, String device) {
        TrainOptions b = o.withBatchSize(batch).withLimit(STEPS * batch);
        Dataset data = o.isTransformer() ? text : images;
        try (DeviceBackend dev = Devices.open(device); CachingAllocator alloc = CachingAllocator.create(dev);
             Trainer t = o.isTransformer() ? new Trainer(alloc, b, vocab) : new Trainer(alloc, b, 784, 10)) {
            return t.fit(data, data, TrainListener.NONE).snapshot();
        } catch (DeviceOutOfMemoryException e) {
            return null;
        }
    }

    static long recordedPeakReserved(MemorySnapshot s) {
        return Replayer.replay(s, ReplayOptions.EXACT).getFirst().recordedPeakReserved();
    }

    @ParameterizedTest
    @MethodSource("cases")
    void predictsThePeakAt8xAnd32xAndTheVerdictOnAGridOfCapacities(TrainOptions o) {
        // one call site for every recording, as one script run with other arguments: the frames match
        java.util.Map<Integer, MemorySnapshot> recorded = new java.util.HashMap<>();
        for (int batch : new int[] {2, 4, 32, 128}) {
            recorded.put(batch, run(o, batch, "host:1GiB"));
        }
        Predictor p = new Predictor(List.of(new Recording("b2", recorded.get(2), 2), new Recording("b4", recorded.get(4), 4)),
                Growth.AFFINE);
        for (int target : new int[] {32, 128}) {
            long peak = recordedPeakReserved(recorded.get(target));
            Prediction pred = p.predict(target, null, 0);
            double error = Math.abs(pred.peakReserved() - peak) / (double) peak;
            assertTrue(error <= 0.01, o.techniques() + " at " + target + ": predicted " + pred.peakReserved() + ", recorded " + peak);
            if (target == 32) {
                java.util.Set<Boolean> verdicts = new java.util.HashSet<>();
                for (long cap = Math.max(1 << 20, peak - (4 << 20)); cap <= peak + (2 << 20); cap += 1 << 20) {
                    boolean real = run(o, target, "host:" + (cap >> 20) + "MiB") != null;
                    assertEquals(real, p.predict(target, null, cap).fits(), o.techniques() + " at " + target + " on " + (cap >> 20) + " MiB");
                    verdicts.add(real);
                }
                assertEquals(2, verdicts.size(), "the grid has capacities that fit and capacities that do not");
            }
        }
    }
}
