package io.vram4j.cli;

/**
 * Numbers as the reports write them ({@code %,d} with ',' and {@code %.1f MiB}), without {@link java.util.Formatter}:
 * its first numeric conversion loads the locale data ({@code DecimalFormatSymbols}, the CLDR provider), 35 to 100 ms in a
 * fresh JVM, more than the rest of printing a replay report (BENCHMARKS.md, "Start-up"). A {@code %s} conversion does
 * not, so reports keep {@code printf} for layout and pass numbers written here. Stateless and thread-safe.
 */
final class Figures {
    private Figures() {
    }

    /**
     * @param n a number
     * @return it in decimal with ',' between groups of three digits, as {@code String.format("%,d", n)} in an English
     *     locale: {@code 7946} → {@code "7,946"}, {@code -1234567} → {@code "-1,234,567"}
     */
    static String grouped(long n) {
        String digits = Long.toString(n);
        int first = n < 0 ? 1 : 0;
        int count = digits.length() - first;
        StringBuilder b = new StringBuilder(digits.length() + count / 3).append(digits, 0, first);
        for (int i = first; i < digits.length(); i++) {
            if (i > first && (digits.length() - i) % 3 == 0) {
                b.append(',');
            }
            b.append(digits.charAt(i));
        }
        return b.toString();
    }

    /**
     * @param bytes a size in bytes, at least 0 and below 2^59
     * @return it in MiB with one decimal, rounded half up like {@code String.format("%.1f MiB", bytes / 1048576.0)}:
     *     {@code 1310720} → {@code "1.3 MiB"} (1.25 exactly)
     */
    static String mib(long bytes) {
        long tenths = (bytes >> 20) * 10 + (((bytes & 0xfffff) * 10 + (1 << 19)) >> 20);
        return tenths / 10 + "." + tenths % 10 + " MiB";
    }
}
