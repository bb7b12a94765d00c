package io.vram4j.compute;

import java.lang.foreign.MemorySegment;

/**
 * The float16/bfloat16 conversions of the CPU kernels, shared by {@link ScalarKernels} and {@link VectorKernels}:
 * {@link Half}'s loops over host memory (no checks here; {@link CheckedKernels} checks).
 */
interface HostConversions extends Kernels {

    @Override
    default void floatToFp16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Half.floatToFp16(n, src, srcOff, dst, dstOff);
    }

    @Override
    default void floatToBf16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Half.floatToBf16(n, src, srcOff, dst, dstOff);
    }

    @Override
    default void fp16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Half.fp16ToFloat(n, src, srcOff, dst, dstOff);
    }

    @Override
    default void bf16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Half.bf16ToFloat(n, src, srcOff, dst, dstOff);
    }
}
