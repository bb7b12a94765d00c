package io.vram4j.tensor;

import io.vram4j.tensor.internal.ExecutionContext;

import io.vram4j.memory.stats.FormatSize;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Peak allocated memory split by {@link MemoryCategory}, as {@link MemoryProfiler} measured it. The categories
 * and {@link #untracked()} add up to {@link #peakAllocated()}.
 *
 * @param peakAllocated the allocator's allocated bytes at the peak
 * @param bytes bytes per category, indexed by {@link MemoryCategory#ordinal()}
 * @param untracked allocated bytes that belong to no tensor storage (direct allocator users); 0 in training
 * @param where what reached the peak, e.g. {@code backward h.3.attn (SoftmaxBackward)} (see
 *     {@link ExecutionContext#describe()}); empty when outside any module or phase
 */
public record MemoryProfile(long peakAllocated, long[] bytes, long untracked, String where) {
    /** Copies the array. */
    public MemoryProfile {
        bytes = bytes.clone();
    }

    /**
     * @param c a category
     * @return its bytes at the peak
     */
    public long bytes(MemoryCategory c) {
        return bytes[c.ordinal()];
    }

    /** @return category labels (e.g. {@code optimizer_state}) to bytes, in category order, for JSON */
    public Map<String, Long> asMap() {
        Map<String, Long> m = new LinkedHashMap<>();
        for (MemoryCategory c : MemoryCategory.values()) {
            m.put(c.name().toLowerCase(Locale.ROOT), bytes(c));
        }
        m.put("untracked", untracked);
        return m;
    }

    /** @return a small table: one line per category with its bytes and share, then the total and where */
    public String table() {
        StringBuilder sb = new StringBuilder("peak memory by category\n");
        for (MemoryCategory c : MemoryCategory.values()) {
            sb.append(line(c.label(), bytes(c)));
        }
        if (untracked != 0) {
            sb.append(line("untracked", untracked));
        }
        sb.append(line("total (peak allocated)", peakAllocated));
        sb.append("  reached in: ").append(where.isEmpty() ? "(no module)" : where).append('\n');
        return sb.toString();
    }

    private String line(String label, long b) {
        return String.format(Locale.ROOT, "  %-24s %12s  %5.1f%%%n", label, FormatSize.formatSize(b),
                peakAllocated == 0 ? 0.0 : 100.0 * b / peakAllocated);
    }
}
