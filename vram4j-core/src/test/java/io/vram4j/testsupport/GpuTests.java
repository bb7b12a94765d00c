package io.vram4j.testsupport;

import io.vram4j.device.DeviceUnavailableException;
import io.vram4j.device.cuda.CudaDevice;
import org.junit.jupiter.api.Assumptions;

/**
 * The requirement of the tests tagged {@code gpu}, in vram4j-core and (through core's test jar) vram4j-tensor:
 * skipped with the reason where no CUDA GPU opens ("no CUDA driver: ...", "no CUDA device ..."), failed instead
 * when {@code VRAM4J_REQUIRE_GPU=1} (gpu/run.sh sets it, so that a GPU machine that cannot open its GPU does not
 * pass by skipping) or when the system property {@value #REQUIRE_GPU_PROPERTY} is {@code true} (the tensor module's
 * emulated GPU run sets it).
 */
public final class GpuTests {
    /** Set to {@code 1}, it makes the GPU tests fail instead of skip where no GPU opens. */
    public static final String REQUIRE_GPU_ENV = "VRAM4J_REQUIRE_GPU";
    /** Set to {@code true}, it does the same as {@link #REQUIRE_GPU_ENV}. */
    public static final String REQUIRE_GPU_PROPERTY = "vram4j.requireGpu";

    private GpuTests() {
    }

    /** Skips or fails the calling test as above unless CUDA device 0 opens. */
    public static void requireGpu() {
        require(unavailableReason());
    }

    /** @return null when CUDA device 0 opens (it is closed again), else the reason it does not */
    public static String unavailableReason() {
        try {
            CudaDevice.open(0).close();
            return null;
        } catch (DeviceUnavailableException e) {
            return e.getMessage();
        }
    }

    /**
     * Skips the calling test with {@code reason}, or fails it under {@code VRAM4J_REQUIRE_GPU=1} (or
     * {@value #REQUIRE_GPU_PROPERTY}); does nothing
     * when {@code reason} is null (a GPU is there).
     *
     * @param reason what {@link #unavailableReason()} said
     */
    public static void require(String reason) {
        if (reason != null && "1".equals(System.getenv(REQUIRE_GPU_ENV))) {
            throw new AssertionError(reason + " (" + REQUIRE_GPU_ENV + "=1)");
        }
        if (reason != null && Boolean.getBoolean(REQUIRE_GPU_PROPERTY)) {
            throw new AssertionError(reason + " (" + REQUIRE_GPU_PROPERTY + "=true)");
        }
        Assumptions.assumeTrue(reason == null, reason);
    }
}
