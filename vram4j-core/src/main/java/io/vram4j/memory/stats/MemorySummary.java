package io.vram4j.memory.stats;

/**
 * Formats {@link MemoryStats} as PyTorch's {@code torch.cuda.memory_summary()} table (spec section 9).
 */
public final class MemorySummary {
    private MemorySummary() {
    }

    /**
     * @param device the device index shown in the title
     * @param stats the statistics
     * @param abbreviated true to leave out the per-pool rows
     * @return the 77-column table, ending with a newline
     */
    public static String format(int device, MemoryStats stats, boolean abbreviated) {
        throw new UnsupportedOperationException("not yet implemented");
    }
}
