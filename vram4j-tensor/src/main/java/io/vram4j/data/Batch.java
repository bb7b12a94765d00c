package io.vram4j.data;

import java.util.Objects;

/**
 * One batch from a {@link DataLoader}: {@code size} samples as plain Java arrays, which the trainer copies
 * into tensors (so the loader never holds device memory).
 *
 * @param index position of the batch in its epoch, from 0
 * @param size number of samples, at least 1 (the last batch of an epoch may be smaller than the batch size
 *             unless {@code dropLast})
 * @param features floats per sample
 * @param x the samples' features, row-major {@code [size, features]}
 * @param y the samples' labels, {@code [size]}
 */
public record Batch(int index, int size, int features, float[] x, int[] y) {
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
