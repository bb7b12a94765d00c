package io.vram4j.compute.cuda;

import io.vram4j.device.Stream;

import java.lang.foreign.MemorySegment;

/**
 * Where {@link CudaKernels} sends its GPU work: kernel launches, cuBLAS products and copies. Everything the
 * kernels take from the caching allocator (the cuBLAS workspace, reduction partials, the fused optimizers'
 * address tables, loss temporaries, the buffer of an overlapping copy) is taken by {@link CudaKernels} itself,
 * above this seam, so a run on a {@code sim} device standing for a CUDA GPU ({@link SimulatedQueue}) makes exactly
 * the allocator calls, in the same order and on the same streams, as a run on {@code cuda} ({@link DriverQueue}):
 * they are the same code.
 *
 * <p>Implementations are thread-safe for launches and copies; cuBLAS calls are serialized by the caller.
 */
interface GpuQueue extends AutoCloseable {
    /**
     * Queues {@code kernel} on {@code stream}; checks the values against the kernel's parameters first
     * ({@link CudaLauncher#args}) and does nothing for an empty grid.
     *
     * @throws IllegalArgumentException naming the kernel when a value does not fit its parameter
     */
    void launch(CudaKernel kernel, LaunchConfig config, Stream stream, Object... values);

    /** Starts cuBLAS with its calls on {@code stream} ({@code cublasCreate_v2}, {@code cublasSetStream_v2}). */
    void openBlas(Stream stream);

    /** Hands cuBLAS its workspace, {@code bytes} of device memory at {@code address} ({@code cublasSetWorkspace_v2}). */
    void setBlasWorkspace(long address, long bytes);

    /** {@code cublasGemmEx} ({@link Cublas#gemm}) with float32 accumulation; A, B and C of CUDA type {@code type}. */
    void gemm(ColumnMajorGemm g, float alpha, long a, long b, float beta, long c, int type);

    /** {@code cublasGemmStridedBatchedEx} ({@link Cublas#gemmBatched}); strides in elements. */
    void gemmBatched(ColumnMajorGemm g, float alpha, long a, long strideA, long b, long strideB, float beta, long c,
                     long strideC, int batch, int type);

    /**
     * {@code cublasLtMatmul} with the bias epilogue ({@link CublasLt#matmulBias}): {@code C = alpha op(A) op(B)} plus
     * the bias on every row, one 2-D product of CUDA type {@code type}.
     *
     * @return false, with nothing queued, where cuBLASLt is not loaded or has no algorithm for the product
     */
    boolean gemmBias(ColumnMajorGemm g, float alpha, long a, long b, long bias, long c, int type);

    /** Ends cuBLAS ({@code cublasDestroy_v2}, and cuBLASLt's handle); nothing when it was not started. */
    void closeBlas();

    /** Queues setting {@code bytes} bytes of device memory from {@code dst} to {@code value} on {@code stream}. */
    void fill(long dst, long bytes, byte value, Stream stream);

    /** Queues a copy of {@code bytes} between ranges of device memory on {@code stream}. */
    void copyDeviceToDevice(long src, long dst, long bytes, Stream stream);

    /** Queues a copy of host memory (staged by the driver before it returns) to device memory on {@code stream}. */
    void copyFromHost(MemorySegment src, long dst, Stream stream);

    /** @return the float at device address {@code src}, read once {@code stream} has done its work */
    float readFloat(long src, Stream stream);

    /** Unloads the kernels; closing twice does nothing. */
    @Override
    void close();
}
