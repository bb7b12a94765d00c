package io.vram4j.memory.viz;

import java.util.Arrays;

/** A growable list of {@code long}s, so that per-step series of 100,000 events stay unboxed. Not thread-safe. */
final class LongList {
    private long[] values;
    private int size;

    LongList(int capacity) {
        values = new long[Math.max(2, capacity)];
    }

    void add(long v) {
        if (size == values.length) {
            values = Arrays.copyOf(values, size * 2);
        }
        values[size++] = v;
    }

    long get(int i) {
        return values[i];
    }

    long last() {
        return values[size - 1];
    }

    int size() {
        return size;
    }

    long[] toArray() {
        return Arrays.copyOf(values, size);
    }

    int[] toIntArray() {
        int[] out = new int[size];
        for (int i = 0; i < size; i++) {
            out[i] = (int) values[i];
        }
        return out;
    }
}
