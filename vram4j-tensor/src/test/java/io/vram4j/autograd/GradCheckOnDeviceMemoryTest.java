package io.vram4j.autograd;

import io.vram4j.tensor.Device;
import io.vram4j.tensor.OpaqueTensorDevice;
import io.vram4j.tensor.Tensor;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link GradCheckSuite} on device memory the host cannot dereference ({@link OpaqueTensorDevice}, as a GPU's): every
 * primitive's forward and backward, and the composites, run through the device's kernels on device memory (a host
 * load or store of a tensor's bytes would crash the JVM), and gradcheck reaches the values only through the
 * host-access copies. Each case must launch kernels on device memory, and its inputs and gradients must live there.
 */
class GradCheckOnDeviceMemoryTest extends GradCheckSuite {
    private OpaqueTensorDevice opaque;

    @Override
    Device openDevice() {
        opaque = OpaqueTensorDevice.open(256L << 20);
        return opaque.device();
    }

    @Override
    void closeDevice(Device d) {
        opaque.close();
    }

    @Override
    void assertOnDevice(String what, Tensor t) {
        super.assertOnDevice(what, t);
        assertTrue(OpaqueTensorDevice.inDeviceMemory(t), what + ": in device memory, at 0x"
                + Long.toHexString(t.storage().address()));
    }

    @Override
    long deviceLaunches() {
        return opaque.counters().launches().get();
    }
}
