package io.vram4j.device.cuda;

import io.vram4j.alloc.AllocatorConformanceTest;
import io.vram4j.testsupport.GpuTests;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;

/**
 * The allocator conformance scenarios with their large device on a real GPU ({@code cuda}): every scenario that
 * needs "a large device" allocates GPU memory through the driver; the ones pinned to a small capacity keep their
 * {@code sim} device. Tagged {@code gpu}: skipped with the reason where there is no GPU, failed instead under
 * {@code VRAM4J_REQUIRE_GPU=1}.
 */
@Tag("gpu")
class GpuAllocatorConformanceTest extends AllocatorConformanceTest {

    @BeforeEach
    void requireGpu() {
        GpuTests.requireGpu();
    }

    @Override
    protected String largeDevice() {
        return "cuda";
    }
}
