package io.vram4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link Figures} against {@link String#format}, the oracle it replaces on the replay report's path. */
class FiguresTest {
    @Test
    void groupedIsFormatsCommaD() {
        long[] edges = {0, 1, -1, 999, 1000, -1000, 7946, 23105, 999_999, 1_000_000, 123_456_789,
            Long.MAX_VALUE, Long.MIN_VALUE, Long.MIN_VALUE + 1};
        for (long n : edges) {
            assertEquals(String.format(Locale.US, "%,d", n), Figures.grouped(n));
        }
        Random random = new Random(7);
        for (int i = 0; i < 100_000; i++) {
            long n = random.nextLong() >> random.nextInt(64);
            assertEquals(String.format(Locale.US, "%,d", n), Figures.grouped(n), Long.toString(n));
        }
    }

    @Test
    void mibIsFormatsPointOneF() {
        // every multiple of 1/64 MiB up to 4 MiB (ties such as 1.25 and 3.75 MiB among them), then random sizes
        for (long b = 0; b <= 4L << 20; b += 1 << 14) {
            assertEquals(String.format(Locale.ROOT, "%.1f MiB", b / 1048576.0), Figures.mib(b), b + " bytes");
        }
        Random random = new Random(11);
        for (int i = 0; i < 100_000; i++) {
            long b = random.nextLong() >>> (14 + random.nextInt(50)); // below 2^50: the double is exact
            assertEquals(String.format(Locale.ROOT, "%.1f MiB", b / 1048576.0), Figures.mib(b), b + " bytes");
        }
    }
}
