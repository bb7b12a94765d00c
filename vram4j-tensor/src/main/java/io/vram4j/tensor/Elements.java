package io.vram4j.tensor;

import io.vram4j.compute.Half;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Reads and writes single elements of any dtype as float or long, and bulk copies between Java arrays and tensors. */
final class Elements {
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;

    private Elements() {
    }

    static float getFloat(MemorySegment s, DType t, long i) {
        return switch (t) {
            case FLOAT32 -> s.getAtIndex(F32, i);
            case FLOAT16 -> Half.fp16ToFloat(s.getAtIndex(I16, i));
            case BFLOAT16 -> Half.bf16ToFloat(s.getAtIndex(I16, i));
            case INT32 -> s.getAtIndex(I32, i);
            case INT64 -> s.getAtIndex(I64, i);
            case BOOL -> s.get(ValueLayout.JAVA_BYTE, i);
        };
    }

    static void setFloat(MemorySegment s, DType t, long i, float v) {
        switch (t) {
            case FLOAT32 -> s.setAtIndex(F32, i, v);
            case FLOAT16 -> s.setAtIndex(I16, i, Half.floatToFp16(v));
            case BFLOAT16 -> s.setAtIndex(I16, i, Half.floatToBf16(v));
            case INT32 -> s.setAtIndex(I32, i, (int) v);
            case INT64 -> s.setAtIndex(I64, i, (long) v);
            case BOOL -> s.set(ValueLayout.JAVA_BYTE, i, (byte) (v != 0 ? 1 : 0));
        }
    }

    static long getLong(MemorySegment s, DType t, long i) {
        return switch (t) {
            case INT32 -> s.getAtIndex(I32, i);
            case INT64 -> s.getAtIndex(I64, i);
            case BOOL -> s.get(ValueLayout.JAVA_BYTE, i);
            default -> (long) getFloat(s, t, i);
        };
    }

    static void setLong(MemorySegment s, DType t, long i, long v) {
        switch (t) {
            case INT32 -> s.setAtIndex(I32, i, (int) v);
            case INT64 -> s.setAtIndex(I64, i, v);
            default -> setFloat(s, t, i, v);
        }
    }

    /** Writes row-major values into a freshly allocated contiguous tensor. */
    static void write(Tensor t, float[] data) {
        try (HostAccess h = HostAccess.write(t)) {
            MemorySegment s = h.seg();
            if (t.dtype() == DType.FLOAT32) {
                MemorySegment.copy(data, 0, s, F32, h.off() * 4, data.length);
            } else {
                for (int i = 0; i < data.length; i++) {
                    setFloat(s, t.dtype(), h.off() + i, data[i]);
                }
            }
            h.commit();
        }
    }

    static void write(Tensor t, int[] data) {
        try (HostAccess h = HostAccess.write(t)) {
            MemorySegment.copy(data, 0, h.seg(), I32, h.off() * 4, data.length);
            h.commit();
        }
    }

    static void write(Tensor t, long[] data) {
        try (HostAccess h = HostAccess.write(t)) {
            MemorySegment.copy(data, 0, h.seg(), I64, h.off() * 8, data.length);
            h.commit();
        }
    }

    /** @return the element at {@code index} (an element offset into the storage) of {@code t}, as float */
    static float readFloat(Tensor t, long index) {
        try (HostAccess h = HostAccess.element(t.storage(), t.dtype(), index)) {
            return getFloat(h.seg(), t.dtype(), h.off());
        }
    }

    /** @return the element at {@code index} of {@code t}, as long (integer types exactly) */
    static long readLong(Tensor t, long index) {
        try (HostAccess h = HostAccess.element(t.storage(), t.dtype(), index)) {
            return getLong(h.seg(), t.dtype(), h.off());
        }
    }
}
