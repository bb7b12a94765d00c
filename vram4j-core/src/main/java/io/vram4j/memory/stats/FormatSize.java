package io.vram4j.memory.stats;

/**
 * PyTorch's C++ {@code format_size} (c10/cuda/CUDACachingAllocator.cpp), used in the out-of-memory message
 * (spec 4.5). Unlike {@link MemorySummary}, it switches unit once the value exceeds 1024 of the current unit
 * and prints two decimals:
 * <ul>
 *   <li>n ≤ 1024 → {@code "<n> bytes"}</li>
 *   <li>n ≤ 1 048 576 → {@code "<n/1024> KiB"}</li>
 *   <li>n ≤ 1 073 741 824 → {@code "<n/2^20> MiB"}</li>
 *   <li>otherwise {@code "<n/2^30> GiB"} (no larger unit)</li>
 * </ul>
 * The decimals reproduce C++'s {@code std::fixed << setprecision(2)}: the quotient is computed in
 * {@code double} and its exact binary value is rounded to two decimals, ties to even. This is not
 * {@code String.format("%.2f")}, which rounds ties up: 1152 bytes is 1.125 KiB exactly and C++ prints
 * {@code "1.12 KiB"} where {@code String.format} would print {@code "1.13 KiB"}. No locale is involved
 * (always {@code '.'}). Stateless and thread-safe.
 */
public final class FormatSize {
    private static final long KIB = 1024L;
    private static final long MIB = 1048576L;
    private static final long GIB = 1073741824L;

    private FormatSize() {
    }

    /**
     * As PyTorch's {@code format_size(uint64_t)}.
     *
     * @param bytes the size in bytes, read as an <em>unsigned</em> 64-bit value like C++'s {@code uint64_t}
     *     (so -1 formats as 18446744073709551615 bytes, i.e. {@code "17179869184.00 GiB"})
     * @return e.g. {@code "512 bytes"}, {@code "1.00 KiB"}, {@code "20.00 MiB"}, {@code "800000000.00 GiB"}
     */
    public static String formatSize(long bytes) {
        if (Long.compareUnsigned(bytes, KIB) <= 0) {
            return Long.toUnsignedString(bytes) + " bytes";
        }
        double v = unsignedToDouble(bytes);
        if (Long.compareUnsigned(bytes, MIB) <= 0) {
            return fixed2(v / 1024.0) + " KiB";
        }
        if (Long.compareUnsigned(bytes, GIB) <= 0) {
            return fixed2(v / 1048576.0) + " MiB";
        }
        return fixed2(v / 1073741824.0) + " GiB";
    }

    /** C++ {@code static_cast<double>(uint64_t)}: round to nearest. */
    private static double unsignedToDouble(long v) {
        if (v >= 0) {
            return v;
        }
        // keep the lowest bit as a sticky bit so that halving then doubling rounds exactly once
        return ((double) ((v >>> 1) | (v & 1))) * 2.0;
    }

    /**
     * {@code printf("%.2f")} semantics: exact binary value, round half to even. Done in {@code long} arithmetic on
     * the double's mantissa and exponent rather than with {@code BigDecimal}, whose class initialisation alone
     * takes 20 to 70 ms in a fresh JVM (JDK 25 squares its way to 5^65536), the largest single cost of printing a
     * replay report (BENCHMARKS.md, "Start-up").
     *
     * @param d a quotient of {@link #formatSize}: finite, at least 1 and below 2^35, so its mantissa times 100
     *     fits in a long and at most 52 bits lie after the binary point
     */
    private static String fixed2(double d) {
        long bits = Double.doubleToRawLongBits(d);
        int exponent = (int) ((bits >>> 52) & 0x7ff) - 1075; // value = mantissa * 2^exponent
        long scaled = ((bits & 0xfffffffffffffL) | (1L << 52)) * 100;
        long cents;
        if (exponent >= 0) {
            cents = scaled << exponent;
        } else {
            int shift = -exponent;
            cents = scaled >>> shift;
            long rest = scaled & ((1L << shift) - 1);
            long half = 1L << (shift - 1);
            if (rest > half || (rest == half && (cents & 1) == 1)) {
                cents++;
            }
        }
        long fraction = cents % 100;
        return (cents / 100) + (fraction < 10 ? ".0" : ".") + fraction;
    }
}
