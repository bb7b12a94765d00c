package io.vram4j.device.cuda;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

/** The per-thread {@code kernelParams}: each pointer leads to its value, as the driver reads it. */
class LaunchParamsTest {
    private static MemorySegment value(MemorySegment params, int i) {
        return params.reinterpret(8L * (i + 1)).getAtIndex(ADDRESS, i).reinterpret(8);
    }

    @Test
    void eachPointerLeadsToItsValueAndTheBufferIsReused() {
        MemorySegment first = LaunchParams.of(KernelArgs.of().ptr(0x7000_0000_1000L).i64(-3).i32(-7).f32(1.5f));
        assertEquals(0x7000_0000_1000L, value(first, 0).get(JAVA_LONG, 0));
        assertEquals(-3L, value(first, 1).get(JAVA_LONG, 0));
        assertEquals(-7, value(first, 2).get(JAVA_INT, 0));
        assertEquals(1.5f, value(first, 3).get(JAVA_FLOAT, 0));

        // a 4-byte value where an 8-byte one was: the driver reads the first 4 bytes of the slot
        MemorySegment second = LaunchParams.of(KernelArgs.of().i32(42).f32(-0.25f));
        assertSame(first, second, "one buffer per thread");
        assertEquals(42, value(second, 0).get(JAVA_INT, 0));
        assertEquals(-0.25f, value(second, 1).get(JAVA_FLOAT, 0));
    }

    @Test
    void aLaunchWithMoreValuesThanTheBufferHoldsGetsALargerOne() {
        MemorySegment small = LaunchParams.of(KernelArgs.of().i32(1));
        KernelArgs many = KernelArgs.of();
        for (int i = 0; i < 100; i++) {
            many.i64(1000L + i);
        }
        MemorySegment large = LaunchParams.of(many);
        assertNotSame(small, large);
        for (int i = 0; i < 100; i++) {
            assertEquals(1000L + i, value(large, i).get(JAVA_LONG, 0));
        }
    }

    @Test
    void eachThreadHasItsOwn() throws InterruptedException {
        MemorySegment mine = LaunchParams.of(KernelArgs.of().i32(1));
        MemorySegment[] theirs = new MemorySegment[1];
        Thread t = Thread.ofPlatform().start(() -> theirs[0] = LaunchParams.of(KernelArgs.of().i32(2)));
        t.join();
        assertNotSame(mine, theirs[0]);
        assertEquals(1, value(mine, 0).get(JAVA_INT, 0));
    }
}
