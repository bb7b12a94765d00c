package io.vram4j.tensor;

import java.util.EnumSet;
import java.util.Set;

/**
 * Restricts the backends {@link Functional#scaledDotProductAttention} may use on this thread until closed (as
 * PyTorch's context manager {@code torch.nn.attention.sdpa_kernel(backends)}); blocks nest and closing restores the
 * previous set. Outside any block every backend is enabled and the fused one is taken where it applies.
 *
 * <pre>{@code
 * try (SdpaKernel s = SdpaKernel.enable(SDPBackend.MATH)) {
 *     loss = model.forward(x);     // attention as separate ops, probabilities saved
 * }
 * }</pre>
 *
 * <p>Confined to the thread that opened it (the setting is per thread, so the backward pass and checkpoint
 * recomputation on the same thread see it).
 */
public final class SdpaKernel implements AutoCloseable {
    private static final ThreadLocal<Set<SDPBackend>> ENABLED =
            ThreadLocal.withInitial(() -> EnumSet.allOf(SDPBackend.class));

    private final Set<SDPBackend> previous;
    private boolean closed;

    private SdpaKernel(Set<SDPBackend> backends) {
        previous = ENABLED.get();
        ENABLED.set(backends);
    }

    /**
     * @param first a backend to allow
     * @param more further backends to allow
     * @return a block during which only these backends are used
     */
    public static SdpaKernel enable(SDPBackend first, SDPBackend... more) {
        return new SdpaKernel(EnumSet.of(first, more));
    }

    /** @return the backends enabled on this thread now (a copy) */
    public static Set<SDPBackend> enabled() {
        return EnumSet.copyOf(ENABLED.get());
    }

    /** Restores the backends enabled when this block was entered. Idempotent. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            ENABLED.set(previous);
        }
    }
}
