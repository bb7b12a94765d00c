package io.vram4j.replay;

/** A trace that cannot be replayed as recorded; the message names the device and the entry index. */
public class ReplayException extends RuntimeException {
    private final int entryIndex;
    private final boolean lenientHelps;

    /**
     * @param message what was inconsistent
     * @param entryIndex index of the trace entry, or -1 for the initial state
     */
    public ReplayException(String message, int entryIndex) {
        this(message, entryIndex, true);
    }

    /**
     * @param message what was inconsistent or unsupported
     * @param entryIndex index of the trace entry, or -1 for the initial state
     * @param lenientHelps whether a lenient replay ({@link ReplayOptions#lenient()}) would continue past it
     */
    public ReplayException(String message, int entryIndex, boolean lenientHelps) {
        super(message);
        this.entryIndex = entryIndex;
        this.lenientHelps = lenientHelps;
    }

    /** @return whether a lenient replay would continue past this; false for what is not supported at all */
    public boolean lenientHelps() {
        return lenientHelps;
    }

    /** @return the index of the offending trace entry, -1 for the initial state */
    public int entryIndex() {
        return entryIndex;
    }
}
