package io.vram4j.device;

/**
 * What every FFM binding of vram4j (libc, the CUDA driver, cuBLAS) does with what a downcall handle's
 * {@code invokeExact} throws: {@code invokeExact} is declared to throw {@link Throwable}, but a downcall throws
 * only what the JVM throws around it (unchecked). Stateless and thread-safe.
 */
public final class NativeCalls {

    private NativeCalls() {
    }

    /**
     * Throws {@code t} again: an unchecked exception or an error as it is, anything else wrapped in an
     * {@link IllegalStateException}. Declared to return so that callers can write {@code throw rethrow(t);}.
     *
     * @param t what {@code MethodHandle.invokeExact} threw
     * @return never returns normally
     */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }
}
