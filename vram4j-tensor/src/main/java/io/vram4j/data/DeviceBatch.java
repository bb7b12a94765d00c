package io.vram4j.data;

import io.vram4j.tensor.Tensor;

/**
 * A batch on the device, from a {@link DeviceLoader}: the features as float32 {@code [size, features]} and the
 * labels as int64 {@code [size]}, ready for ops on the device's stream. Closing it closes both tensors (safe when
 * they were closed already).
 *
 * @param index position of the batch in its epoch, from 0
 * @param size number of samples
 * @param x the features
 * @param y the labels
 */
public record DeviceBatch(int index, int size, Tensor x, Tensor y) implements AutoCloseable {
    @Override
    public void close() {
        try {
            x.close();
        } finally {
            y.close();
        }
    }
}
