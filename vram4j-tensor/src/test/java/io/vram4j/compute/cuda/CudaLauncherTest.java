package io.vram4j.compute.cuda;

import io.vram4j.device.cuda.KernelArgs;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Launch arguments are checked against the kernel's descriptor before anything reaches the driver. */
class CudaLauncherTest {
    @Test
    void argumentsFollowTheDescriptor() {
        KernelArgs a = CudaLauncher.args(CudaKernelTable.LAYER_NORM_ROWS, MemorySegment.ofAddress(0x1000), 0L, 0L,
                1e-5f, 0x2000L, 0L, 0L, 4, 768);
        assertEquals(9, a.count());
        int[] sizes = new int[a.count()];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = a.size(i);
        }
        assertEquals("[8, 8, 8, 4, 8, 8, 8, 4, 4]", java.util.Arrays.toString(sizes));
    }

    @Test
    void aMissingOrMistypedValueIsRefusedNamingTheParameter() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CudaLauncher.args(CudaKernelTable.ADD, 1L, 2L, 3L));
        assertEquals("v4j_add_f32 takes 4 parameters, 3 given", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CudaLauncher.args(CudaKernelTable.AXPY, 2.0, 1L, 2L, 3L));
        assertEquals("v4j_axpy_f32 parameter 0 (F32) needs a Float, got Double 2.0", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CudaLauncher.args(CudaKernelTable.ADD, 1L, 2L, 3L, 4));
        assertEquals("v4j_add_f32 parameter 3 (U64) needs a Long, got Integer 4", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CudaLauncher.args(CudaKernelTable.SOFTMAX_ROWS, 1L, null, 1, 1));
        assertEquals("v4j_softmax_rows_f32 parameter 1 (PTR) needs a device pointer (MemorySegment or Long), got null",
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CudaLauncher.args(CudaKernelTable.SOFTMAX_ROWS, 1L, 2L, 1L, 1));
        assertEquals("v4j_softmax_rows_f32 parameter 2 (I32) needs an Integer, got Long 1", e.getMessage());
    }
}
