package io.vram4j.nn;

import io.vram4j.tensor.Tensor;

/** GELU with the tanh approximation ({@code nn.GELU(approximate='tanh')}). */
public final class GELU extends Module {
    @Override
    public Tensor forward(Tensor input) {
        return input.gelu();
    }
}
