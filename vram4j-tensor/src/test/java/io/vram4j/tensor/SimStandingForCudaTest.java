package io.vram4j.tensor;

import io.vram4j.alloc.AllocatorListener;
import io.vram4j.device.Stream;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A {@code sim} device standing for a CUDA GPU: the ops take their {@code cuda} paths with the CUDA kernels over a
 * queue that runs nothing, so they allocate what the GPU's kernels allocate (here: the cuBLAS workspace at the
 * first product, a reduction's partials) and compute nothing; values read back are zeros.
 */
class SimStandingForCudaTest {

    /** The sizes of the blocks the allocator hands out, in order. */
    private static List<Long> allocations(Device d) {
        List<Long> sizes = new ArrayList<>();
        d.allocator().setListener(new AllocatorListener() {
            @Override
            public void alloc(long addr, long size, Stream stream, Object context) {
                sizes.add(size);
            }
        });
        return sizes;
    }

    @Test
    void aPresetComputesNothingAndTakesTheKernelsAllocations() {
        try (Device d = Device.open("sim:H100-80GB"); MemoryScope s = MemoryScope.open()) {
            assertEquals("cuda (simulated)", d.kernels().name());
            assertTrue(d.isSimulated());
            assertTrue(d.hasStorage(), "the ops take their device-memory paths");
            assertFalse(d.hostAccessible());
            List<Long> sizes = allocations(d);
            Tensor a = d.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
            Tensor b = d.ones(3, 2);
            Tensor c = a.matmul(b);
            assertEquals(List.of(24L, 24L, 16L, 32L << 20), sizes, "a, b, c, then the workspace of compute capability "
                    + "9.0 (32 MiB) at the first product");
            a.matmul(b).close();
            assertEquals(5, sizes.size(), "the workspace is taken once and held");
            assertArrayEquals(new float[4], c.toFloatArray(), "nothing computed: zeros come back");
            sizes.clear();
            assertEquals(0f, d.kernels().sum(6, a.storage().kernelSegment(), a.offsetUnchecked()), "a reduction reads 0");
            assertEquals(List.of(8L), sizes, "its partial and result (grid 1 + 1 floats), freed when it returned");
            assertEquals(4L, d.allocator().memoryStats().asMap().get("allocation.all.current"), "a, b, c and the workspace");
            assertThrows(UnsupportedOperationException.class, a::data, "device memory: no host view");
        }
    }

    @Test
    void theWorkspaceFollowsTheComputeCapability() {
        try (Device d = Device.open("sim:1GiB:cc8.0"); MemoryScope s = MemoryScope.open()) {
            List<Long> sizes = allocations(d);
            d.ones(2, 2).matmul(d.ones(2, 2));
            assertTrue(sizes.contains(8L * 1024 * 1024 + 128 * 1024), "8 MiB + 128 KiB elsewhere than 9.0: " + sizes);
        }
    }

    @Test
    void standingForHostNoKernelRunsAndNothingElseIsAllocated() {
        try (Device d = Device.open("sim:H100-80GB:host"); MemoryScope s = MemoryScope.open()) {
            assertFalse(d.hasStorage());
            assertTrue(d.isSimulated());
            List<Long> sizes = allocations(d);
            d.ones(2, 3).matmul(d.ones(3, 2)).sum();
            assertEquals(List.of(24L, 24L, 16L, 4L), sizes, "the tensors only: no workspace, no partials");
        }
    }
}
