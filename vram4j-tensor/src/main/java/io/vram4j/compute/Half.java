package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * Half-precision conversions: IEEE binary16 ("fp16") and bfloat16 ("bf16"), each stored as a 16-bit
 * {@code short} holding the raw bits.
 *
 * <ul>
 *   <li><b>fp16</b> (1 sign, 5 exponent, 10 fraction bits): {@link Float#floatToFloat16} and
 *       {@link Float#float16ToFloat}, which round to nearest even, turn overflow (at or above 65520) into
 *       ±Infinity, underflow into ±0 or a subnormal, and keep NaN a NaN. C2 compiles them to hardware
 *       conversions and vectorises loops over them.</li>
 *   <li><b>bf16</b> (1 sign, 8 exponent, 7 fraction bits; the top half of a float32): decoding is exact (a
 *       16-bit shift); encoding rounds to nearest even. NaN is mapped to the quiet NaN {@code 0x7FC0} with
 *       the input's sign, because plain rounding would turn a NaN whose payload lies only in the low bits
 *       into ±Infinity. Float32 values above the largest bf16 round to ±Infinity, as float32 does.</li>
 * </ul>
 *
 * <p>Bulk converters work on segments; offsets and counts are in elements of each side's own type
 * (floats or shorts), native byte order. Source and destination must not overlap. All methods are
 * stateless and thread-safe. They throw {@link IndexOutOfBoundsException} when a range does not fit its
 * segment and {@link IllegalArgumentException} when {@code n < 0}.
 */
public final class Half {

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED;

    /** The bf16 quiet NaN (positive sign) that {@link #floatToBf16} maps every NaN to. */
    public static final short BF16_NAN = (short) 0x7FC0;

    private Half() {
    }

    // ------------------------------------------------------------------------------------------------ scalars

    /** @return the fp16 bits nearest to {@code f} (round to nearest even) */
    public static short floatToFp16(float f) {
        return Float.floatToFloat16(f);
    }

    /** @return the float value of the fp16 bits {@code h} (exact) */
    public static float fp16ToFloat(short h) {
        return Float.float16ToFloat(h);
    }

    /** @return the bf16 bits nearest to {@code f} (round to nearest even; any NaN becomes ±{@code 0x7FC0}) */
    public static short floatToBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            return (short) ((bits >>> 16) & 0x8000 | 0x7FC0);
        }
        int lsb = (bits >>> 16) & 1;
        return (short) ((bits + 0x7FFF + lsb) >>> 16);
    }

    /** @return the float value of the bf16 bits {@code h} (exact) */
    public static float bf16ToFloat(short h) {
        return Float.intBitsToFloat(h << 16);
    }

    // ------------------------------------------------------------------------------------------------ bulk

    private static void check(long n, MemorySegment src, long srcOff, long srcBytes,
                              MemorySegment dst, long dstOff, long dstBytes) {
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        Checks.nonNegative(n, "n");
        if (srcOff < 0 || dstOff < 0 || srcOff > (Long.MAX_VALUE >> 3) - n || dstOff > (Long.MAX_VALUE >> 3) - n
                || (srcOff + n) * srcBytes > src.byteSize() || (dstOff + n) * dstBytes > dst.byteSize()) {
            throw new IndexOutOfBoundsException("range [" + srcOff + ", +" + n + ") -> [" + dstOff + ", +" + n
                    + ") does not fit segments of " + src.byteSize() + " and " + dst.byteSize() + " bytes");
        }
    }

    /** Converts {@code n} floats at {@code src[srcOff..]} to fp16 shorts at {@code dst[dstOff..]}. */
    public static void floatToFp16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        check(n, src, srcOff, Float.BYTES, dst, dstOff, Short.BYTES);
        for (long i = 0; i < n; i++) {
            dst.setAtIndex(S, dstOff + i, Float.floatToFloat16(src.getAtIndex(F, srcOff + i)));
        }
    }

    /** Converts {@code n} fp16 shorts at {@code src[srcOff..]} to floats at {@code dst[dstOff..]}. */
    public static void fp16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        check(n, src, srcOff, Short.BYTES, dst, dstOff, Float.BYTES);
        for (long i = 0; i < n; i++) {
            dst.setAtIndex(F, dstOff + i, Float.float16ToFloat(src.getAtIndex(S, srcOff + i)));
        }
    }

    /** Converts {@code n} floats at {@code src[srcOff..]} to bf16 shorts at {@code dst[dstOff..]}. */
    public static void floatToBf16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        check(n, src, srcOff, Float.BYTES, dst, dstOff, Short.BYTES);
        for (long i = 0; i < n; i++) {
            dst.setAtIndex(S, dstOff + i, floatToBf16(src.getAtIndex(F, srcOff + i)));
        }
    }

    /** Converts {@code n} bf16 shorts at {@code src[srcOff..]} to floats at {@code dst[dstOff..]}. */
    public static void bf16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        check(n, src, srcOff, Short.BYTES, dst, dstOff, Float.BYTES);
        for (long i = 0; i < n; i++) {
            dst.setAtIndex(F, dstOff + i, bf16ToFloat(src.getAtIndex(S, srcOff + i)));
        }
    }
}
