package io.vram4j.compute.cuda;

/**
 * The type of one parameter of a CUDA kernel, as the Java launch descriptors ({@link CudaKernelTable}) declare it,
 * with the PTX type nvcc gives that C type in the kernel's {@code .entry} declaration (PTX ISA, "Kernel Function
 * Parameters": pointers and 64-bit integers are {@code .u64}, {@code int} is {@code .u32}, {@code float} is
 * {@code .f32}).
 */
enum KernelParam {
    /** A device pointer ({@code const float*}, {@code long long*}, ...): 8 bytes. */
    PTR(".u64", 8),
    /** An element count ({@code unsigned long long}): 8 bytes. */
    U64(".u64", 8),
    /** A signed 64-bit value ({@code long long}), e.g. a stride or an ignore index: 8 bytes. */
    S64(".u64", 8),
    /** A 32-bit {@code int}: rows, columns, extents, flags. */
    I32(".u32", 4),
    /** A {@code float}. */
    F32(".f32", 4);

    private final String ptxType;
    private final int bytes;

    KernelParam(String ptxType, int bytes) {
        this.ptxType = ptxType;
        this.bytes = bytes;
    }

    /** @return the PTX parameter type, e.g. {@code ".u64"} */
    String ptxType() {
        return ptxType;
    }

    /** @return the size of the value in the launch's parameter buffer, in bytes */
    int bytes() {
        return bytes;
    }
}
