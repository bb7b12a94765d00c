package io.vram4j.nn;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

/** A lookup table {@code [num, dim]} initialised N(0, 1), indexed by int32/int64 tensors. */
public final class Embedding extends Module {
    private final Parameter weight;

    /**
     * @param device where the table lives
     * @param num number of rows
     * @param dim row size
     * @param gen the initialisation source
     */
    public Embedding(Device device, int num, int dim, Generator gen) {
        Tensor w = device.empty(DType.FLOAT32, num, dim);
        Init.normal(w, 0, 1, gen);
        this.weight = registerParameter("weight", w);
    }

    /** @param indices int indices of any shape @return {@code indices.shape + [dim]} */
    @Override
    public Tensor forward(Tensor indices) {
        return Functional.embedding(weight, indices);
    }

    /** @return the table */
    public Parameter weight() {
        return weight;
    }
}
