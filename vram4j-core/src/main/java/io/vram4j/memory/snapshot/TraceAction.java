package io.vram4j.memory.snapshot;

/**
 * The kind of a trace entry, PyTorch's trace entry {@code action} string (spec section 10.2).
 */
public enum TraceAction {
    /** {@code "alloc"}: a block was handed out; {@code size} is the caller's requested (unrounded) size. */
    ALLOC("alloc"),
    /** {@code "free_requested"}: the caller freed a block; {@code size} is the requested size. */
    FREE_REQUESTED("free_requested"),
    /** {@code "free_completed"}: the block became reusable (after its stream events completed). */
    FREE_COMPLETED("free_completed"),
    /** {@code "segment_alloc"}: a new segment was obtained from the device; {@code size} is the segment size. */
    SEGMENT_ALLOC("segment_alloc"),
    /** {@code "segment_free"}: a segment was returned to the device; {@code size} is the segment size. */
    SEGMENT_FREE("segment_free"),
    /** {@code "segment_map"}: an expandable segment mapped {@code size} more bytes at {@code addr}. */
    SEGMENT_MAP("segment_map"),
    /** {@code "segment_unmap"}: an expandable segment unmapped {@code size} bytes at {@code addr}. */
    SEGMENT_UNMAP("segment_unmap"),
    /** {@code "snapshot"}: a snapshot was taken; {@code addr} is 0 and {@code size} the active bytes then. */
    SNAPSHOT("snapshot"),
    /**
     * {@code "oom"}: an allocation failed; {@code size} is the rounded request and the entry carries
     * {@code device_free} instead of {@code addr}.
     */
    OOM("oom"),
    /** {@code "annotate"}: a user annotation (newest PyTorch versions, per spec section 10.2). */
    ANNOTATE("annotate"),
    /** {@code "user_defined"}: a user-defined trace entry written by some PyTorch versions and forks. */
    USER_DEFINED("user_defined");

    private final String pytorchName;

    TraceAction(String pytorchName) {
        this.pytorchName = pytorchName;
    }

    /** @return the string PyTorch writes, such as {@code "segment_alloc"} */
    public String pytorchName() {
        return pytorchName;
    }

    /**
     * @param name a PyTorch action string
     * @return the matching action
     * @throws IllegalArgumentException if {@code name} is not a known action
     */
    public static TraceAction fromPytorchName(String name) {
        TraceAction a = lookup(name);
        if (a == null) {
            throw new IllegalArgumentException("unknown trace action '" + name + "'");
        }
        return a;
    }

    static TraceAction lookup(String name) {
        return BY_NAME.get(name);
    }

    /**
     * Each action by its PyTorch name: looked up once per trace entry. Filled by a loop: a stream collector here
     * cost a replay about 10 ms of linking lambdas before the first entry was decoded.
     */
    private static final java.util.Map<String, TraceAction> BY_NAME = byName();

    private static java.util.Map<String, TraceAction> byName() {
        java.util.Map<String, TraceAction> m = new java.util.HashMap<>();
        for (TraceAction a : values()) {
            m.put(a.pytorchName, a);
        }
        return java.util.Map.copyOf(m);
    }
}
