package io.vram4j.autograd;

import io.vram4j.tensor.Tensor;

/**
 * Intercepts the tensors that ops save for backward on this thread (as
 * {@code torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)}): while a block is open, every
 * tensor a recorded op saves goes through {@link Hooks#pack} and the node keeps only what that returns;
 * backward gets the tensor back from {@link Hooks#unpack} the first time a rule reads it. Activation
 * checkpointing ({@code io.vram4j.train.Checkpoint}) is built on this, as PyTorch's non-reentrant
 * {@code torch.utils.checkpoint} is.
 *
 * <p>Blocks nest: the innermost open block's hooks apply. Hooks are per thread.
 *
 * <pre>{@code
 * try (SavedTensorsHooks h = SavedTensorsHooks.push(myHooks)) {
 *     Tensor y = f(x);          // nodes hold myHooks.pack(...) results instead of tensors
 * }
 * }</pre>
 */
public final class SavedTensorsHooks implements AutoCloseable {
    private static final ThreadLocal<Hooks> CURRENT = new ThreadLocal<>();

    /** The pack/unpack pair, plus a release callback (the JVM has no reference counting to rely on). */
    public interface Hooks {
        /**
         * Called when a recorded op saves {@code t}.
         *
         * @param t the saved tensor; not owned by the hook (call {@code t.detach()} to keep its storage)
         * @return what the node keeps in place of the tensor (not null)
         */
        Object pack(Tensor t);

        /**
         * Called the first time backward reads a packed value.
         *
         * @param packed a value {@link #pack} returned
         * @return a new handle the node owns and closes when it releases its saved tensors
         */
        Tensor unpack(Object packed);

        /**
         * Called once per packed value when the node releases its saved values (after backward used them, or
         * when the graph is closed), whether or not it was unpacked.
         *
         * @param packed a value {@link #pack} returned
         */
        default void release(Object packed) {
        }
    }

    private final Hooks previous;
    private final Hooks hooks;
    private boolean closed;

    private SavedTensorsHooks(Hooks hooks) {
        this.previous = CURRENT.get();
        this.hooks = hooks;
        CURRENT.set(hooks);
    }

    /**
     * @param hooks the hooks for ops recorded on this thread until the block closes
     * @return the block
     */
    public static SavedTensorsHooks push(Hooks hooks) {
        if (hooks == null) {
            throw new IllegalArgumentException("hooks must not be null");
        }
        return new SavedTensorsHooks(hooks);
    }

    /** @return this thread's innermost hooks, or null when ops save tensors directly */
    public static Hooks current() {
        return CURRENT.get();
    }

    /**
     * Restores the hooks that were active when this block was entered. Idempotent.
     *
     * @throws IllegalStateException when an inner block is still open
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (CURRENT.get() != hooks) {
            throw new IllegalStateException("saved tensors hooks must be closed innermost first");
        }
        closed = true;
        CURRENT.set(previous);
    }
}
