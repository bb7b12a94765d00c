package io.vram4j.memory.stats;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

/**
 * Formats {@link MemoryStats} as PyTorch's {@code torch.cuda.memory_summary()} table (spec section 9),
 * character for character, including PyTorch's title wording ("PyTorch CUDA memory summary, device ID ...")
 * and the "CUDA OOMs" / "cudaMalloc retries" line, so that output can be compared with PyTorch's.
 *
 * <h2>Layout</h2>
 * Every line is {@code '|'} + 75 characters + {@code '|'} (longer only when a number does not fit its field,
 * exactly as Python's {@code str.format} grows), and the text ends with a newline. Metric blocks in order:
 * Allocated memory, Active memory, Requested memory, GPU reserved memory, Non-releasable memory (sizes),
 * Allocations, Active allocs, GPU reserved segments, Non-releasable allocs (counts), each with an {@code all}
 * row and, unless abbreviated, "from large pool" and "from small pool" rows; then the two oversize rows.
 *
 * <h2>Numbers</h2>
 * A size cell is the value right-aligned in 6 + space + a 3-character unit ({@code "B  "}, {@code KiB} ...
 * {@code PiB}); a count cell is right-aligned in 7 + space + prefix ({@code ' '}, {@code K}, {@code M}) + space.
 * The unit is chosen from a reference value: while the reference is ≥ 768 Ki (sizes; 750 000 for counts) and
 * a larger unit exists, the value is floor-divided by 1024 (1000) and the reference true-divided by it, as in
 * Python. Within a metric block every column uses the {@code all} row's value of that column as reference, so
 * the three rows share units per column; the oversize rows use each cell's own value.
 *
 * <p>Stateless and thread-safe.
 */
public final class MemorySummary {
    /** Inner width of every line (between the two {@code '|'}). */
    public static final int WIDTH = 75;

    private static final String[] SIZE_UNITS = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
    private static final String[] COUNT_PREFIXES = {" ", "K", "M"};
    private static final long SIZE_THRESHOLD = 768L * 1024;
    private static final long COUNT_THRESHOLD = 750L * 1000;

    private record Metric(String key, String label, boolean size) {
    }

    private static final List<Metric> METRICS = List.of(
            new Metric("allocated_bytes", "Allocated memory", true),
            new Metric("active_bytes", "Active memory", true),
            new Metric("requested_bytes", "Requested memory", true),
            new Metric("reserved_bytes", "GPU reserved memory", true),
            new Metric("inactive_split_bytes", "Non-releasable memory", true),
            new Metric("allocation", "Allocations", false),
            new Metric("active", "Active allocs", false),
            new Metric("segment", "GPU reserved segments", false),
            new Metric("inactive_split", "Non-releasable allocs", false));

    private static final List<Metric> OVERSIZE = List.of(
            new Metric("oversize_allocations", "Oversize allocations", false),
            new Metric("oversize_segments", "Oversize GPU segments", false));

    private static final String[] COLUMNS = {"current", "peak", "allocated", "freed"};

    private MemorySummary() {
    }

    /**
     * As PyTorch's {@code torch.cuda.memory_summary(device, abbreviated)}.
     *
     * @param device the device index shown in the title
     * @param stats the statistics; must hold the keys of the nine stat arrays, the two oversize stats,
     *     {@code num_ooms} and {@code num_alloc_retries}
     * @param abbreviated true to leave out the per-pool rows
     * @return the 77-column table, ending with a newline
     * @throws IllegalArgumentException if a needed key is missing from {@code stats}
     */
    public static String format(int device, MemoryStats stats, boolean abbreviated) {
        List<String> lines = new ArrayList<>();
        String eq = "=".repeat(WIDTH);
        String dash = "-".repeat(WIDTH);
        lines.add(eq);
        lines.add(" " + " ".repeat(16) + " PyTorch CUDA memory summary, device ID " + leftAlign(device, 17) + " ");
        lines.add(dash);
        lines.add("  " + " ".repeat(9) + " CUDA OOMs: " + leftAlign(stats.get("num_ooms"), 12) + " | "
                + " ".repeat(6) + " cudaMalloc retries: " + leftAlign(stats.get("num_alloc_retries"), 8) + "  ");
        lines.add(eq);
        lines.add("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");

        for (Metric m : METRICS) {
            lines.add(dash);
            String[][] rows = abbreviated
                    ? new String[][] {{"all", m.label()}}
                    : new String[][] {{"all", m.label()}, {"large_pool", "      from large pool"},
                            {"small_pool", "      from small pool"}};
            long[] reference = null;
            for (String[] row : rows) {
                long[] values = new long[COLUMNS.length];
                for (int c = 0; c < COLUMNS.length; c++) {
                    values[c] = stats.get(m.key() + "." + row[0] + "." + COLUMNS[c]);
                }
                if (reference == null) {
                    reference = values;
                }
                lines.add(row(row[1], values, reference, m.size()));
            }
        }
        for (Metric m : OVERSIZE) {
            lines.add(dash);
            long[] values = new long[COLUMNS.length];
            for (int c = 0; c < COLUMNS.length; c++) {
                values[c] = stats.get(m.key() + "." + COLUMNS[c]);
            }
            lines.add(row(m.label(), values, values, m.size()));
        }
        lines.add(eq);
        return "|" + String.join("|\n|", lines) + "|\n";
    }

    private static String row(String label, long[] values, long[] reference, boolean size) {
        StringBuilder sb = new StringBuilder(WIDTH);
        sb.append(' ').append(label).append(" ".repeat(Math.max(0, 21 - label.length())));
        for (int c = 0; c < values.length; c++) {
            sb.append(" | ").append(size ? formatSizeCell(values[c], reference[c])
                    : formatCountCell(values[c], reference[c]));
        }
        return sb.append(' ').toString();
    }

    /**
     * One size cell, as the {@code _format_size(sz, pref_sz)} helper of PyTorch's memory_summary.
     *
     * @param bytes the value
     * @param reference the value that picks the unit
     * @return e.g. {@code "  2048 KiB"} (10 characters unless the number needs more than 6 digits)
     */
    static String formatSizeCell(long bytes, long reference) {
        return scaled(bytes, reference, SIZE_UNITS, 1024, SIZE_THRESHOLD, 6);
    }

    /**
     * One count cell, as the {@code _format_count(cnt, pref_cnt)} helper of PyTorch's memory_summary.
     *
     * @param count the value
     * @param reference the value that picks the prefix
     * @return e.g. {@code "    750 K "} (10 characters unless the number needs more than 7 digits)
     */
    static String formatCountCell(long count, long reference) {
        return scaled(count, reference, COUNT_PREFIXES, 1000, COUNT_THRESHOLD, 7) + " ";
    }

    /**
     * Python: {@code for p in units[1:]: if ref < threshold: break; unit = p; v //= div; ref /= div}; the
     * value uses floor division (as Python's {@code //}), the reference becomes a float at the first true
     * division. The first comparison is exact integer arithmetic; the first division is correctly rounded
     * (Python's int / int), later ones are plain double divisions.
     * Returns {@code "%<width>d <unit>"} without the trailing space of count cells.
     */
    private static String scaled(long value, long reference, String[] units, long divisor, long threshold,
                                 int width) {
        String unit = units[0];
        long v = value;
        double ref = 0;
        for (int u = 1; u < units.length; u++) {
            boolean below = u == 1 ? reference < threshold : ref < threshold;
            if (below) {
                break;
            }
            unit = units[u];
            v = Math.floorDiv(v, divisor);
            ref = u == 1
                    ? new BigDecimal(reference).divide(BigDecimal.valueOf(divisor)).doubleValue()
                    : ref / divisor;
        }
        String digits = Long.toString(v);
        return " ".repeat(Math.max(0, width - digits.length())) + digits + " " + unit;
    }

    private static String leftAlign(long v, int width) {
        String s = Long.toString(v);
        return s + " ".repeat(Math.max(0, width - s.length()));
    }
}
