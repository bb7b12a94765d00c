package io.vram4j.train;

import io.vram4j.tensor.TestDevice;
import org.junit.jupiter.api.Tag;

/**
 * {@link CheckpointEqualitySuite} on a real GPU ({@code Device.open("cuda")}): checkpointed gradients, with dropout
 * replayed by the recomputation, equal the plain ones bit for bit (the same kernels on the same inputs, in the same
 * order). Tagged {@code gpu}: each test is skipped with the reason where no GPU opens, and fails instead with
 * {@code VRAM4J_REQUIRE_GPU=1} (gpu/run.sh sets it).
 */
@Tag("gpu")
class GpuCheckpointTest extends CheckpointEqualitySuite {

    @Override
    TestDevice openDevice() {
        return TestDevice.cuda();
    }
}
