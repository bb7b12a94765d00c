package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.data.Batch;
import io.vram4j.data.CharVocabulary;
import io.vram4j.data.DataLoader;
import io.vram4j.data.Dataset;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.MemoryCategory;
import io.vram4j.tensor.MemoryProfile;
import io.vram4j.tensor.MemoryProfiler;

import java.util.Arrays;
import java.util.Objects;

/**
 * Measures what a memory-saving technique saves and costs: training steps of a model on a fresh device and
 * allocator, with peak allocated and reserved bytes, the activations at the peak ({@link MemoryProfiler}) and
 * the median step time. A step is one optimizer step: with accumulation over {@code N} batches it is {@code N}
 * forward/backward passes. For {@code vram4j bench techniques}; not thread-safe.
 */
public final class TechniqueBenchmark {
    private TechniqueBenchmark() {
    }

    /**
     * @param options the setting measured
     * @param peakAllocated peak allocated bytes over the timed steps
     * @param peakReserved peak reserved bytes over the timed steps
     * @param activations the peak activation memory: the most bytes saved for backward at any allocation of one
     *     more (profiled) step
     * @param profile that step's split of the peak
     * @param medianSeconds median wall time of the timed optimizer steps
     * @param stepSeconds every timed step
     * @param skippedSteps steps the fp16 scaler skipped (-1 without fp16)
     * @param parameters the model's parameter count (elements)
     */
    public record Measurement(TrainOptions options, long peakAllocated, long peakReserved, long activations,
                              MemoryProfile profile, double medianSeconds, double[] stepSeconds, long skippedSteps,
                              long parameters) {
        /** Copies the array. */
        public Measurement {
            stepSeconds = stepSeconds.clone();
        }

        /** @return the setting's techniques in words, {@code "baseline"} when none */
        public String technique() {
            String t = options.techniques();
            return t.isEmpty() ? "baseline" : t;
        }
    }

    /**
     * Warms up with one step (which allocates the optimizer state), then times {@code steps} steps, then profiles
     * one more, on synthetic data of the model's shape.
     *
     * @param device e.g. {@code host} (opened and closed here)
     * @param options the model, optimizer, batch and techniques
     * @param vocabulary the characters for the transformer; null for the MLP
     * @param features floats per sample of the MLP (ignored for the transformer)
     * @param classes classes of the MLP (ignored for the transformer)
     * @param steps timed optimizer steps, at least 1
     * @return the measurement
     */
    public static Measurement measure(String device, TrainOptions options, CharVocabulary vocabulary, int features,
                                      int classes, int steps) {
        if (steps < 1) {
            throw new IllegalArgumentException("--steps must be at least 1, got " + steps);
        }
        if (options.isTransformer()) {
            Objects.requireNonNull(vocabulary, "vocabulary");
        }
        int c = vocabulary != null ? vocabulary.size() : classes;
        int f = vocabulary != null ? options.blockSize() + 1 : features;
        Batch batch = BatchSizeFinder.syntheticBatch(options, options.batchSize(), c, f);
        try (DeviceBackend dev = Devices.open(device); CachingAllocator alloc = CachingAllocator.create(dev);
             ModelNetwork net = ModelNetwork.create(Device.of(alloc), options, features, classes, vocabulary)) {
            step(net, batch, options.accumulate());
            alloc.resetPeakMemoryStats();
            double[] times = new double[steps];
            for (int i = 0; i < steps; i++) {
                long t0 = System.nanoTime();
                step(net, batch, options.accumulate());
                times[i] = (System.nanoTime() - t0) / 1e9;
            }
            long peakAllocated = alloc.maxMemoryAllocated();
            long peakReserved = alloc.maxMemoryReserved();
            MemoryProfile profile;
            long activations;
            try (MemoryProfiler prof = MemoryProfiler.start(alloc, true)) {
                step(net, batch, options.accumulate());
                profile = prof.profile();
                activations = prof.categoryPeak(MemoryCategory.ACTIVATIONS);
            }
            Techniques.ScalerStats s = net.scalerStats();
            double[] sorted = times.clone();
            Arrays.sort(sorted);
            double median = steps % 2 == 1 ? sorted[steps / 2] : (sorted[steps / 2 - 1] + sorted[steps / 2]) / 2;
            return new Measurement(options, peakAllocated, peakReserved, activations, profile,
                    median, times, s == null ? -1 : s.skippedSteps(), net.parameters());
        }
    }

    private static void step(ModelNetwork net, Batch batch, int accumulate) {
        for (int i = 0; i < accumulate; i++) {
            net.trainStep(batch);
        }
    }

    /**
     * Trains the model on real data and returns every step's mean training loss (per sample, or per character
     * for the transformer), for comparing precisions.
     *
     * @param device e.g. {@code host}
     * @param options the model, optimizer, batch and techniques
     * @param vocabulary the characters for the transformer; null for the MLP
     * @param train the training set (shuffled with the options' seed)
     * @param steps optimizer steps
     * @return the losses, one per step (NaN for an fp16 step whose loss overflowed)
     */
    public static double[] lossCurve(String device, TrainOptions options, CharVocabulary vocabulary, Dataset train, int steps) {
        double[] out = new double[steps];
        DataLoader loader = DataLoader.builder(train).batchSize(options.batchSize()).shuffle(true).seed(options.seed())
                .prefetch(0).build();
        try (DeviceBackend dev = Devices.open(device); CachingAllocator alloc = CachingAllocator.create(dev);
             ModelNetwork net = ModelNetwork.create(Device.of(alloc), options, train.features(), train.numClasses(),
                     vocabulary)) {
            int done = 0;
            for (int epoch = 0; done < steps; epoch++) {
                try (DataLoader.Epoch batches = loader.epoch(epoch)) {
                    while (batches.hasNext() && done < steps) {
                        net.setLearningRate(options.learningRate(done, steps));
                        Network.StepStats s = net.trainStep(batches.next());
                        out[done++] = s.lossSum() / s.samples();
                    }
                }
            }
        }
        return out;
    }
}
