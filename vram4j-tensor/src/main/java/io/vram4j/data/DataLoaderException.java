package io.vram4j.data;

/**
 * A failure of a {@link DataLoader}'s background thread, as seen by the consumer: the cause is what the
 * thread threw. Added as a suppressed exception to unchecked exceptions rethrown to the consumer (so the
 * consumer's stack is visible too), thrown itself for checked ones.
 */
public final class DataLoaderException extends RuntimeException {
    /**
     * @param message what failed
     * @param cause what the background thread threw
     */
    public DataLoaderException(String message, Throwable cause) {
        super(message, cause);
    }
}
