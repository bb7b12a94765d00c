package io.vram4j.memory.snapshot;

/**
 * Thrown when a snapshot file or stream cannot be read as a PyTorch memory snapshot: not a pickle or JSON document,
 * a truncated or corrupt pickle, or a document whose structure or field types differ from PyTorch's. The message
 * names the source and the location, for example
 * {@code decomfl.pickle: device_traces[0][1234]: field 'size' must be an integer, got str 'abc'}.
 */
public class SnapshotFormatException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message the full message, naming the source and the location */
    public SnapshotFormatException(String message) {
        super(message);
    }

    /**
     * @param message the full message, naming the source and the location
     * @param cause   the underlying failure
     */
    public SnapshotFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
