package io.vram4j.device;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ByteSizeTest {

    @Test
    void parsesPlainBytesAndBinaryUnits() {
        assertEquals(0, ByteSize.parse("0"));
        assertEquals(4096, ByteSize.parse("4096"));
        assertEquals(17, ByteSize.parse("17B"));
        assertEquals(1024, ByteSize.parse("1KiB"));
        assertEquals(3L << 20, ByteSize.parse("3MiB"));
        assertEquals(8L << 30, ByteSize.parse("8GiB"));
        assertEquals(2L << 40, ByteSize.parse("2TiB"));
        assertEquals(1L << 50, ByteSize.parse("1PiB"));
        assertEquals(8L << 30, ByteSize.parse("8g"), "JVM-style single letters are binary");
    }

    @Test
    void parsesDecimalUnits() {
        assertEquals(1_000, ByteSize.parse("1KB"));
        assertEquals(512_000_000, ByteSize.parse("512MB"));
        assertEquals(80_000_000_000L, ByteSize.parse("80GB"));
        assertEquals(2_000_000_000_000L, ByteSize.parse("2TB"));
    }

    @Test
    void isCaseInsensitiveAndToleratesBlanks() {
        assertEquals(8L << 30, ByteSize.parse(" 8gib "));
        assertEquals(8L << 30, ByteSize.parse("8 GIB"));
        assertEquals(5_000, ByteSize.parse("5kb"));
    }

    @Test
    void acceptsFractionsRoundedToTheNearestByte() {
        assertEquals(1_610_612_736L, ByteSize.parse("1.5GiB"));
        assertEquals(1_500_000_000L, ByteSize.parse("1.5GB"));
        assertEquals(1126, ByteSize.parse("1.1KiB"), "1126.4 bytes");
        assertEquals(1025, ByteSize.parse("1.0005KiB"), "1024.512 bytes");
        assertEquals(512, ByteSize.parse("0.5KiB"));
    }

    @Test
    void rejectsWhatIsNotASize() {
        for (String bad : new String[] {"", "  ", "abc", "GiB", "1.5.5GiB", "1 2", "1XB", "0x10", "1e3", "+5"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ByteSize.parse(bad),
                    "'" + bad + "'");
            assertTrue(e.getMessage().contains("'" + bad + "'") || e.getMessage().contains("unknown unit"),
                    e.getMessage());
        }
        IllegalArgumentException unit = assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("1XB"));
        assertTrue(unit.getMessage().contains("unknown unit 'xb'"), unit.getMessage());
        assertThrows(NullPointerException.class, () -> ByteSize.parse(null));
    }

    @Test
    void rejectsNegativeAndOverlargeSizes() {
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                () -> ByteSize.parse("-1GiB"));
        assertTrue(negative.getMessage().contains("negative"), negative.getMessage());
        IllegalArgumentException large = assertThrows(IllegalArgumentException.class,
                () -> ByteSize.parse("9000000TiB"));
        assertTrue(large.getMessage().contains("too large"), large.getMessage());
        assertEquals(Long.MAX_VALUE, ByteSize.parse(Long.toString(Long.MAX_VALUE)));
        assertThrows(IllegalArgumentException.class, () -> ByteSize.parse("9223372036854775808"));
    }

    @Test
    void formatsInTheLargestFittingBinaryUnit() {
        assertEquals("0B", ByteSize.format(0));
        assertEquals("512B", ByteSize.format(512));
        assertEquals("1023B", ByteSize.format(1023));
        assertEquals("1KiB", ByteSize.format(1024));
        assertEquals("1.5KiB", ByteSize.format(1536));
        assertEquals("20MiB", ByteSize.format(20L << 20));
        assertEquals("8GiB", ByteSize.format(8L << 30));
        assertEquals("79.19GiB", ByteSize.format(85_028_896_768L));
        assertEquals("1PiB", ByteSize.format(1L << 50));
        assertEquals("8EiB", ByteSize.format(Long.MAX_VALUE));
        assertEquals("-2MiB", ByteSize.format(-(2L << 20)));
    }

    @Test
    void formatAndParseRoundTripForWholeUnits() {
        for (long bytes : new long[] {1, 1023, 1024, 3L << 20, 1536L << 20, 80L << 30, 5L << 40}) {
            assertEquals(bytes, ByteSize.parse(ByteSize.format(bytes)), ByteSize.format(bytes));
        }
    }
}
