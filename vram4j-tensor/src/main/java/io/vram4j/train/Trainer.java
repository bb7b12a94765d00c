package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.PeakRegion;
import io.vram4j.tensor.Device;
import io.vram4j.data.Batch;
import io.vram4j.data.CharVocabulary;
import io.vram4j.data.DataLoader;
import io.vram4j.data.Dataset;
import io.vram4j.data.DeviceBatch;
import io.vram4j.device.Stream;
import io.vram4j.memory.snapshot.MemorySnapshot;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Trains a classifier on a device through its caching allocator, and records where the memory went.
 *
 * <pre>{@code
 * try (DeviceBackend dev = Devices.open("host")) {
 *     CachingAllocator alloc = CachingAllocator.create(dev);
 *     FashionMnist.Source data = FashionMnist.resolve(null);
 *     ImageDataset train = data.train();
 *     try (Trainer trainer = new Trainer(alloc, TrainOptions.defaults(), train.features(), train.numClasses())) {
 *         TrainResult r = trainer.fit(train, data.test(), TrainListener.NONE);
 *         System.out.println(r.test().accuracy());
 *         System.out.print(r.memorySummary());
 *     }
 *     alloc.close(); // reports any leaked block
 * }
 * }</pre>
 *
 * <h2>Memory</h2>
 * The constructor allocates the parameters; each step allocates the batch, the activations, the gradients and
 * (at the first step) the optimizer state, and frees everything but parameters and optimizer state before the
 * next step; {@link #close()} frees those. Nothing is left to the garbage collector. With
 * {@link TrainOptions#historySteps()} &gt; 0 the allocator records its memory history (with Java stacks) from
 * the constructor on; after that many steps the trainer takes a {@linkplain CachingAllocator#snapshot()
 * snapshot} (returned in the result, for PyTorch's memory_viz) and stops recording, so the rest of training
 * runs at full speed.
 *
 * <p>Not thread-safe; the data loader's prefetch thread only touches Java arrays.
 */
public final class Trainer implements AutoCloseable {
    /** Capacity of the history ring buffer while the first steps are recorded. */
    public static final int HISTORY_ENTRIES = 100_000;

    private final CachingAllocator alloc;
    private final TrainOptions options;
    private final int features;
    private final int classes;
    private final Network net;
    /** The network's device. */
    private final Device dev;
    /** The side stream batches are copied on with pinned memory; made at the first pinned epoch. */
    private Stream copyStream;
    private boolean recording;
    private MemorySnapshot snapshot;
    private int recordedSteps;
    private boolean closed;

    /**
     * Creates the MLP classifier (allocating its parameters) and, if {@code options.historySteps() > 0}, starts
     * recording the allocator's memory history.
     *
     * @param alloc the allocator of the device to train on
     * @param options what to train ({@code model} must be {@code mlp})
     * @param features floats per sample
     * @param classes number of classes
     */
    public Trainer(CachingAllocator alloc, TrainOptions options, int features, int classes) {
        this(alloc, null, options, features, classes, null);
    }

    /**
     * Creates the character-level Transformer (allocating its parameters) for data sets of
     * {@link io.vram4j.data.CharDataset} windows of {@code options.blockSize() + 1} tokens; starts recording the
     * memory history if {@code options.historySteps() > 0}.
     *
     * @param alloc the allocator of the device to train on
     * @param options what to train ({@code model} must be {@code transformer})
     * @param vocabulary the characters
     */
    public Trainer(CachingAllocator alloc, TrainOptions options, CharVocabulary vocabulary) {
        this(alloc, null, options, options.blockSize() + 1, vocabulary.size(), vocabulary);
    }

    /**
     * A trainer whose tensors live on {@code device} and compute with its kernels (the seam that lets a test train
     * on a device-memory backend with kernels of its own); {@code device} stays open when the trainer closes.
     *
     * @param vocabulary the characters (transformer), or null (mlp)
     */
    static Trainer on(Device device, TrainOptions options, int features, int classes, CharVocabulary vocabulary) {
        Device view = device.withStream(device.stream()); // shares allocator and kernels, owns neither
        return vocabulary != null
                ? new Trainer(device.allocator(), view, options, options.blockSize() + 1, vocabulary.size(), vocabulary)
                : new Trainer(device.allocator(), view, options, features, classes, null);
    }

    /** @param device the network's device (owned: closed with it), or null for {@link Device#of} the allocator */
    private Trainer(CachingAllocator alloc, Device device, TrainOptions options, int features, int classes,
                    CharVocabulary vocabulary) {
        this.alloc = Objects.requireNonNull(alloc, "alloc");
        this.options = Objects.requireNonNull(options, "options");
        if (features < 1 || classes < 2) {
            throw new IllegalArgumentException("need at least 1 feature and 2 classes, got " + features + " and " + classes);
        }
        if (options.isTransformer() != (vocabulary != null)) {
            throw new IllegalArgumentException(options.isTransformer()
                    ? "the transformer is a language model: create the trainer with a CharVocabulary"
                    : "a vocabulary is only for --model transformer, not " + options.model());
        }
        this.features = features;
        this.classes = classes;
        if (options.historySteps() > 0) {
            alloc.recordMemoryHistory("all", "all", "java", HISTORY_ENTRIES);
            recording = true;
        }
        try {
            this.dev = device != null ? device : Device.of(alloc);
            this.net = ModelNetwork.create(dev, options, features, classes, vocabulary);
        } catch (RuntimeException e) {
            stopRecording();
            throw e;
        }
    }

    /**
     * Generates text with the language model (see {@link #Trainer(CachingAllocator, TrainOptions, CharVocabulary)}).
     *
     * @param prompt the beginning
     * @param length characters to generate
     * @param temperature softmax temperature, {@code > 0}
     * @param seed sampling seed
     * @return the prompt and the generated characters
     * @throws IllegalStateException when the model is not the language model
     * @throws UnsupportedOperationException on a device without storage
     */
    public String sample(String prompt, int length, double temperature, long seed) {
        ensureOpen();
        if (!(net instanceof CharTransformer lm)) {
            throw new IllegalStateException("only the transformer language model generates text");
        }
        return lm.sample(prompt, length, temperature, seed);
    }

    /**
     * @return optimizer steps the fp16 loss scaler skipped because gradients overflowed, or -1 without fp16
     */
    public long skippedSteps() {
        Techniques.ScalerStats s = ((ModelNetwork) net).scalerStats();
        return s == null ? -1 : s.skippedSteps();
    }

    /** @return the fp16 loss scaler's current scale, or NaN without fp16 */
    public double lossScale() {
        Techniques.ScalerStats s = ((ModelNetwork) net).scalerStats();
        return s == null ? Double.NaN : s.scale();
    }

    /** @return the model being trained (its parameters are live until {@link #close()}) */
    public io.vram4j.nn.Module model() {
        return ((ModelNetwork) net).module();
    }

    /** @return the model and optimizer in words */
    public String description() {
        return net.description();
    }

    /** @return number of trainable parameters */
    public long parameters() {
        return net.parameters();
    }

    /** @return the settings */
    public TrainOptions options() {
        return options;
    }

    /**
     * Trains for {@link TrainOptions#epochs()} epochs (shuffled with the seed), evaluating on {@code test}
     * after each.
     *
     * @param train the training set (cut to {@link TrainOptions#limit()} samples if set)
     * @param test the test set (cut to {@link TrainOptions#testLimit()} samples if set)
     * @param listener progress callbacks
     * @return what happened, with the memory numbers at the end (parameters and optimizer state still live)
     */
    public TrainResult fit(Dataset train, Dataset test, TrainListener listener) {
        ensureOpen();
        checkShape(train);
        checkShape(test);
        Dataset trainSet = limit(train, options.limit());
        Dataset testSet = limit(test, options.testLimit());
        DataLoader trainLoader = pinned(DataLoader.builder(trainSet).batchSize(options.batchSize()).shuffle(true)
                .seed(options.seed()).prefetch(options.prefetch())).build();
        DataLoader testLoader = pinned(DataLoader.builder(testSet).batchSize(options.evalBatchSize())
                .prefetch(options.prefetch())).build();
        List<EpochResult> epochs = new ArrayList<>();
        long start = System.nanoTime();
        double trainSeconds = 0;
        long trainSamples = 0;
        long globalStep = 0;
        boolean stop = false;
        long totalSteps = (long) options.epochs() * trainLoader.numBatches();
        if (options.maxSteps() > 0) {
            totalSteps = Math.min(totalSteps, options.maxSteps());
        }
        Evaluation last = null;
        PhasePeaks runPeaks = PhasePeaks.NONE;
        for (int epoch = 1; epoch <= options.epochs() && !stop; epoch++) {
            int steps = trainLoader.numBatches();
            listener.epochStarted(epoch, options.epochs(), steps);
            long t0 = System.nanoTime();
            double lossSum = 0;
            long correct = 0;
            long samples = 0;
            int step = 0;
            PeakRegion trainRegion = alloc.openPeakRegion();
            try (trainRegion; BatchFeed batches = BatchFeed.open(trainLoader, epoch - 1, dev, copyStream(trainLoader))) {
                while (batches.hasNext()) {
                    net.setLearningRate(options.learningRate(globalStep, totalSteps));
                    Network.StepStats s;
                    if (batches.onDevice()) {
                        try (DeviceBatch b = batches.nextOnDevice()) {
                            s = net.trainStep(b);
                        }
                    } else {
                        s = net.trainStep(batches.nextOnHost()); // no frame between: recorded stacks keep theirs
                    }
                    step++;
                    globalStep++;
                    lossSum += s.lossSum();
                    correct += s.correct();
                    samples += s.samples();
                    if (recording && globalStep >= options.historySteps()) {
                        captureHistory((int) globalStep);
                        listener.historyCaptured(recordedSteps);
                    }
                    double secs = (System.nanoTime() - t0) / 1e9;
                    listener.stepDone(new StepInfo(epoch, options.epochs(), step, steps, globalStep, lossSum / samples,
                            (double) correct / samples, samples / Math.max(secs, 1e-9), alloc.memoryAllocated(),
                            alloc.memoryReserved()));
                    if (options.maxSteps() > 0 && globalStep >= options.maxSteps()) {
                        stop = true;
                        break;
                    }
                }
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            trainSeconds += secs;
            trainSamples += samples;
            listener.trainingPartDone(epoch);
            PhasePeaks epochPeaks = PhasePeaks.NONE.withTraining(trainRegion);
            PeakRegion evalRegion = alloc.openPeakRegion();
            try (evalRegion) {
                last = evaluate(testLoader);
            }
            epochPeaks = epochPeaks.withEvaluation(evalRegion, Math.min(options.evalBatchSize(), testSet.size()));
            runPeaks = runPeaks.max(epochPeaks);
            EpochResult r = new EpochResult(epoch, step, samples, samples == 0 ? Double.NaN : lossSum / samples,
                    samples == 0 ? Double.NaN : (double) correct / samples, secs, samples / Math.max(secs, 1e-9), last,
                    MemoryPoint.of(alloc), epochPeaks);
            epochs.add(r);
            listener.epochDone(r);
        }
        if (recording) {
            captureHistory((int) globalStep);
            listener.historyCaptured(recordedSteps);
        }
        if (last == null) {
            PeakRegion evalRegion = alloc.openPeakRegion();
            try (evalRegion) {
                last = evaluate(testLoader);
            }
            runPeaks = runPeaks.withEvaluation(evalRegion, Math.min(options.evalBatchSize(), testSet.size()));
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        return new TrainResult(options, net.description(), net.parameters(), trainSet.size(), epochs, last, seconds,
                trainSamples / Math.max(trainSeconds, 1e-9), MemoryPoint.of(alloc), alloc.memoryStats(),
                alloc.memorySummary(), snapshot, recordedSteps, runPeaks);
    }

    /**
     * One training step on the first batch of the shuffled training set (a full batch if the set is large
     * enough), to measure the memory a training step needs; works on devices without storage, where nothing is
     * computed and no host memory holds the batch. The model's parameters are updated (on devices with
     * storage). Evaluation is left out: {@link #dryRun(Dataset, Dataset)} predicts the whole job.
     *
     * @param train the training set
     * @return the memory numbers after the step, with the optimizer state allocated
     */
    public DryRunResult dryRun(Dataset train) {
        return dryRun(train, null);
    }

    /**
     * A dry run of the whole job: two training steps of a full batch (the second with the optimizer state live),
     * one evaluation batch of {@link TrainOptions#evalBatchSize()} samples (at most the test set) with the cache
     * as training left it, and one more training step, as the next epoch starts. Its
     * {@linkplain DryRunResult#peaks() peaks}, training and evaluation apart, are what the real run reaches;
     * on {@code sim} (whatever it stands for) nothing is computed and the batches are placeholders that hold no host
     * memory. When the job pins memory ({@link PinnedRehearsal#applies}: the mlp with pin memory on, on {@code cuda}
     * or a {@code sim} standing for it) the batches come as {@link #fit} brings them, through {@link PinnedRehearsal}
     * as the batch-size finder's tries: allocated one ahead on the side stream and handed over with
     * {@code recordStream}; otherwise pageable, on the compute stream.
     *
     * @param train the training set
     * @param test the test set, or null to leave evaluation out (then one training step, as {@link #dryRun(Dataset)})
     * @return the memory numbers after the rehearsal
     * @throws IllegalArgumentException when a set is empty or does not match the model
     * @throws io.vram4j.alloc.DeviceOutOfMemoryException when the job does not fit
     */
    public DryRunResult dryRun(Dataset train, Dataset test) {
        ensureOpen();
        checkShape(train);
        if (train.size() == 0) {
            throw new IllegalArgumentException("the training set is empty");
        }
        int size = Math.min(options.batchSize(), train.size());
        int evalSize = 0;
        if (test != null) {
            checkShape(test);
            if (test.size() == 0) {
                throw new IllegalArgumentException("the test set is empty");
            }
            evalSize = Math.min(options.evalBatchSize(), test.size());
        }
        boolean simulated = alloc.device().isSimulated();
        Batch batch = simulated ? null : firstBatch(train, size, true);
        Batch evalBatch = simulated || test == null ? null : firstBatch(test, evalSize, false);
        int n = evalSize;
        int firstSteps = test == null ? 1 : 2;
        int laterSteps = test == null ? 0 : 1;
        long t0 = System.nanoTime();
        Rehearsal rehearsal = new Rehearsal(alloc);
        if (PinnedRehearsal.applies(options, alloc.device())) {
            // the batches as fit brings them with pinned memory: one ahead on the side stream (placeholders on sim)
            PinnedRehearsal pinned = new PinnedRehearsal(net, dev, sideStream(), batch, evalBatch, features);
            rehearsal.run(firstSteps, pinned.training(size), n, pinned.evaluation(n), laterSteps);
        } else {
            Runnable step = simulated ? () -> net.simulatedTrainStep(size) : () -> net.trainStep(batch);
            Runnable eval = simulated ? () -> net.simulatedEvaluate(n) : () -> net.evaluate(evalBatch);
            rehearsal.run(firstSteps, step, n, eval, laterSteps);
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        if (recording) {
            captureHistory(1);
        }
        return new DryRunResult(net.description(), net.parameters(), size, MemoryPoint.of(alloc),
                alloc.memoryStats(), alloc.memorySummary(), snapshot, secs, rehearsal.peaks());
    }

    private Batch firstBatch(Dataset data, int size, boolean shuffle) {
        DataLoader loader = DataLoader.builder(data).batchSize(size).shuffle(shuffle).seed(options.seed()).prefetch(0).build();
        try (DataLoader.Epoch batches = loader.epoch(0)) {
            return batches.next();
        }
    }

    /**
     * One training step on {@code batch} at the optimizer's current learning rate (the schedule is only applied
     * by {@link #fit}): forward, cross-entropy, backward, optimizer step, {@code zeroGrad(set_to_none=True)},
     * then the loss and the predictions are read back. This is the step {@link #fit} runs, exposed for
     * benchmarks and for callers that drive their own loop. Every buffer the step allocates is freed before it
     * returns, except the optimizer state at the first step.
     *
     * @param batch the samples, {@code [size, features]} float32 and {@code size} labels in {@code [0, classes)}
     * @return the batch's mean loss (NaN on a device without storage)
     * @throws IllegalArgumentException if the batch has another number of features than the model
     * @throws IllegalStateException if the trainer is closed
     */
    public double trainStep(Batch batch) {
        ensureOpen();
        Objects.requireNonNull(batch, "batch");
        if (batch.features() != features) {
            throw new IllegalArgumentException("batch has " + batch.features() + " features; the model expects " + features);
        }
        Network.StepStats s = net.trainStep(batch);
        return s.lossSum() / s.samples();
    }

    /**
     * Evaluates the model without gradients.
     *
     * @param data the samples
     * @return loss and accuracy
     */
    public Evaluation evaluate(Dataset data) {
        ensureOpen();
        checkShape(data);
        return evaluate(pinned(DataLoader.builder(data).batchSize(options.evalBatchSize()).prefetch(options.prefetch()))
                .build());
    }

    private Evaluation evaluate(DataLoader loader) {
        try (AutoCloseable notProfiled = io.vram4j.tensor.MemoryProfiler.suspend()) {
            return evaluateAll(loader);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private Evaluation evaluateAll(DataLoader loader) {
        long t0 = System.nanoTime();
        double loss = 0;
        long correct = 0;
        long samples = 0;
        try (BatchFeed batches = BatchFeed.open(loader, 0, dev, copyStream(loader))) {
            while (batches.hasNext()) {
                Network.StepStats s;
                if (batches.onDevice()) {
                    try (DeviceBatch b = batches.nextOnDevice()) {
                        s = net.evaluate(b);
                    }
                } else {
                    s = net.evaluate(batches.nextOnHost());
                }
                loss += s.lossSum();
                correct += s.correct();
                samples += s.samples();
            }
        }
        return new Evaluation(samples, samples == 0 ? Double.NaN : loss / samples,
                samples == 0 ? Double.NaN : (double) correct / samples, (System.nanoTime() - t0) / 1e9);
    }

    /**
     * @return whether batches go through pinned memory and a side-stream copy ({@link PinnedRehearsal#applies}, the
     *     one rule the rehearsals follow too: {@link TrainOptions#pinMemory()}, the mlp, on {@code cuda}; a real run
     *     never reaches here on {@code sim})
     */
    boolean pinsMemory() {
        return PinnedRehearsal.applies(options, dev.backend());
    }

    /** Asks the loader for pinned batches on this trainer's device when {@link #pinsMemory()}. */
    private DataLoader.Builder pinned(DataLoader.Builder b) {
        return pinsMemory() ? b.pinMemory(true).pinMemoryDevice(dev) : b;
    }

    /** @return the side stream for a loader of pinned batches (made once), else null (host batches) */
    private Stream copyStream(DataLoader loader) {
        return loader.pinMemory() ? sideStream() : null;
    }

    /** @return the side stream pinned batches are copied on (made once) */
    private Stream sideStream() {
        if (copyStream == null) {
            copyStream = dev.backend().newStream();
        }
        return copyStream;
    }

    private void captureHistory(int steps) {
        snapshot = alloc.snapshot();
        recordedSteps = steps;
        stopRecording();
    }

    private void stopRecording() {
        if (recording) {
            recording = false;
            alloc.stopMemoryHistory();
        }
    }

    private void checkShape(Dataset d) {
        Objects.requireNonNull(d, "dataset");
        if (d.features() != features || d.numClasses() != classes) {
            throw new IllegalArgumentException("data set " + d.description() + " has " + d.features() + " features and "
                    + d.numClasses() + " classes; the model expects " + features + " and " + classes);
        }
    }

    /**
     * @param d a data set
     * @param n samples to keep; 0 or at least {@code d.size()} for all
     * @return the first {@code n} samples of {@code d}
     */
    static Dataset limit(Dataset d, int n) {
        if (n <= 0 || n >= d.size()) {
            return d;
        }
        if (d instanceof io.vram4j.data.ImageDataset images) {
            return images.limit(n);
        }
        return new Dataset() {
            @Override
            public int size() {
                return n;
            }

            @Override
            public int features() {
                return d.features();
            }

            @Override
            public int numClasses() {
                return d.numClasses();
            }

            @Override
            public void copyFeatures(int index, float[] dst, int offset) {
                d.copyFeatures(java.util.Objects.checkIndex(index, n), dst, offset);
            }

            @Override
            public int label(int index) {
                return d.label(java.util.Objects.checkIndex(index, n));
            }

            @Override
            public String description() {
                return d.description() + " (first " + n + ")";
            }
        };
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("trainer closed");
        }
    }

    /** Frees the model's parameters and optimizer state, and stops recording history if still on. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            net.close();
        } finally {
            stopRecording();
        }
    }
}
