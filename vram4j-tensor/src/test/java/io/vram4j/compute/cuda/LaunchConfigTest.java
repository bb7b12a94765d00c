package io.vram4j.compute.cuda;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LaunchConfigTest {
    @Test
    void elementwiseCoversEveryElementOnceWithAGridStrideCap() {
        assertEquals(new LaunchConfig(0, 1, 256, 0), LaunchConfig.elementwise(0));
        assertTrue(LaunchConfig.elementwise(0).isEmpty());
        assertEquals(1, LaunchConfig.elementwise(1).gridX());
        assertEquals(1, LaunchConfig.elementwise(256).gridX());
        assertEquals(2, LaunchConfig.elementwise(257).gridX());
        assertEquals(3907, LaunchConfig.elementwise(1_000_000).gridX());
        assertEquals(65535, LaunchConfig.elementwise(1L << 40).gridX(), "n beyond the cap loops inside the kernel");
        assertThrows(IllegalArgumentException.class, () -> LaunchConfig.elementwise(-1));
        // the vectorized kernels: a thread per 8 elements, a rest of 1 to 7 included
        assertTrue(LaunchConfig.elementwise8(0).isEmpty());
        assertEquals(1, LaunchConfig.elementwise8(1).gridX());
        assertEquals(1, LaunchConfig.elementwise8(2048).gridX());
        assertEquals(2, LaunchConfig.elementwise8(2049).gridX());
        assertEquals(489, LaunchConfig.elementwise8(1_000_000).gridX());
        assertEquals(65535, LaunchConfig.elementwise8(1L << 40).gridX());
        assertThrows(IllegalArgumentException.class, () -> LaunchConfig.elementwise8(-1));
    }

    @Test
    void rowsGetOneBlockEachSizedToAPowerOfTwo() {
        assertEquals(new LaunchConfig(7, 1, 32, 128), LaunchConfig.rows(7, 1));
        assertEquals(32, LaunchConfig.rows(1, 32).blockX());
        assertEquals(32, LaunchConfig.rows(1, 128).blockX());
        assertEquals(64, LaunchConfig.rows(1, 129).blockX());
        assertEquals(256, LaunchConfig.rows(1, 768).blockX());    // GPT-2's layer norm: 3 elements a thread
        assertEquals(256, LaunchConfig.rows(1, 1024).blockX());
        assertEquals(1024, LaunchConfig.rows(1, 4096).blockX());
        assertEquals(new LaunchConfig(128, 1, 1024, 4096), LaunchConfig.rows(128, 50_257));
        assertTrue(LaunchConfig.rows(5, 0).isEmpty());
        assertTrue(LaunchConfig.rows(0, 10).isEmpty());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LaunchConfig.rows(-1, 3));
        assertEquals("rows must not be negative, got -1", e.getMessage());
    }

    @Test
    void reductionsRunTwoPasses() {
        assertEquals(new LaunchConfig(4, 1, 256, 1024), LaunchConfig.reductionPartial(1000));
        assertEquals(1024, LaunchConfig.reductionPartial(1L << 30).gridX());
        assertEquals(new LaunchConfig(1, 1, 256, 1024), LaunchConfig.reductionFinal());
        assertEquals(new LaunchConfig(1, 1, 256, 1024), LaunchConfig.singleBlock());
        assertEquals(new LaunchConfig(24 * 32, 1, 256, 2048), LaunchConfig.columnSums(24 * 32, 1, 2));
        assertEquals(new LaunchConfig(3, 65535, 256, 1024), LaunchConfig.columnSums(3, 100_000, 1));
        assertTrue(LaunchConfig.columnSums(3, 0, 1).isEmpty());
    }

    @Test
    void parameterGroupsUseTheYDimension() {
        assertEquals(new LaunchConfig(2048, 6, 256, 0), LaunchConfig.perTensor(512 * 1024, 6));
        assertTrue(LaunchConfig.perTensor(10, 0).isEmpty());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LaunchConfig.perTensor(1, 65536));
        assertTrue(e.getMessage().contains("65536 tensors") && e.getMessage().contains("split it"), e.getMessage());
    }
}
