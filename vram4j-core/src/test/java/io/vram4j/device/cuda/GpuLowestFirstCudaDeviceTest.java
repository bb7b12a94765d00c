package io.vram4j.device.cuda;

import io.vram4j.testsupport.GpuTests;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;

/**
 * The {@code cuda} device contract on a real GPU with segments placed as {@code sim} places them
 * ({@link CudaSegments#LOWEST_ADDRESS_FIRST}: one reserved range, a physical allocation per segment), as
 * {@code train} and {@code find-batch-size} open the GPU. Tagged {@code gpu}; skipped or failed as
 * {@link GpuCudaDeviceTest}.
 */
@Tag("gpu")
class GpuLowestFirstCudaDeviceTest extends CudaDeviceContract {

    @BeforeEach
    void requireGpu() {
        GpuTests.requireGpu();
    }

    @Override
    CudaDevice open() {
        CudaDevice d = CudaDevice.open(0, CudaSegments.LOWEST_ADDRESS_FIRST);
        if (d.segments() != CudaSegments.LOWEST_ADDRESS_FIRST) {
            d.close();
            throw new AssertionError("the GPU did not allow segments placed in a reserved range (no virtual memory "
                    + "management, or a granularity that does not divide 2 MiB)");
        }
        return d;
    }

    @Override
    int fuzzSteps() {
        return 4_000;
    }
}
