package io.vram4j.autograd;

/**
 * Enables graph recording on this thread until closed (as {@code torch.enable_grad()}), also inside a
 * {@link NoGrad} block; restores the previous mode when closed, so blocks nest. Activation checkpointing
 * uses it to record the recomputation, which runs during backward.
 */
public final class EnableGrad implements AutoCloseable {
    private final boolean previous;
    private boolean closed;

    private EnableGrad() {
        previous = Autograd.isGradEnabled();
        Autograd.setGradEnabled(true);
    }

    /** @return a block during which ops on tensors that require grad are recorded */
    public static EnableGrad enter() {
        return new EnableGrad();
    }

    /** Restores the mode that was active when this block was entered. Idempotent. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            Autograd.setGradEnabled(previous);
        }
    }
}
