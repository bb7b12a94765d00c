package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.data.CharVocabulary;
import io.vram4j.data.FashionMnist;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.tensor.Device;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Runs several {@link BatchSizeFinder} searches on a fresh device and prints them as they go: the searches of
 * {@code vram4j find-batch-size}, {@code vram4j train --find-batch-size} and {@code vram4j bench techniques}.
 * Every try of a call runs on one tensor device over one allocator (on {@code cuda}, with its CUDA kernels loaded
 * once). Stateless; each call opens and closes its own device and allocator, so calls may run on different threads.
 *
 * <p><b>A search on {@code cuda} and its dry run on {@code sim}</b> agree exactly (same largest batches, same peak
 * allocated and reserved bytes) when both run into the same limit: cap the GPU with a per-process memory fraction
 * ({@code per_process_memory_fraction}, PyTorch's {@code torch.cuda.set_per_process_memory_fraction}), whose limit
 * is {@code floor(fraction x total)}, and give the sim the GPU's total and compute capability with the same
 * fraction: {@code sim:TOTAL:ccMAJOR.MINOR} (a search on {@code cuda} prints that spec; see {@link SearchLimit}).
 * Without a fraction the GPU's limit is its free memory, which the driver, cuBLAS and other processes also use.
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
     * @throws IllegalArgumentException naming {@code --max-batch} or {@code --device} when one is invalid
     */
    public static List<BatchSizeFinder.Result> run(String deviceSpec, AllocatorConfig config, TrainOptions base,
                                                   List<TrainOptions> settings, CharVocabulary vocab, int maxBatch,
                                                   int testSamples, String bound, PrintWriter report) {
        if (maxBatch < 1) {
            throw new IllegalArgumentException("--max-batch must be at least 1, got " + maxBatch);
        }
        DeviceBackend dev = TrainJob.openDevice(deviceSpec);
        List<BatchSizeFinder.Result> results = new ArrayList<>();
        try (dev; CachingAllocator alloc = CachingAllocator.create(dev, config); Device tensors = Device.of(alloc)) {
            report.printf(Locale.ROOT, "find-batch-size on %s (%s): %s%n", dev.description(),
                    !dev.isSimulated() ? "real run" : dev.hasDeviceMemory()
                            ? "dry run standing for the CUDA GPU, nothing computed" : "dry run, nothing computed",
                    base.describe(base.isTransformer() ? base.blockSize() + 1 : IMAGE_FEATURES,
                                    vocab != null ? vocab.size() : FashionMnist.NUM_CLASSES)
                            .replaceAll(", batch \\d+, \\d+ epochs?", ""));
            report.println("each try: two training steps, one evaluation batch of as many samples"
                    + (testSamples > 0 ? String.format(Locale.ROOT, " (at most the %,d test samples)", testSamples) : "")
                    + ", one more step");
            SearchLimit.describe(dev, config, report);
            report.flush();
            BatchSizeFinder finder = vocab != null ? BatchSizeFinder.forTransformer(tensors, vocab, maxBatch)
                    : BatchSizeFinder.forMlp(tensors, IMAGE_FEATURES, FashionMnist.NUM_CLASSES, maxBatch);
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
