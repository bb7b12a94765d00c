package io.vram4j.tensor;

import java.util.Locale;

/**
 * Element types of tensors. Floating-point types of 16 bits are stored as 16-bit values and computed in
 * float32: every op converts them to float32 at its inputs and back at its outputs (with
 * {@link io.vram4j.compute.Half}). {@link #BOOL} (one byte, 0 or 1) is used for masks (dropout), as in
 * PyTorch.
 */
public enum DType {
    /** IEEE binary32. */
    FLOAT32(4, "F32", "float32", true),
    /** IEEE binary16 ("half"). */
    FLOAT16(2, "F16", "float16", true),
    /** bfloat16: the top 16 bits of a float32. */
    BFLOAT16(2, "BF16", "bfloat16", true),
    /** 32-bit two's-complement integer. */
    INT32(4, "I32", "int32", false),
    /** 64-bit two's-complement integer. */
    INT64(8, "I64", "int64", false),
    /** One byte holding 0 or 1. */
    BOOL(1, "BOOL", "bool", false);

    private final int byteSize;
    private final String safetensorsName;
    private final String torchName;
    private final boolean floatingPoint;

    DType(int byteSize, String safetensorsName, String torchName, boolean floatingPoint) {
        this.byteSize = byteSize;
        this.safetensorsName = safetensorsName;
        this.torchName = torchName;
        this.floatingPoint = floatingPoint;
    }

    /** @return bytes per element */
    public int byteSize() {
        return byteSize;
    }

    /** @return true for float32, float16 and bfloat16: the types that can require gradients */
    public boolean isFloatingPoint() {
        return floatingPoint;
    }

    /** @return the dtype name used in safetensors headers: {@code F32}, {@code F16}, {@code BF16}, {@code I32}, {@code I64}, {@code BOOL} */
    public String safetensorsName() {
        return safetensorsName;
    }

    /**
     * @param name a safetensors dtype name (case-sensitive, as the format specifies)
     * @return the matching dtype
     * @throws IllegalArgumentException for names this runtime does not support
     */
    public static DType fromSafetensors(String name) {
        for (DType d : values()) {
            if (d.safetensorsName.equals(name)) {
                return d;
            }
        }
        throw new IllegalArgumentException("unsupported safetensors dtype '" + name + "' (supported: F32, F16, BF16, I32, I64, BOOL)");
    }

    /**
     * @param name a PyTorch-style name such as {@code float32}, {@code bf16} or {@code int64} (case-insensitive)
     * @return the dtype
     * @throws IllegalArgumentException for an unknown name
     */
    public static DType parse(String name) {
        String n = name.strip().toLowerCase(Locale.ROOT);
        return switch (n) {
            case "float32", "float", "f32", "fp32" -> FLOAT32;
            case "float16", "half", "f16", "fp16" -> FLOAT16;
            case "bfloat16", "bf16" -> BFLOAT16;
            case "int32", "int", "i32" -> INT32;
            case "int64", "long", "i64" -> INT64;
            case "bool" -> BOOL;
            default -> throw new IllegalArgumentException("unknown dtype '" + name
                    + "' (expected float32, float16, bfloat16, int32, int64 or bool)");
        };
    }

    /** @return the PyTorch name, e.g. {@code float32} */
    @Override
    public String toString() {
        return torchName;
    }
}
