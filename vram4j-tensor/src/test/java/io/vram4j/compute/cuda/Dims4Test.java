package io.vram4j.compute.cuda;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class Dims4Test {
    @Test
    void shapesArePaddedAtTheFront() {
        Dims4 d = Dims4.of(new int[] {3, 5}, new long[] {5, 1}, new long[] {0, 1});
        assertArrayEquals(new int[] {1, 1, 3, 5}, d.extents());
        assertArrayEquals(new long[] {0, 0, 5, 1}, d.strides()[0]);
        assertArrayEquals(new long[] {0, 0, 0, 1}, d.strides()[1]);
        assertEquals(15, d.numel());
        assertEquals(1, Dims4.of(new int[0], new long[0]).numel(), "a scalar");
        assertEquals(0, Dims4.of(new int[] {2, 0, 3}, new long[] {0, 3, 1}).numel());
    }

    @Test
    void moreThanFourDimensionsOrMismatchedStridesAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Dims4.of(new int[] {1, 2, 3, 4, 5}, new long[5]));
        assertEquals("the CUDA kernels take at most 4 dimensions, got 5 (merge contiguous dimensions first)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Dims4.of(new int[] {2, 2}, new long[] {2, 1}, new long[] {1}));
        assertEquals("operand 1 has 1 strides for 2 dimensions", e.getMessage());
    }
}
