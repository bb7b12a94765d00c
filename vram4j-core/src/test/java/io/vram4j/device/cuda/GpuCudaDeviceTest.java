package io.vram4j.device.cuda;

import io.vram4j.device.DeviceUnavailableException;
import org.junit.jupiter.api.Assumptions;
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
        GpuRequirement.requireGpu();
    }

    @Override
    CudaDevice open() {
        return CudaDevice.open(0);
    }

    @Override
    int fuzzSteps() {
        return 4_000;
    }

    /** Skips (or, with {@code VRAM4J_REQUIRE_GPU=1}, fails) a test class where no GPU can be opened. */
    static final class GpuRequirement {
        /** Set to {@code 1} (gpu/run.sh does), it makes the GPU tests fail instead of skip where no GPU opens. */
        static final String REQUIRE_GPU_ENV = "VRAM4J_REQUIRE_GPU";

        private GpuRequirement() {
        }

        static void requireGpu() {
            String reason = null;
            try {
                CudaDevice.open(0).close();
            } catch (DeviceUnavailableException e) {
                reason = e.getMessage();
            }
            if (reason != null && "1".equals(System.getenv(REQUIRE_GPU_ENV))) {
                throw new AssertionError(reason + " (" + REQUIRE_GPU_ENV + "=1)");
            }
            Assumptions.assumeTrue(reason == null, reason);
        }
    }
}
