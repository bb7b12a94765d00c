package io.vram4j.replay;

/** A trace that cannot be replayed as recorded; the message names the device and the entry index. */
public class ReplayException extends RuntimeException {
    private final int entryIndex;

    /**
     * @param message what was inconsistent
     * @param entryIndex index of the trace entry, or -1 for the initial state
     */
    public ReplayException(String message, int entryIndex) {
        super(message);
        this.entryIndex = entryIndex;
    }

    /** @return the index of the offending trace entry, -1 for the initial state */
    public int entryIndex() {
        return entryIndex;
    }
}
