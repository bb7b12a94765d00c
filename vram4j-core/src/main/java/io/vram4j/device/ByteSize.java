package io.vram4j.device;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses and formats byte sizes such as {@code 8GiB}, {@code 1.5 GiB}, {@code 512MB} or {@code 4096}.
 *
 * <p>Units, case-insensitive, with or without a space before them:
 * <ul>
 *   <li>none or {@code B}: bytes;</li>
 *   <li>binary: {@code KiB MiB GiB TiB PiB} (powers of 1024), also written {@code K M G T P} as in
 *       JVM options ({@code -Xmx8g});</li>
 *   <li>decimal: {@code KB MB GB TB PB} (powers of 1000), as GPU vendors quote capacities.</li>
 * </ul>
 * A number may have a fractional part ({@code 1.5GiB}); the result is rounded to the nearest byte.
 * Stateless and thread-safe.
 */
public final class ByteSize {
    /** 1 KiB = 1024 bytes. */
    public static final long KIB = 1L << 10;
    /** 1 MiB = 1024 KiB. */
    public static final long MIB = 1L << 20;
    /** 1 GiB = 1024 MiB. */
    public static final long GIB = 1L << 30;
    /** 1 TiB = 1024 GiB. */
    public static final long TIB = 1L << 40;
    /** 1 PiB = 1024 TiB. */
    public static final long PIB = 1L << 50;

    private static final Pattern SIZE = Pattern.compile("([0-9]+(?:\\.[0-9]+)?)\\s*([a-z]*)");
    private static final Map<String, Long> UNITS = Map.ofEntries(
            Map.entry("", 1L), Map.entry("b", 1L),
            Map.entry("k", KIB), Map.entry("kib", KIB), Map.entry("kb", 1_000L),
            Map.entry("m", MIB), Map.entry("mib", MIB), Map.entry("mb", 1_000_000L),
            Map.entry("g", GIB), Map.entry("gib", GIB), Map.entry("gb", 1_000_000_000L),
            Map.entry("t", TIB), Map.entry("tib", TIB), Map.entry("tb", 1_000_000_000_000L),
            Map.entry("p", PIB), Map.entry("pib", PIB), Map.entry("pb", 1_000_000_000_000_000L));
    private static final String[] BINARY_SUFFIXES = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    private static final String ACCEPTED = "a number of bytes with an optional unit: B, KiB, MiB, GiB, TiB, PiB "
            + "(binary) or KB, MB, GB, TB, PB (decimal), e.g. 8GiB or 1.5GB";

    private ByteSize() {
    }

    /**
     * Parses a size.
     *
     * @param text the size, e.g. {@code "8GiB"}, {@code "1.5 gib"}, {@code "4096"}; surrounding blanks are ignored
     * @return the size in bytes, rounded to the nearest byte, never negative
     * @throws IllegalArgumentException if the text is not a size, is negative, or does not fit in a {@code long}
     * @throws NullPointerException if {@code text} is null
     */
    public static long parse(String text) {
        String t = text.strip().toLowerCase(Locale.ROOT);
        if (t.startsWith("-")) {
            throw new IllegalArgumentException("size must not be negative: '" + text + "'");
        }
        Matcher m = SIZE.matcher(t);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a size: '" + text + "'; expected " + ACCEPTED);
        }
        Long unit = UNITS.get(m.group(2));
        if (unit == null) {
            throw new IllegalArgumentException("unknown unit '" + m.group(2) + "' in size '" + text + "'; expected "
                    + ACCEPTED);
        }
        BigDecimal bytes = new BigDecimal(m.group(1)).multiply(BigDecimal.valueOf(unit))
                .setScale(0, RoundingMode.HALF_UP);
        if (bytes.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw new IllegalArgumentException("size too large: '" + text + "' (the maximum is " + Long.MAX_VALUE
                    + " bytes)");
        }
        return bytes.longValueExact();
    }

    /**
     * Formats a size in the largest binary unit in which it is at least 1, with at most two decimals and no
     * space: {@code 512B}, {@code 1.5KiB}, {@code 8GiB}, {@code 79.19GiB}. Exact for whole multiples of a
     * unit, so {@code parse(format(n)) == n} for such sizes.
     *
     * @param bytes a size in bytes; negative sizes (differences) are formatted with a leading minus
     * @return the short form
     */
    public static String format(long bytes) {
        if (bytes < 0) {
            return bytes == Long.MIN_VALUE ? "-8EiB" : "-" + format(-bytes);
        }
        int unit = 0;
        while (unit < BINARY_SUFFIXES.length - 1 && bytes >= (1L << (10 * (unit + 1)))) {
            unit++;
        }
        BigDecimal value = BigDecimal.valueOf(bytes).divide(BigDecimal.valueOf(1L << (10 * unit)))
                .setScale(2, RoundingMode.HALF_UP).stripTrailingZeros();
        return value.toPlainString() + BINARY_SUFFIXES[unit];
    }
}
