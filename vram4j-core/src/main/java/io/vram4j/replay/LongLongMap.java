package io.vram4j.replay;

/** Open-addressing map from long to long (0 is not a valid value: it means "absent"). Not thread-safe. */
final class LongLongMap {
    private long[] keys = new long[1024];
    private long[] values = new long[1024];
    private int size;

    private int slot(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & (keys.length - 1);
    }

    long get(long key) {
        for (int i = slot(key); ; i = (i + 1) & (keys.length - 1)) {
            if (values[i] == 0) {
                return 0;
            }
            if (keys[i] == key) {
                return values[i];
            }
        }
    }

    void put(long key, long value) {
        if ((size + 1) * 2 > keys.length) {
            grow();
        }
        for (int i = slot(key); ; i = (i + 1) & (keys.length - 1)) {
            if (values[i] == 0) {
                keys[i] = key;
                values[i] = value;
                size++;
                return;
            }
            if (keys[i] == key) {
                values[i] = value;
                return;
            }
        }
    }

    long remove(long key) {
        int mask = keys.length - 1;
        for (int i = slot(key); ; i = (i + 1) & mask) {
            if (values[i] == 0) {
                return 0;
            }
            if (keys[i] == key) {
                long v = values[i];
                int hole = i;
                for (int j = (i + 1) & mask; values[j] != 0; j = (j + 1) & mask) {
                    int home = slot(keys[j]);
                    if (((j - home) & mask) >= ((j - hole) & mask)) {
                        keys[hole] = keys[j];
                        values[hole] = values[j];
                        hole = j;
                    }
                }
                values[hole] = 0;
                size--;
                return v;
            }
        }
    }

    private void grow() {
        long[] ok = keys, ov = values;
        keys = new long[ok.length * 2];
        values = new long[ov.length * 2];
        size = 0;
        for (int i = 0; i < ok.length; i++) {
            if (ov[i] != 0) {
                put(ok[i], ov[i]);
            }
        }
    }
}
