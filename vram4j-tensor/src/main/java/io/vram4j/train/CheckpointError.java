package io.vram4j.train;

/**
 * The recomputation of a checkpointed region did not match its original forward pass (as PyTorch's
 * {@code torch.utils.checkpoint.CheckpointError}): it saved a different number of tensors, or tensors of
 * another shape or dtype. The checkpointed function must be deterministic given its inputs and the state
 * of the generators it draws from.
 */
public final class CheckpointError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message what differed */
    public CheckpointError(String message) {
        super(message);
    }
}
