package io.vram4j.autograd;

import io.vram4j.tensor.Tensor;

/**
 * Entry points of reverse-mode automatic differentiation. Usually reached through
 * {@link Tensor#backward()}; {@link NoGrad} switches recording off.
 */
public final class Autograd {
    private static final ThreadLocal<Boolean> ENABLED = ThreadLocal.withInitial(() -> Boolean.TRUE);

    private Autograd() {
    }

    /** @return true when ops on this thread record graph nodes (the default) */
    public static boolean isGradEnabled() {
        return ENABLED.get();
    }

    static void setGradEnabled(boolean enabled) {
        ENABLED.set(enabled);
    }

    /**
     * Back-propagates from {@code root}: see {@link Tensor#backward(Tensor, boolean)}.
     *
     * @param root the tensor to differentiate
     * @param gradient its gradient, or null when it is a scalar (then 1)
     * @param retainGraph keep the saved tensors for another backward
     */
    public static void backward(Tensor root, Tensor gradient, boolean retainGraph) {
        Engine.backward(root, gradient, retainGraph);
    }
}
