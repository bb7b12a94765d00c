package io.vram4j.device.cuda;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The parameter values of one kernel launch, in the kernel's parameter order, each of the size of its C type
 * (device pointers and 64-bit integers 8 bytes, {@code int} and {@code float} 4 bytes). Marshalled into the
 * {@code void* kernelParams[]} array of {@code cuLaunchKernel} (the calling thread's {@link LaunchParams}).
 *
 * <p>Not thread-safe: build one per launch, or per thread.
 */
public final class KernelArgs {
    private long[] values = new long[8];
    private byte[] sizes = new byte[8];
    private int count;

    /** @return an empty argument list */
    public static KernelArgs of() {
        return new KernelArgs();
    }

    /** @param address a device pointer ({@code CUdeviceptr}, 8 bytes; 0 for a null pointer) @return this */
    public KernelArgs ptr(long address) {
        return add(address, 8);
    }

    /** @param v a 64-bit integer ({@code unsigned long long} / {@code long long}) @return this */
    public KernelArgs i64(long v) {
        return add(v, 8);
    }

    /** @param v a 32-bit {@code int} @return this */
    public KernelArgs i32(int v) {
        return add(v & 0xFFFF_FFFFL, 4);
    }

    /** @param v a {@code float} @return this */
    public KernelArgs f32(float v) {
        return add(Float.floatToRawIntBits(v) & 0xFFFF_FFFFL, 4);
    }

    /** @return the number of values */
    public int count() {
        return count;
    }

    /** @return the size in bytes of value {@code i} (4 or 8) */
    public int size(int i) {
        return sizes[Objects.checkIndex(i, count)];
    }

    private KernelArgs add(long v, int size) {
        if (count == values.length) {
            values = Arrays.copyOf(values, count * 2);
            sizes = Arrays.copyOf(sizes, count * 2);
        }
        values[count] = v;
        sizes[count++] = (byte) size;
        return this;
    }

    /**
     * Writes value {@code i} into the 8-byte slot at offset {@code 8 * i} of {@code slots} ({@code int} and
     * {@code float} in its first 4 bytes, as the driver reads them).
     */
    void writeSlots(MemorySegment slots) {
        for (int i = 0; i < count; i++) {
            if (sizes[i] == 8) {
                slots.set(JAVA_LONG, 8L * i, values[i]);
            } else {
                slots.set(JAVA_INT, 8L * i, (int) values[i]);
            }
        }
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < count; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(sizes[i] == 8 ? "0x" + Long.toHexString(values[i])
                    : "0x" + Integer.toHexString((int) values[i]));
        }
        return sb.append(')').toString();
    }
}
