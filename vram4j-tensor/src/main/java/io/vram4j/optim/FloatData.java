package io.vram4j.optim;

import io.vram4j.compute.Half;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Element access to a contiguous floating-point tensor's data, converting 16-bit types to and from float. */
final class FloatData {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED;
    private final MemorySegment seg;
    private final DType dtype;

    FloatData(Tensor t) {
        if (!t.isContiguous()) {
            throw new IllegalStateException("optimizer tensors must be contiguous");
        }
        this.seg = t.data();
        this.dtype = t.dtype();
    }

    float get(long i) {
        return switch (dtype) {
            case FLOAT32 -> seg.getAtIndex(F, i);
            case FLOAT16 -> Half.fp16ToFloat(seg.getAtIndex(S, i));
            case BFLOAT16 -> Half.bf16ToFloat(seg.getAtIndex(S, i));
            default -> throw new IllegalStateException("not a float tensor: " + dtype);
        };
    }

    void set(long i, float v) {
        switch (dtype) {
            case FLOAT32 -> seg.setAtIndex(F, i, v);
            case FLOAT16 -> seg.setAtIndex(S, i, Half.floatToFp16(v));
            case BFLOAT16 -> seg.setAtIndex(S, i, Half.floatToBf16(v));
            default -> throw new IllegalStateException("not a float tensor: " + dtype);
        }
    }
}
