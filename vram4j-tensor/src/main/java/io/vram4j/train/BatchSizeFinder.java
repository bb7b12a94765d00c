package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.DeviceOutOfMemoryException;
import io.vram4j.data.Batch;
import io.vram4j.data.CharVocabulary;
import io.vram4j.tensor.Generator;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Finds the largest batch that trains without running out of device memory, as Lightning's batch-size
 * finder ({@code scale_batch_size(mode="binsearch")}) does: try batch sizes 1, 2, 4, ... until one fails with
 * {@link DeviceOutOfMemoryException}, then binary-search between the last that fitted and the first that
 * failed. A try builds the model and optimizer afresh, runs two training steps on a synthetic batch (the
 * second one with the optimizer state allocated, as every later step) and frees everything; between tries
 * the allocator's cache is emptied ({@code torch.cuda.empty_cache()}) and its peak statistics reset, so each
 * try's peak is its own.
 *
 * <p>On a simulated device ({@code sim:SIZE}) the ops allocate exactly as on {@code host} and compute nothing,
 * so a search is a dry run that takes milliseconds per try and predicts the real one: the same batch fits
 * with the same peak reserved bytes (except with fp16, where the real run may skip an optimizer step on
 * overflowing gradients and allocate the optimizer state later). Not thread-safe.
 */
public final class BatchSizeFinder {
    private final CachingAllocator alloc;
    private final CharVocabulary vocabulary;
    private final int features;
    private final int classes;
    private final int maxBatch;

    /**
     * One try.
     *
     * @param batchSize samples in the batch
     * @param fits false when it ran out of memory
     * @param peakAllocated the try's peak allocated bytes (up to the failure, when it failed)
     * @param peakReserved the try's peak reserved bytes
     * @param seconds wall time of the try
     */
    public record Attempt(int batchSize, boolean fits, long peakAllocated, long peakReserved, double seconds) {
    }

    /**
     * The search for one setting.
     *
     * @param options the setting (its batch size is ignored)
     * @param largest the largest batch that fits; 0 when not even one sample does
     * @param peakAllocated peak allocated bytes of that batch's try (0 when none fits)
     * @param peakReserved peak reserved bytes of that batch's try (0 when none fits)
     * @param attempts every try, in order
     * @param seconds wall time of the search
     */
    public record Result(TrainOptions options, int largest, long peakAllocated, long peakReserved, List<Attempt> attempts,
                         double seconds) {
        /** Copies the list. */
        public Result {
            attempts = List.copyOf(attempts);
        }

        /** @return the setting's techniques in words, {@code "baseline"} when none */
        public String technique() {
            String t = options.techniques();
            return t.isEmpty() ? "baseline" : t;
        }
    }

    /**
     * A finder for the MLP classifier.
     *
     * @param alloc the allocator of the device to fill
     * @param features floats per sample
     * @param classes number of classes
     * @param maxBatch the largest batch to try
     * @return the finder
     */
    public static BatchSizeFinder forMlp(CachingAllocator alloc, int features, int classes, int maxBatch) {
        return new BatchSizeFinder(alloc, null, features, classes, maxBatch);
    }

    /**
     * A finder for the character-level Transformer.
     *
     * @param alloc the allocator of the device to fill
     * @param vocabulary the characters
     * @param maxBatch the largest batch to try
     * @return the finder
     */
    public static BatchSizeFinder forTransformer(CachingAllocator alloc, CharVocabulary vocabulary, int maxBatch) {
        return new BatchSizeFinder(alloc, Objects.requireNonNull(vocabulary, "vocabulary"), 0, vocabulary.size(), maxBatch);
    }

    private BatchSizeFinder(CachingAllocator alloc, CharVocabulary vocabulary, int features, int classes, int maxBatch) {
        this.alloc = Objects.requireNonNull(alloc, "alloc");
        if (maxBatch < 1) {
            throw new IllegalArgumentException("--max-batch must be at least 1, got " + maxBatch);
        }
        this.vocabulary = vocabulary;
        this.features = features;
        this.classes = classes;
        this.maxBatch = maxBatch;
    }

    /**
     * Searches the largest batch for {@code options} (model, optimizer and techniques; with micro-batching
     * the micro-batch stays as given).
     *
     * @param options the setting
     * @return the search
     * @throws IllegalArgumentException when the options' model does not match this finder
     */
    public Result find(TrainOptions options) {
        if (options.isTransformer() != (vocabulary != null)) {
            throw new IllegalArgumentException("this finder is for the " + (vocabulary != null ? "transformer" : "mlp")
                    + ", not " + options.model());
        }
        long t0 = System.nanoTime();
        List<Attempt> attempts = new ArrayList<>();
        int good = 0;
        Attempt best = null;
        int bad = 0;
        for (int b = 1; ; b = (int) Math.min((long) b * 2, maxBatch)) {
            Attempt a = attempt(options, b);
            attempts.add(a);
            if (!a.fits()) {
                bad = b;
                break;
            }
            good = b;
            best = a;
            if (b == maxBatch) {
                break;
            }
        }
        while (bad > 0 && bad - good > 1) {
            int mid = good + (bad - good) / 2;
            Attempt a = attempt(options, mid);
            attempts.add(a);
            if (a.fits()) {
                good = mid;
                best = a;
            } else {
                bad = mid;
            }
        }
        return new Result(options, good, best == null ? 0 : best.peakAllocated(), best == null ? 0 : best.peakReserved(),
                attempts, (System.nanoTime() - t0) / 1e9);
    }

    /**
     * One try: model, optimizer and two steps of {@code batchSize} samples, then everything freed and the cache
     * emptied.
     *
     * @param options the setting
     * @param batchSize samples per step
     * @return whether it fitted, with its peaks
     */
    public Attempt attempt(TrainOptions options, int batchSize) {
        TrainOptions o = options.withMicroBatch(Math.min(options.microBatch(), batchSize)).withBatchSize(batchSize)
                .withHistorySteps(0);
        alloc.emptyCache();
        alloc.resetPeakMemoryStats();
        long t0 = System.nanoTime();
        boolean fits = true;
        Batch batch = syntheticBatch(o, batchSize, vocabulary != null ? vocabulary.size() : classes,
                vocabulary != null ? o.blockSize() + 1 : features);
        try (ModelNetwork net = vocabulary != null ? new CharTransformer(alloc, o, vocabulary)
                : new TensorMlp(alloc, o, features, classes)) {
            for (int step = 0; step < 2 * o.accumulate(); step++) {
                net.trainStep(batch);
            }
        } catch (DeviceOutOfMemoryException e) {
            fits = false;
        }
        Attempt a = new Attempt(batchSize, fits, alloc.maxMemoryAllocated(), alloc.maxMemoryReserved(),
                (System.nanoTime() - t0) / 1e9);
        alloc.emptyCache();
        return a;
    }

    /**
     * A batch of random samples: token ids below {@code classes} for the transformer, N(0, 1) features for the MLP.
     *
     * @param f floats per sample ({@code blockSize + 1} for the transformer)
     */
    static Batch syntheticBatch(TrainOptions o, int b, int classes, int f) {
        Generator gen = new Generator(o.seed());
        float[] x = new float[b * f];
        int[] y = new int[b];
        for (int i = 0; i < x.length; i++) {
            x[i] = o.isTransformer() ? (float) Math.floorMod(gen.nextLong(), classes) : (float) gen.nextGaussian();
        }
        for (int i = 0; i < b; i++) {
            y[i] = (int) Math.floorMod(gen.nextLong(), classes);
        }
        return new Batch(0, b, f, x, y);
    }

    /**
     * The four settings of the table: baseline, checkpointing, mixed precision, both.
     *
     * @param base the model and optimizer (its techniques are replaced)
     * @param segments checkpoint segments
     * @param amp {@code bf16} or {@code fp16}
     * @return the four settings, in that order
     */
    public static List<TrainOptions> standardSettings(TrainOptions base, int segments, String amp) {
        TrainOptions plain = base.withCheckpoint(0).withAmp("off").withAccumulate(1).withMicroBatch(0);
        return List.of(plain, plain.withCheckpoint(segments), plain.withAmp(amp), plain.withCheckpoint(segments).withAmp(amp));
    }
}
