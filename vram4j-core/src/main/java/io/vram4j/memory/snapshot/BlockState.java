package io.vram4j.memory.snapshot;

/**
 * The state of a block in a snapshot, PyTorch's block {@code state} string.
 */
public enum BlockState {
    /** {@code "active_allocated"}: handed out to a caller and not freed. */
    ACTIVE_ALLOCATED("active_allocated"),
    /**
     * {@code "active_pending_free"}: freed by the caller but still in use by another stream
     * ({@code record_stream}); it becomes inactive once the recorded events complete.
     */
    ACTIVE_PENDING_FREE("active_pending_free"),
    /** {@code "inactive"}: cached free memory inside a segment. */
    INACTIVE("inactive");

    private final String pytorchName;

    BlockState(String pytorchName) {
        this.pytorchName = pytorchName;
    }

    /** @return the string PyTorch writes, such as {@code "active_allocated"} */
    public String pytorchName() {
        return pytorchName;
    }

    /** @return true for {@link #ACTIVE_ALLOCATED} and {@link #ACTIVE_PENDING_FREE} */
    public boolean isActive() {
        return this != INACTIVE;
    }

    /**
     * @param name a PyTorch state string
     * @return the matching state
     * @throws IllegalArgumentException if {@code name} is not one of PyTorch's three state strings
     */
    public static BlockState fromPytorchName(String name) {
        for (BlockState s : values()) {
            if (s.pytorchName.equals(name)) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown block state '" + name + "'");
    }
}
