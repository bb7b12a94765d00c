package io.vram4j.nn;

import io.vram4j.tensor.Tensor;

/** {@code max(x, 0)} element-wise. */
public final class ReLU extends Module {
    @Override
    public Tensor forward(Tensor input) {
        return input.relu();
    }
}
