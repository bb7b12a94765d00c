package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

class HalfTest {

    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED;

    private static short bf16(int floatBits) {
        return Half.floatToBf16(Float.intBitsToFloat(floatBits));
    }

    @Test
    void fp16KnownPatterns() {
        assertEquals((short) 0x3E00, Half.floatToFp16(1.5f));
        assertEquals(1.5f, Half.fp16ToFloat((short) 0x3E00));
        assertEquals((short) 0x3C00, Half.floatToFp16(1f));
        assertEquals((short) 0xC000, Half.floatToFp16(-2f));
        assertEquals((short) 0x7BFF, Half.floatToFp16(65504f));
        assertEquals((short) 0x7BFF, Half.floatToFp16(65519f)); // below the rounding midpoint
        assertEquals((short) 0x7C00, Half.floatToFp16(65520f)); // overflow to +Inf
        assertEquals((short) 0xFC00, Half.floatToFp16(-65520f));
        assertEquals((short) 0x7C00, Half.floatToFp16(Float.POSITIVE_INFINITY));
        assertEquals((short) 0xFC00, Half.floatToFp16(Float.NEGATIVE_INFINITY));
        assertEquals((short) 0x0001, Half.floatToFp16(0x1p-24f)); // smallest subnormal
        assertEquals((short) 0x0000, Half.floatToFp16(1e-8f)); // underflow to 0
        assertEquals((short) 0x8000, Half.floatToFp16(-0f));
        assertTrue(Float.isNaN(Half.fp16ToFloat(Half.floatToFp16(Float.NaN))));
        assertEquals(Float.POSITIVE_INFINITY, Half.fp16ToFloat((short) 0x7C00));
        // ties to even: 1 + 2^-11 is halfway between 0x3C00 and 0x3C01
        assertEquals((short) 0x3C00, Half.floatToFp16(1f + 0x1p-11f));
        assertEquals((short) 0x3C02, Half.floatToFp16(1f + 3 * 0x1p-11f));
    }

    @Test
    void bf16KnownPatterns() {
        assertEquals((short) 0x3F80, Half.floatToBf16(1f));
        assertEquals(1f, Half.bf16ToFloat((short) 0x3F80));
        assertEquals((short) 0xC000, Half.floatToBf16(-2f));
        // round to nearest, ties to even
        assertEquals((short) 0x3F80, bf16(0x3F808000));
        assertEquals((short) 0x3F82, bf16(0x3F818000));
        assertEquals((short) 0x3F81, bf16(0x3F808001));
        assertEquals((short) 0x3F80, bf16(0x3F807FFF));
        // infinities, overflow and signed zero
        assertEquals((short) 0x7F80, Half.floatToBf16(Float.POSITIVE_INFINITY));
        assertEquals((short) 0xFF80, Half.floatToBf16(Float.NEGATIVE_INFINITY));
        assertEquals((short) 0x7F80, Half.floatToBf16(Float.MAX_VALUE));
        assertEquals((short) 0x7F7F, bf16(0x7F7F7FFF));
        assertEquals((short) 0x8000, Half.floatToBf16(-0f));
        assertEquals(Float.NEGATIVE_INFINITY, Half.bf16ToFloat((short) 0xFF80));
        // NaN guard: a NaN whose payload is only in the low bits must stay NaN, with its sign
        assertEquals((short) 0x7FC0, bf16(0x7F800001));
        assertEquals((short) 0xFFC0, bf16(0xFF800001));
        assertEquals((short) 0x7FC0, bf16(0x7FFFFFFF));
        assertEquals((short) 0x7FC0, Half.floatToBf16(Float.NaN));
        assertEquals(Half.BF16_NAN, Half.floatToBf16(Float.intBitsToFloat(0x7FC00000)));
    }

    @Test
    void allFp16PatternsRoundTrip() {
        for (int h = 0; h < 65536; h++) {
            short bits = (short) h;
            float f = Half.fp16ToFloat(bits);
            if (Float.isNaN(f)) {
                assertTrue((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0, "NaN from a non-NaN pattern " + h);
                assertTrue(Float.isNaN(Half.fp16ToFloat(Half.floatToFp16(f))));
                continue;
            }
            assertEquals(bits, Half.floatToFp16(f), "fp16 pattern 0x" + Integer.toHexString(h));
        }
    }

    @Test
    void allBf16PatternsRoundTrip() {
        for (int h = 0; h < 65536; h++) {
            short bits = (short) h;
            float f = Half.bf16ToFloat(bits);
            assertEquals(h << 16, Float.floatToRawIntBits(f));
            if (Float.isNaN(f)) {
                assertEquals((short) ((h & 0x8000) | 0x7FC0), Half.floatToBf16(f));
                continue;
            }
            assertEquals(bits, Half.floatToBf16(f), "bf16 pattern 0x" + Integer.toHexString(h));
        }
    }

    @Test
    void bf16EncodingIsNearest() {
        Random rnd = new Random(7);
        for (int i = 0; i < 200_000; i++) {
            float f = Float.intBitsToFloat(rnd.nextInt());
            if (Float.isNaN(f) || Float.isInfinite(f)) {
                continue;
            }
            short b = Half.floatToBf16(f);
            float r = Half.bf16ToFloat(b);
            int hi = Float.floatToRawIntBits(f) & 0xFFFF0000;
            double lo = Float.intBitsToFloat(hi);
            double up = Float.intBitsToFloat(hi + 0x10000);
            double best = Math.abs(f - lo) <= Math.abs(up - f) ? lo : up;
            if (!Double.isInfinite(r)) {
                assertEquals(Math.abs(best - f), Math.abs(r - f), 0.0, "bf16 of " + f);
            }
        }
    }

    @Test
    void bulkConvertersMatchScalarOnes() {
        Random rnd = new Random(8);
        int n = 1003;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = TestData.random(arena, rnd, n + 3, -70000, 70000);
            TestData.set(src, 5, Float.NaN);
            TestData.set(src, 6, Float.intBitsToFloat(0x7F800001));
            TestData.set(src, 7, 1e-9f);
            MemorySegment h = arena.allocate((n + 2) * 2L);
            MemorySegment back = arena.allocate((n + 1) * 4L);
            Half.floatToFp16(n, src, 3, h, 2);
            Half.fp16ToFloat(n, h, 2, back, 1);
            for (int i = 0; i < n; i++) {
                float f = TestData.get(src, 3 + i);
                assertEquals(Half.floatToFp16(f), h.getAtIndex(S, 2 + i));
                assertEquals(Half.fp16ToFloat(Half.floatToFp16(f)), TestData.get(back, 1 + i));
            }
            Half.floatToBf16(n, src, 3, h, 2);
            Half.bf16ToFloat(n, h, 2, back, 1);
            for (int i = 0; i < n; i++) {
                float f = TestData.get(src, 3 + i);
                assertEquals(Half.floatToBf16(f), h.getAtIndex(S, 2 + i));
                assertEquals(Half.bf16ToFloat(Half.floatToBf16(f)), TestData.get(back, 1 + i));
            }
            assertThrows(IndexOutOfBoundsException.class, () -> Half.floatToBf16(n, src, 3, h, 3));
            assertThrows(IllegalArgumentException.class, () -> Half.bf16ToFloat(-1, h, 0, back, 0));
        }
    }
}
