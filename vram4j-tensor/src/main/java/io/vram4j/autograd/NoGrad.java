package io.vram4j.autograd;

/**
 * Disables graph recording on this thread until closed (as {@code torch.no_grad()}); restores the previous
 * mode when closed, so blocks nest.
 *
 * <pre>{@code
 * try (NoGrad ng = NoGrad.enter()) {
 *     Tensor y = model.forward(x);     // no graph, no saved tensors
 * }
 * }</pre>
 */
public final class NoGrad implements AutoCloseable {
    private final boolean previous;
    private boolean closed;

    private NoGrad() {
        previous = Autograd.isGradEnabled();
        Autograd.setGradEnabled(false);
    }

    /** @return a block during which ops record nothing */
    public static NoGrad enter() {
        return new NoGrad();
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
