package io.vram4j.nn;

import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

/**
 * Inverted dropout in training mode, identity (a view) in eval mode. Masks come from the given generator,
 * one seed per call, so saving and restoring {@link Generator#state()} replays them.
 */
public final class Dropout extends Module {
    private final float p;
    private final Generator gen;

    /**
     * @param p drop probability in [0, 1]
     * @param gen the mask source
     */
    public Dropout(float p, Generator gen) {
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("dropout probability has to be between 0 and 1, but got " + p);
        }
        this.p = p;
        this.gen = gen;
    }

    @Override
    public Tensor forward(Tensor input) {
        return Functional.dropout(input, p, isTraining(), gen);
    }

    /** @return the drop probability */
    public float p() {
        return p;
    }
}
