package io.vram4j.memory.stats;

import java.util.Locale;

/** PyTorch's C++ {@code format_size}, used in out-of-memory messages (spec 4.5). */
public final class FormatSize {
    private FormatSize() {
    }

    /**
     * @param bytes a byte count
     * @return {@code "<n> bytes"} up to 1024, else KiB/MiB/GiB with two decimals
     */
    public static String formatSize(long bytes) {
        if (bytes <= 1024) {
            return bytes + " bytes";
        } else if (bytes <= 1048576) {
            return String.format(Locale.ROOT, "%.2f KiB", bytes / 1024.0);
        } else if (bytes <= 1073741824) {
            return String.format(Locale.ROOT, "%.2f MiB", bytes / 1048576.0);
        } else {
            return String.format(Locale.ROOT, "%.2f GiB", bytes / 1073741824.0);
        }
    }
}
