package io.vram4j.memory.stats;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FormatSizeTest {
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource(delimiter = ';', value = {
        "0;0 bytes",
        "4;4 bytes",
        "512;512 bytes",
        "1024;1024 bytes",
        "1025;1.00 KiB",
        "1034;1.01 KiB",
        "1536;1.50 KiB",
        // exact ties are rounded half to even like C++ printf: 1.125 -> 1.12, 1.375 -> 1.38, 2.625 -> 2.62
        "1152;1.12 KiB",
        "1153;1.13 KiB",
        "1408;1.38 KiB",
        "2688;2.62 KiB",
        "1048575;1024.00 KiB",
        "1048576;1024.00 KiB",
        "1048577;1.00 MiB",
        "2097152;2.00 MiB",
        "20971520;20.00 MiB",
        "88080384;84.00 MiB",
        "1073741823;1024.00 MiB",
        "1073741824;1024.00 MiB",
        "1073741825;1.00 GiB",
        "1610612736;1.50 GiB",
        "85899345920;80.00 GiB",
        "858993459200000000;800000000.00 GiB",
        "9223372036854775807;8589934592.00 GiB",
        // read as uint64_t like C++: -1 is 2^64 - 1
        "-1;17179869184.00 GiB"})
    void formatsLikePyTorchCpp(long bytes, String expected) {
        assertEquals(expected, FormatSize.formatSize(bytes));
    }

    /**
     * The decimals against an independent oracle, {@code BigDecimal}'s exact expansion of the same double rounded
     * half to even: every size of the first 16 KiB above 1 KiB (ties such as 1.125 among them), the sizes around
     * each unit boundary and every power of two, and 200,000 random sizes of each unit's range.
     */
    @Test
    void decimalsAreTheExactBinaryValueRoundedHalfToEven() {
        for (long b = 1025; b <= 1025 + 16384; b++) {
            assertEquals(oracle(b), FormatSize.formatSize(b), b + " bytes");
        }
        for (int shift = 10; shift < 64; shift++) {
            for (long delta = -3; delta <= 3; delta++) {
                long b = (1L << shift) + delta;
                if (Long.compareUnsigned(b, 1024) > 0) {
                    assertEquals(oracle(b), FormatSize.formatSize(b), b + " bytes");
                }
            }
        }
        Random random = new Random(13);
        long[] bounds = {1024L, 1L << 20, 1L << 30, 1L << 40, Long.MAX_VALUE};
        for (int unit = 0; unit + 1 < bounds.length; unit++) {
            for (int i = 0; i < 200_000; i++) {
                long b = bounds[unit] + 1 + (random.nextLong() & Long.MAX_VALUE) % (bounds[unit + 1] - bounds[unit]);
                assertEquals(oracle(b), FormatSize.formatSize(b), b + " bytes");
            }
        }
        assertEquals(oracle(-2), FormatSize.formatSize(-2));
    }

    /** What C++ prints for a size above 1 KiB, computed with BigDecimal (not the code under test). */
    private static String oracle(long bytes) {
        double v = bytes >= 0 ? bytes : ((double) ((bytes >>> 1) | (bytes & 1))) * 2.0;
        double d;
        String unit;
        if (Long.compareUnsigned(bytes, 1L << 20) <= 0) {
            d = v / 1024.0;
            unit = " KiB";
        } else if (Long.compareUnsigned(bytes, 1L << 30) <= 0) {
            d = v / 1048576.0;
            unit = " MiB";
        } else {
            d = v / 1073741824.0;
            unit = " GiB";
        }
        return new BigDecimal(d).setScale(2, RoundingMode.HALF_EVEN).toPlainString() + unit;
    }
}
