package io.vram4j.tensor.internal;

import io.vram4j.tensor.Tensor;

import java.util.function.Function;

/**
 * The hook through which {@link io.vram4j.amp.Autocast} chooses the dtype an op runs in (PyTorch's
 * {@code Autocast} dispatch key). Ops that autocast may change ({@code matmul}, {@code linear},
 * {@code scaled_dot_product_attention}, {@code softmax}, {@code log_softmax}, {@code layer_norm},
 * {@code nll_loss}, {@code cross_entropy_loss}, {@code sum}, {@code mean}, {@code exp}, {@code log}, ...) pass
 * their name and floating-point inputs to this thread's {@link Interceptor}, run on what it returns, and close
 * the replacement handles afterwards. While an op runs, the interceptor is suspended, so the ops a composite
 * op is built from run in the dtypes it chose (as PyTorch's autocast kernels exclude the autocast key).
 * Backward passes run with the interceptor suspended: backward ops use the dtypes of their forward ops.
 *
 * <p>Per thread. Without an interceptor (the default) an op pays one thread-local read.
 */
public final class AutocastHook {
    private static final ThreadLocal<Interceptor> CURRENT = new ThreadLocal<>();

    private AutocastHook() {
    }

    /** Chooses the inputs of an op. */
    @FunctionalInterface
    public interface Interceptor {
        /**
         * @param op the PyTorch name of the op, e.g. {@code matmul}
         * @param inputs its tensor inputs in PyTorch's argument order (entries may be null or integer tensors)
         * @return {@code inputs} itself when nothing changes, else an array of the same length whose entries
         *     that differ from {@code inputs} are new handles, closed by the op when it returns
         */
        Tensor[] cast(String op, Tensor[] inputs);
    }

    /**
     * Installs {@code interceptor} on this thread.
     *
     * @param interceptor the new interceptor, or null for none
     * @return the previous one (restore it when done)
     */
    public static Interceptor install(Interceptor interceptor) {
        Interceptor previous = CURRENT.get();
        CURRENT.set(interceptor);
        return previous;
    }

    /** @return this thread's interceptor, or null */
    public static Interceptor current() {
        return CURRENT.get();
    }

    /**
     * Runs an op on its (possibly cast) inputs with the interceptor suspended. For the tensor runtime.
     *
     * @param op the PyTorch name of the op
     * @param inputs its inputs
     * @param body the op itself
     * @return the op's result
     */
    public static Tensor run(String op, Tensor[] inputs, Function<Tensor[], Tensor> body) {
        Interceptor ic = CURRENT.get();
        if (ic == null) {
            return body.apply(inputs);
        }
        Tensor[] args = ic.cast(op, inputs);
        CURRENT.set(null);
        try {
            return body.apply(args);
        } finally {
            CURRENT.set(ic);
            if (args != inputs) {
                for (int i = 0; i < args.length; i++) {
                    if (args[i] != inputs[i] && args[i] != null) {
                        args[i].close();
                    }
                }
            }
        }
    }
}
