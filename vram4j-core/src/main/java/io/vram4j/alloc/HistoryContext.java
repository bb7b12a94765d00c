package io.vram4j.alloc;

/**
 * How much context the memory history keeps, as the {@code context} argument of PyTorch's
 * {@code torch.cuda.memory._record_memory_history} (spec 10.1).
 */
public enum HistoryContext {
    /** No stacks at all ({@code context=None}). */
    NONE,
    /** Stacks of live blocks and segments only; trace entries carry none ({@code "state"}). */
    STATE,
    /** As STATE, and trace entries carry the allocation stack; frees carry the stack of their allocation ({@code "alloc"}). */
    ALLOC,
    /** As ALLOC, but frees (and empty_cache releases) carry the stack of the freeing call ({@code "all"}). */
    ALL;

    /**
     * @param name {@code null}, {@code "state"}, {@code "alloc"} or {@code "all"}
     * @return the level
     * @throws IllegalArgumentException with PyTorch's message for anything else
     */
    public static HistoryContext parse(String name) {
        if (name == null) {
            return NONE;
        }
        return switch (name) {
            case "state" -> STATE;
            case "alloc" -> ALLOC;
            case "all" -> ALL;
            default -> throw new IllegalArgumentException("expected context to be 'state', 'alloc', 'all', or None (got '" + name + "')");
        };
    }
}
