package io.vram4j.train;

import io.vram4j.tensor.TestDevice;

/**
 * {@link CheckpointEqualitySuite} on device memory the host cannot dereference ({@link TestDevice#opaque}, as a
 * GPU's): the plain and the checkpointed forward and backward, the recomputation and its dropout masks (drawn by the
 * device's kernel) all run through the device's kernels, and the gradients still agree bit for bit.
 */
class CheckpointOnDeviceMemoryTest extends CheckpointEqualitySuite {

    @Override
    TestDevice openDevice() {
        return TestDevice.opaque(256L << 20);
    }
}
