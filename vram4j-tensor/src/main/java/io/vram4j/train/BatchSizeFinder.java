package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.DeviceOutOfMemoryException;
import io.vram4j.data.Batch;
import io.vram4j.data.CharVocabulary;
import io.vram4j.device.Stream;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Finds the largest batch that trains without running out of device memory, as Lightning's batch-size
 * finder ({@code scale_batch_size(mode="binsearch")}) does: try batch sizes 1, 2, 4, ... until one fails with
 * {@link DeviceOutOfMemoryException}, then binary-search between the last that fitted and the first that
 * failed. A try builds the model and optimizer afresh and rehearses the whole job on synthetic batches: two
 * training steps (the second one with the optimizer state allocated, as every later step), one evaluation batch
 * of {@link TrainOptions#evalBatchSize()} samples (at most {@link #evaluatingAtMost the test set}) with the cache
 * as training left it, and one more training step after it, as the next epoch starts; then it frees everything.
 * A batch fits only if all of it fits, so a batch this finder chose does not run out of memory in evaluation
 * later. Between tries the allocator's cache is emptied ({@code torch.cuda.empty_cache()}) and its peak
 * statistics reset, so each try's peak is its own.
 *
 * <p>On a simulated device the ops compute nothing and the batches are placeholders that hold no host memory, so
 * a search is a dry run that takes milliseconds per try and predicts the real one: the same batch fits with the
 * same peak reserved bytes (except with fp16, where the real run may skip an optimizer step on overflowing
 * gradients and allocate the optimizer state later). {@code sim:SIZE} predicts the run on {@code host:SIZE}; a
 * sim standing for a CUDA GPU ({@code sim:H100-80GB}, {@code sim:SIZE:cc9.0}) predicts the run on that
 * {@code cuda} device, since its ops allocate as there (the CUDA kernels' workspace and temporaries included). For
 * the same limit on both, cap the GPU with a per-process memory fraction and give the sim the GPU's total
 * ({@link BatchSizeSearch}).
 *
 * <p>A finder made {@linkplain #forMlp(Device, int, int, int) from a tensor device} runs every try on it, with its
 * kernels: on {@code cuda} the CUDA module is loaded once and cuBLAS's workspace, taken at the first matrix product
 * of the first try, stays allocated across tries, as in a PyTorch process. A finder made from an allocator opens a
 * tensor device per try ({@link Device#of}). Not thread-safe.
 */
public final class BatchSizeFinder {
    private final CachingAllocator alloc;
    /** The tensor device every try runs on (its kernels shared), or null to open one per try. */
    private final Device device;
    private final CharVocabulary vocabulary;
    private final int features;
    private final int classes;
    private final int maxBatch;
    private final int evalLimit;
    /** The side stream of pinned batches ({@link PinnedRehearsal}), made once; null until needed. */
    private Stream copyStream;

    /**
     * One try.
     *
     * @param batchSize samples in the batch
     * @param fits false when it ran out of memory
     * @param peakAllocated the try's peak allocated bytes, training and evaluation (up to the failure, when it failed)
     * @param peakReserved the try's peak reserved bytes, training and evaluation
     * @param phases the training steps' and the evaluation's peaks apart
     * @param failedIn {@code "training"} or {@code "evaluation"} when it ran out of memory, else null
     * @param seconds wall time of the try
     */
    public record Attempt(int batchSize, boolean fits, long peakAllocated, long peakReserved, PhasePeaks phases,
                          String failedIn, double seconds) {
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
     * @param upperBound the largest batch the search was allowed to try
     */
    public record Result(TrainOptions options, int largest, long peakAllocated, long peakReserved, List<Attempt> attempts,
                         double seconds, int upperBound) {
        /** Copies the list. */
        public Result {
            attempts = List.copyOf(attempts);
        }

        /** @return true when the upper bound itself fitted: a larger batch might fit too, the search did not try it */
        public boolean hitUpperBound() {
            return largest == upperBound;
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
        return new BatchSizeFinder(alloc, null, null, features, classes, maxBatch, Integer.MAX_VALUE);
    }

    /**
     * A finder for the MLP classifier whose tries all run on {@code device} (not closed by the finder).
     *
     * @param device the tensor device to fill, with the kernels every try computes with
     * @param features floats per sample
     * @param classes number of classes
     * @param maxBatch the largest batch to try
     * @return the finder
     */
    public static BatchSizeFinder forMlp(Device device, int features, int classes, int maxBatch) {
        return new BatchSizeFinder(device.allocator(), device, null, features, classes, maxBatch, Integer.MAX_VALUE);
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
        return new BatchSizeFinder(alloc, null, Objects.requireNonNull(vocabulary, "vocabulary"), 0, vocabulary.size(),
                maxBatch, Integer.MAX_VALUE);
    }

    /**
     * A finder for the character-level Transformer whose tries all run on {@code device} (not closed by the finder).
     *
     * @param device the tensor device to fill, with the kernels every try computes with
     * @param vocabulary the characters
     * @param maxBatch the largest batch to try
     * @return the finder
     */
    public static BatchSizeFinder forTransformer(Device device, CharVocabulary vocabulary, int maxBatch) {
        return new BatchSizeFinder(device.allocator(), device, Objects.requireNonNull(vocabulary, "vocabulary"), 0,
                vocabulary.size(), maxBatch, Integer.MAX_VALUE);
    }

    /**
     * The same finder with evaluation batches of at most {@code testSamples} samples, as {@link Trainer} evaluates
     * a test set of that size (without it, evaluation batches are {@link TrainOptions#evalBatchSize()}, which
     * over-estimates for a smaller test set).
     *
     * @param testSamples samples in the test set, at least 1
     * @return the new finder
     * @throws IllegalArgumentException when {@code testSamples < 1}
     */
    public BatchSizeFinder evaluatingAtMost(int testSamples) {
        if (testSamples < 1) {
            throw new IllegalArgumentException("the test set must have at least 1 sample, got " + testSamples);
        }
        return new BatchSizeFinder(alloc, device, vocabulary, features, classes, maxBatch, testSamples);
    }

    private BatchSizeFinder(CachingAllocator alloc, Device device, CharVocabulary vocabulary, int features, int classes,
                            int maxBatch, int evalLimit) {
        this.alloc = Objects.requireNonNull(alloc, "alloc");
        this.device = device;
        if (maxBatch < 1) {
            throw new IllegalArgumentException("--max-batch must be at least 1, got " + maxBatch);
        }
        this.vocabulary = vocabulary;
        this.features = features;
        this.classes = classes;
        this.maxBatch = maxBatch;
        this.evalLimit = evalLimit;
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
        return find(options, a -> { });
    }

    /**
     * {@link #find(TrainOptions)}, telling {@code onTry} about each try as it ends (for progress lines).
     *
     * @param options the setting
     * @param onTry called after each try, on this thread
     * @return the search
     */
    public Result find(TrainOptions options, java.util.function.Consumer<Attempt> onTry) {
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
            onTry.accept(a);
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
            onTry.accept(a);
            if (a.fits()) {
                good = mid;
                best = a;
            } else {
                bad = mid;
            }
        }
        return new Result(options, good, best == null ? 0 : best.peakAllocated(), best == null ? 0 : best.peakReserved(),
                attempts, (System.nanoTime() - t0) / 1e9, maxBatch);
    }

    /**
     * One try: model, optimizer and the rehearsal of the job (two steps of {@code batchSize} samples, one
     * evaluation batch, one more step), then everything freed and the cache emptied. On {@code sim} the batches
     * are placeholders: no host memory is allocated for data.
     *
     * @param options the setting
     * @param batchSize samples per step, at least 1
     * @return whether it fitted, with its peaks
     * @throws IllegalArgumentException when {@code batchSize < 1}
     */
    public Attempt attempt(TrainOptions options, int batchSize) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be at least 1, got " + batchSize);
        }
        TrainOptions o = options.withMicroBatch(Math.min(options.microBatch(), batchSize)).withBatchSize(batchSize)
                .withHistorySteps(0);
        int evalBatch = Math.min(o.evalBatchSize(), evalLimit);
        alloc.emptyCache();
        alloc.resetPeakMemoryStats();
        long t0 = System.nanoTime();
        boolean fits = true;
        boolean simulated = alloc.device().isSimulated();
        int classesOrVocab = vocabulary != null ? vocabulary.size() : classes;
        int f = vocabulary != null ? o.blockSize() + 1 : features;
        Batch batch = simulated ? null : syntheticBatch(o, batchSize, classesOrVocab, f);
        Batch evalData = simulated ? null : syntheticBatch(o, evalBatch, classesOrVocab, f);
        Rehearsal rehearsal = new Rehearsal(alloc);
        Device tryDevice = device != null ? device.withKernels(device.kernels()) : Device.of(alloc);
        try (ModelNetwork net = ModelNetwork.create(tryDevice, o, features, classes, vocabulary)) {
            if (pinsMemory(o)) {
                PinnedRehearsal pinned = new PinnedRehearsal(net, tryDevice, copyStream(), batch, evalData, features);
                rehearsal.run(2 * o.accumulate(), pinned.training(batchSize), evalBatch, pinned.evaluation(evalBatch),
                        o.accumulate());
            } else {
                Runnable step = simulated ? () -> net.simulatedTrainStep(batchSize) : () -> net.trainStep(batch);
                Runnable eval = simulated ? () -> net.simulatedEvaluate(evalBatch) : () -> net.evaluate(evalData);
                rehearsal.run(2 * o.accumulate(), step, evalBatch, eval, o.accumulate());
            }
        } catch (DeviceOutOfMemoryException e) {
            fits = false;
        }
        Attempt a = new Attempt(batchSize, fits, alloc.maxMemoryAllocated(), alloc.maxMemoryReserved(), rehearsal.peaks(),
                fits ? null : rehearsal.phase(), (System.nanoTime() - t0) / 1e9);
        alloc.emptyCache();
        return a;
    }

    /**
     * @return whether the job rehearsed moves its batches through pinned memory and a side stream, as
     *     {@link Trainer} does: {@link TrainOptions#pinMemory()}, the mlp, on {@code cuda} or a {@code sim} standing
     *     for a CUDA GPU
     */
    private boolean pinsMemory(TrainOptions o) {
        return PinnedRehearsal.applies(o, alloc.device());
    }

    /** @return the side stream pinned batches are allocated on, made at the first try that needs it */
    private Stream copyStream() {
        if (copyStream == null) {
            copyStream = alloc.device().newStream();
        }
        return copyStream;
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
     * @param amp the precision of the mixed-precision settings, {@link Precision#BF16} or {@link Precision#FP16}
     * @return the four settings, in that order
     */
    public static List<TrainOptions> standardSettings(TrainOptions base, int segments, Precision amp) {
        TrainOptions plain = base.withCheckpoint(0).withAmp(Precision.OFF).withAccumulate(1).withMicroBatch(0);
        return List.of(plain, plain.withCheckpoint(segments), plain.withAmp(amp), plain.withCheckpoint(segments).withAmp(amp));
    }
}
