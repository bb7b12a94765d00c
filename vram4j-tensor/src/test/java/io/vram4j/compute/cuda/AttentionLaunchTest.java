package io.vram4j.compute.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import java.util.Map;

/**
 * The fused attention kernels' shared-memory tiles (computed in Java, launched with the tile as a parameter):
 * two tiles of {@code d} floats plus two floats a row within the 48 KiB every CUDA GPU grants, 64 rows at most;
 * what does not fit one launch is refused in one line naming the argument, before anything is launched.
 */
class AttentionLaunchTest {
    @Test
    void tilesShrinkWithTheHeadDimensionToFitSharedMemory() {
        assertEquals(64, CudaKernels.attentionTile(1, 64));
        assertEquals(64, CudaKernels.attentionTile(1, 1));
        assertEquals(30, CudaKernels.attentionTile(12, 200));   // 30 rows of 402 floats: 48,240 bytes; 31 would not fit
        assertEquals(1, CudaKernels.attentionTile(1, 6143));
        for (int d : new int[] {1, 64, 95, 96, 128, 200, 1000, 6143}) {
            int tile = CudaKernels.attentionTile(1, d);
            assertTrue((2L * tile * d + 2L * tile) * Float.BYTES <= 48 * 1024, "d " + d + ": tile " + tile);
        }
    }

    @Test
    void whatDoesNotFitOneLaunchIsRefusedInOneLine() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CudaKernels.attentionTile(1, 6144));
        assertEquals("d: a head dimension of 6144 does not fit the fused attention kernels' shared memory (at most 6143)",
                e.getMessage());
        // (2d + 2) * 4 bytes is 2^33 here: in int arithmetic it wrapped to 0 and the tile was a division by zero
        e = assertThrows(IllegalArgumentException.class, () -> CudaKernels.attentionTile(1, (1 << 30) - 1));
        assertTrue(e.getMessage().startsWith("d: a head dimension of 1073741823 does not fit"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CudaKernels.attentionTile(65536, 64));
        assertEquals("batchHeads: 65536 problems exceed one launch's gridDim.y (65535)", e.getMessage());
    }

    /**
     * The tensor-core kernels' shared memory, as their layouts in vram4j_kernels.cu add up (head dimension padded to
     * 32 or 64; 64 rows owned, tiles of 32; each tile row 8 elements longer than its data): under 48 KiB at every
     * head dimension they take.
     */
    @Test
    void tensorCoreLaunchesFitSharedMemory() {
        assertEquals(43_008, CudaKernels.attentionTensorCoreShared(CudaKernels.TcPass.FORWARD, 64));
        assertEquals(48_384, CudaKernels.attentionTensorCoreShared(CudaKernels.TcPass.DKDV, 64));
        assertEquals(48_640, CudaKernels.attentionTensorCoreShared(CudaKernels.TcPass.DQ, 64));
        assertEquals(30_720, CudaKernels.attentionTensorCoreShared(CudaKernels.TcPass.FORWARD, 32));
        assertEquals(36_096, CudaKernels.attentionTensorCoreShared(CudaKernels.TcPass.DKDV, 20));
        assertEquals(36_352, CudaKernels.attentionTensorCoreShared(CudaKernels.TcPass.DQ, 1));
        for (int d = 1; d <= CudaKernels.ATTENTION_TC_MAX_D; d++) {
            for (CudaKernels.TcPass pass : CudaKernels.TcPass.values()) {
                assertTrue(CudaKernels.attentionTensorCoreShared(pass, d) <= CudaKernels.ATTENTION_SHARED_BYTES,
                        pass + " d " + d);
            }
        }
    }

    @Test
    void theEnvironmentChoosesTheSixteenBitAttentionsKernels() {
        assertTrue(CudaKernels.tensorCoreAttention(Map.of()));
        assertTrue(CudaKernels.tensorCoreAttention(Map.of(CudaKernels.ATTENTION_ENV, "tensor-cores")));
        assertEquals(false, CudaKernels.tensorCoreAttention(Map.of(CudaKernels.ATTENTION_ENV, "cuda-cores")));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> CudaKernels.tensorCoreAttention(Map.of(CudaKernels.ATTENTION_ENV, "wmma")));
        assertEquals("VRAM4J_CUDA_ATTENTION='wmma': expected tensor-cores (the default) or cuda-cores", e.getMessage());
    }
}
