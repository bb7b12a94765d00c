package io.vram4j.tensor;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TensorBasicsTest {
    Device dev;

    @BeforeEach
    void open() {
        dev = Device.open("host:256MiB");
    }

    @AfterEach
    void close() {
        dev.close();
    }

    @Test
    void createAndRead() {
        try (Tensor t = dev.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
            assertArrayEquals(new int[] {2, 3}, t.shape());
            assertArrayEquals(new long[] {3, 1}, t.strides());
            assertEquals(24, t.nbytes());
            assertEquals(6f, t.getFloat(1, 2));
            assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, t.toFloatArray());
            assertEquals(512, dev.memoryAllocated());
        }
        assertEquals(0, dev.memoryAllocated());
    }

    @Test
    void matmulAddRelu() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor a = dev.tensor(new float[] {1, 2, 3, 4}, 2, 2);
            Tensor b = dev.tensor(new float[] {5, 6, 7, 8}, 2, 2);
            assertArrayEquals(new float[] {19, 22, 43, 50}, a.matmul(b).toFloatArray());
            assertArrayEquals(new float[] {17, 23, 39, 53}, a.matmul(b.t()).toFloatArray());
            assertArrayEquals(new float[] {6, 8, 8, 10}, a.add(dev.tensor(new float[] {5, 6}, 2)).toFloatArray());
            assertArrayEquals(new float[] {0, 2, 0, 4}, a.mul(dev.tensor(new float[] {-1, 1, -1, 1}, 2, 2)).relu().toFloatArray());
            assertEquals(10f, a.sum().item());
            assertArrayEquals(new float[] {4, 6}, a.sum(0, false).toFloatArray());
            assertArrayEquals(new float[] {1.5f, 3.5f}, a.mean(1, false).toFloatArray());
        }
        assertEquals(0, dev.memoryAllocated());
    }

    @Test
    void useAfterCloseThrows() {
        Tensor t = dev.zeros(3);
        t.close();
        t.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> t.add(t));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }
}
