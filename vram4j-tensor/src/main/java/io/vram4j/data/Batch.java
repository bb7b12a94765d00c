package io.vram4j.data;

import java.util.Objects;

/**
 * One batch from a {@link DataLoader}: {@code size} samples as plain Java arrays, which the trainer copies
 * into tensors (so the loader never holds device memory), and, from a loader with
 * {@linkplain DataLoader.Builder#pinMemory pinMemory} on an accelerator, the same samples in pinned host blocks
 * for an asynchronous copy ({@link #pinned()}; whoever consumes such a batch releases them).
 *
 * @param index position of the batch in its epoch, from 0
 * @param size number of samples, at least 1 (the last batch of an epoch may be smaller than the batch size
 *             unless {@code dropLast})
 * @param features floats per sample
 * @param x the samples' features, row-major {@code [size, features]}
 * @param y the samples' labels, {@code [size]}
 * @param pinned the samples in pinned host memory, or null (no {@code pinMemory}, or no accelerator)
 */
public record Batch(int index, int size, int features, float[] x, int[] y, PinnedSamples pinned) {
    /** A batch without pinned memory. */
    public Batch(int index, int size, int features, float[] x, int[] y) {
        this(index, size, features, x, y, null);
    }

    /** Checks the array lengths. */
    public Batch {
        Objects.requireNonNull(x, "x");
        Objects.requireNonNull(y, "y");
        if (size < 1 || features < 1 || x.length != (long) size * features || y.length != size) {
            throw new IllegalArgumentException("batch of " + size + " samples of " + features + " features needs x["
                    + (long) size * features + "] and y[" + size + "], got x[" + x.length + "] and y[" + y.length + "]");
        }
    }
}
