package io.vram4j.device.cuda;

import io.vram4j.testsupport.GpuTests;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;

/**
 * The {@code cuda} device contract on a real GPU through {@code libcuda.so.1}. Tagged {@code gpu}: skipped with
 * the reason ("no CUDA driver: libcuda.so.1 not found", "no CUDA device ...") where there is none, and failed
 * instead when {@code VRAM4J_REQUIRE_GPU=1} (the GPU bundle's test run sets it).
 */
@Tag("gpu")
class GpuCudaDeviceTest extends CudaDeviceContract {

    @BeforeEach
    void requireGpu() {
        GpuTests.requireGpu();
    }

    @Override
    CudaDevice open() {
        return CudaDevice.open(0);
    }

    @Override
    int fuzzSteps() {
        return 4_000;
    }
}
