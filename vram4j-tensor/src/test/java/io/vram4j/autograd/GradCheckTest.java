package io.vram4j.autograd;

import io.vram4j.tensor.Device;
import io.vram4j.tensor.Tensor;
import io.vram4j.tensor.TestDevice;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link GradCheckSuite} on {@code host}, with the host's best kernels. */
class GradCheckTest extends GradCheckSuite {

    @Override
    TestDevice openDevice() {
        return TestDevice.host("host:256MiB");
    }

    @Test
    void inputsWithoutDataAreRefused() {
        try (Device sim = Device.open("sim:64MiB"); Tensor x = sim.zeros(3).requiresGrad(true)) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> GradCheck.check(in -> in[0].exp(), x));
            assertTrue(e.getMessage().contains("with data") && e.getMessage().contains("sim"), e.getMessage());
        }
    }
}
