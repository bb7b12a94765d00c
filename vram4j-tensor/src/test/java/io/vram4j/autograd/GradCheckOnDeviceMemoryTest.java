package io.vram4j.autograd;

import io.vram4j.tensor.TestDevice;

/**
 * {@link GradCheckSuite} on device memory the host cannot dereference ({@link TestDevice#opaque}, as a GPU's): every
 * primitive's forward and backward, and the composites, run through the device's kernels on device memory (a host
 * load or store of a tensor's bytes would crash the JVM), and gradcheck reaches the values only through the
 * host-access copies. Each case's inputs and gradients must live there, and each case but a view's must launch
 * kernels on device memory.
 */
class GradCheckOnDeviceMemoryTest extends GradCheckSuite {

    @Override
    TestDevice openDevice() {
        return TestDevice.opaque(256L << 20);
    }
}
