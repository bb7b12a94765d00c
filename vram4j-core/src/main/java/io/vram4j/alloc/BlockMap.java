package io.vram4j.alloc;

import java.util.function.Consumer;

/**
 * Open-addressing hash map from a block's address to the allocated block (PyTorch's
 * {@code allocated_blocks}), with linear probing and backward-shift deletion, so the hot path neither boxes
 * nor allocates (except when it grows). The table is kept at most a quarter full. Not thread-safe: guarded by the allocator's lock.
 */
final class BlockMap {
    private long[] keys;
    private Block[] values;
    private int size;
    private int mask;

    BlockMap() {
        keys = new long[64];
        values = new Block[64];
        mask = 63;
    }

    int size() {
        return size;
    }

    private static int hash(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32));
    }

    Block get(long key) {
        int i = hash(key) & mask;
        while (values[i] != null) {
            if (keys[i] == key) {
                return values[i];
            }
            i = (i + 1) & mask;
        }
        return null;
    }

    void put(long key, Block value) {
        if ((size + 1) * 4 > keys.length) { // load factor at most 1/4: short probe runs on the free path
            resize();
        }
        int i = hash(key) & mask;
        while (values[i] != null) {
            if (keys[i] == key) {
                values[i] = value;
                return;
            }
            i = (i + 1) & mask;
        }
        keys[i] = key;
        values[i] = value;
        size++;
    }

    Block remove(long key) {
        int i = hash(key) & mask;
        while (values[i] != null) {
            if (keys[i] == key) {
                Block removed = values[i];
                shiftBack(i);
                size--;
                return removed;
            }
            i = (i + 1) & mask;
        }
        return null;
    }

    private void shiftBack(int hole) {
        int i = hole;
        while (true) {
            i = (i + 1) & mask;
            if (values[i] == null) {
                break;
            }
            int home = hash(keys[i]) & mask;
            // Move the entry into the hole when the hole lies cyclically between its home and its slot.
            if (((i - home) & mask) >= ((i - hole) & mask)) {
                keys[hole] = keys[i];
                values[hole] = values[i];
                hole = i;
            }
        }
        values[hole] = null;
        keys[hole] = 0;
    }

    private void resize() {
        long[] oldKeys = keys;
        Block[] oldValues = values;
        keys = new long[oldKeys.length * 2];
        values = new Block[oldValues.length * 2];
        mask = keys.length - 1;
        size = 0;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldValues[i] != null) {
                put(oldKeys[i], oldValues[i]);
            }
        }
    }

    void forEach(Consumer<Block> action) {
        for (Block b : values) {
            if (b != null) {
                action.accept(b);
            }
        }
    }
}
