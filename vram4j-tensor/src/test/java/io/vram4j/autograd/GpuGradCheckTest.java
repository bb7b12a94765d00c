package io.vram4j.autograd;

import io.vram4j.tensor.TestDevice;
import org.junit.jupiter.api.Tag;

/**
 * {@link GradCheckSuite} on a real GPU ({@code Device.open("cuda")}: the CUDA kernels and cuBLAS, float32): every
 * primitive's gradient and the composites against finite differences, with the host's tolerances. Tagged
 * {@code gpu}: each test is skipped with the reason where no GPU opens, and fails instead with
 * {@code VRAM4J_REQUIRE_GPU=1} (gpu/run.sh sets it).
 */
@Tag("gpu")
class GpuGradCheckTest extends GradCheckSuite {

    @Override
    TestDevice openDevice() {
        return TestDevice.cuda();
    }
}
