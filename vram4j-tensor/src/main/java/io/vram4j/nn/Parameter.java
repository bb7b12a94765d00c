package io.vram4j.nn;

import io.vram4j.tensor.Tensor;

/**
 * A leaf tensor that a {@link Module} owns and an optimizer updates (as {@code torch.nn.Parameter}). It
 * requires grad, belongs to no {@link io.vram4j.tensor.MemoryScope}, and is closed with its module.
 */
public final class Parameter extends Tensor {
    /**
     * Takes over the data of {@code data} (which is closed without freeing anything: its storage now belongs
     * to the parameter).
     *
     * @param data a floating-point leaf tensor
     */
    public Parameter(Tensor data) {
        this(data, true);
    }

    /**
     * @param data a leaf tensor whose storage the parameter takes over
     * @param requiresGrad whether it is trained
     */
    public Parameter(Tensor data, boolean requiresGrad) {
        super(data);
        requiresGrad(requiresGrad);
    }
}
