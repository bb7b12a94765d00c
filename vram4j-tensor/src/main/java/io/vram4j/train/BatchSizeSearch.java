package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.data.CharVocabulary;
import io.vram4j.data.FashionMnist;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Runs several {@link BatchSizeFinder} searches on a fresh device and prints them as they go: the searches of
 * {@code vram4j find-batch-size}, {@code vram4j train --find-batch-size} and {@code vram4j bench techniques}.
 * Stateless; each call opens and closes its own device and allocator, so calls may run on different threads.
 */
public final class BatchSizeSearch {
    /** Floats per Fashion-MNIST image (28 x 28), the MLP's input. */
    public static final int IMAGE_FEATURES = 28 * 28;

    private BatchSizeSearch() {
    }

    /**
     * The checkpoint segments used when none are given.
     *
     * @param base the model
     * @return one segment per transformer block (a block's activations dwarf its input); for the MLP, whose
     *     modules (Linear, ReLU, ...) save about as much as their inputs, about the square root of the module count
     */
    public static int defaultSegments(TrainOptions base) {
        return base.isTransformer() ? Math.max(1, base.layers()) : Math.max(1, (int) Math.round(Math.sqrt(2 * base.layers() + 1)));
    }

    /**
     * Runs the searches on a fresh allocator of {@code deviceSpec}, printing a line per try, then the table, then
     * which searches stopped at their upper bound, to {@code report}.
     *
     * @param deviceSpec the device, as {@link Devices#open(String)} reads it
     * @param config the allocator's settings
     * @param base the model, for the heading
     * @param settings the settings to search, in the table's order
     * @param vocab the transformer's characters, or null for the MLP
     * @param maxBatch the largest batch to try, at least 1
     * @param testSamples the test set's size (evaluation batches are no larger), or 0 when unknown
     * @param bound what limits the batch, in words, e.g. {@code "--max-batch 65,536"}
     * @param report where the lines go
     * @return the searches, in the order of {@code settings}
     * @throws IllegalArgumentException naming {@code --max-batch} or {@code --device} when one is invalid, or when
     *     the device has memory of its own ({@code cuda}), where the search does not run yet
     */
    public static List<BatchSizeFinder.Result> run(String deviceSpec, AllocatorConfig config, TrainOptions base,
                                                   List<TrainOptions> settings, CharVocabulary vocab, int maxBatch,
                                                   int testSamples, String bound, PrintWriter report) {
        if (maxBatch < 1) {
            throw new IllegalArgumentException("--max-batch must be at least 1, got " + maxBatch);
        }
        DeviceBackend dev = TrainJob.openDevice(deviceSpec);
        if (dev.hasDeviceMemory()) {
            String d = dev.description();
            dev.close();
            throw new IllegalArgumentException("--device: the batch size search cannot run on " + d + " yet (its tries "
                    + "are not wired to the device's kernels); search on sim with the GPU's capacity from 'vram4j devices'");
        }
        List<BatchSizeFinder.Result> results = new ArrayList<>();
        try (dev; CachingAllocator alloc = CachingAllocator.create(dev, config)) {
            report.printf(Locale.ROOT, "find-batch-size on %s (%s): %s%n", dev.description(),
                    dev.hasStorage() ? "real run" : "dry run, nothing computed",
                    base.describe(base.isTransformer() ? base.blockSize() + 1 : IMAGE_FEATURES,
                                    vocab != null ? vocab.size() : FashionMnist.NUM_CLASSES)
                            .replaceAll(", batch \\d+, \\d+ epochs?", ""));
            report.println("each try: two training steps, one evaluation batch of as many samples"
                    + (testSamples > 0 ? String.format(Locale.ROOT, " (at most the %,d test samples)", testSamples) : "")
                    + ", one more step");
            report.flush();
            BatchSizeFinder finder = vocab != null ? BatchSizeFinder.forTransformer(alloc, vocab, maxBatch)
                    : BatchSizeFinder.forMlp(alloc, IMAGE_FEATURES, FashionMnist.NUM_CLASSES, maxBatch);
            if (testSamples > 0) {
                finder = finder.evaluatingAtMost(testSamples);
            }
            for (TrainOptions o : settings) {
                String technique = o.techniques().isEmpty() ? "baseline" : o.techniques();
                results.add(finder.find(o, a -> BatchSizeReport.tryLine(technique, a, report)));
            }
        }
        BatchSizeReport.table(results, report);
        BatchSizeReport.upperBounds(results, bound, report);
        return results;
    }
}
