package io.vram4j.compute.cuda;

import io.vram4j.device.Stream;
import io.vram4j.device.sim.SimDevice;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * {@link GpuQueue} on a {@code sim} device standing for a CUDA GPU ({@link SimDevice#cudaModel()}): nothing runs.
 * Launches are checked against the kernels' parameters as on the GPU, copies against the device's ranges (the
 * sim's data calls), cuBLAS is neither loaded nor called, and every read gives 0 (the
 * reductions return 0). With {@link CudaKernels} above it,
 * a dry run allocates what the {@code cuda} run allocates without computing anything.
 *
 * <p>Stateless and thread-safe.
 */
final class SimulatedQueue implements GpuQueue {
    private final SimDevice device;

    /** @param device a sim device standing for a CUDA GPU */
    SimulatedQueue(SimDevice device) {
        this.device = device;
    }

    @Override
    public void launch(CudaKernel kernel, LaunchConfig config, Stream stream, Object... values) {
        CudaLauncher.args(kernel, values);
    }

    @Override
    public void openBlas(Stream stream) {
        // no cuBLAS behind a sim device
    }

    @Override
    public void setBlasWorkspace(long address, long bytes) {
        device.fill(address, bytes, (byte) 0);   // only checks that the workspace is device memory
    }

    @Override
    public void gemm(ColumnMajorGemm g, float alpha, long a, long b, float beta, long c, int type) {
        // nothing computed
    }

    @Override
    public void gemmBatched(ColumnMajorGemm g, float alpha, long a, long strideA, long b, long strideB, float beta,
                            long c, long strideC, int batch, int type) {
        // nothing computed
    }

    /** @return true: a GPU with cuBLASLt adds the bias in the product, and nothing is computed here either */
    @Override
    public boolean gemmBias(ColumnMajorGemm g, float alpha, long a, long b, long bias, long c, int type) {
        return true;
    }

    @Override
    public void closeBlas() {
        // nothing was started
    }

    @Override
    public void fill(long dst, long bytes, byte value, Stream stream) {
        device.fill(dst, bytes, value);   // only checks that the range is device memory
    }

    @Override
    public void copyDeviceToDevice(long src, long dst, long bytes, Stream stream) {
        device.copyDeviceToDevice(src, dst, bytes);
    }

    @Override
    public void copyFromHost(MemorySegment src, long dst, Stream stream) {
        device.copyFromHost(src, dst);
    }

    @Override
    public float readFloat(long src, Stream stream) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment host = a.allocate(ValueLayout.JAVA_FLOAT);
            stream.synchronize();
            device.copyToHost(src, host);   // checks the range; zeros come back
            return host.get(ValueLayout.JAVA_FLOAT, 0);
        }
    }

    @Override
    public void close() {
        // no module was loaded
    }
}
