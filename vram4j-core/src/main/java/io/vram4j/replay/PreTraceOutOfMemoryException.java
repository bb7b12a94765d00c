package io.vram4j.replay;

/**
 * A what-if capacity below what the segments holding live blocks needed before the trace began: the program could
 * not have reached the trace, so the first allocation that cannot be served comes before it. This is a what-if's
 * answer, not an inconsistency of the trace; the message gives both figures.
 */
public final class PreTraceOutOfMemoryException extends ReplayException {
    /** @param message the one-line answer with the capacity and the bytes needed, naming the device */
    PreTraceOutOfMemoryException(String message) {
        super(message, -1, false);
    }
}
