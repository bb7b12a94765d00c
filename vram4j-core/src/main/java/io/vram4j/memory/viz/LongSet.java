package io.vram4j.memory.viz;

/**
 * A set of {@code long}s without boxing: open addressing with linear probing, deletion by shifting the following
 * entries back (no tombstones), the table at most half full. For the addresses of a trace of millions of entries,
 * where a {@code HashSet<Long>} spends most of its time on boxes and colliding buckets (block addresses share
 * their low bits). Not thread-safe.
 */
final class LongSet {
    private long[] keys;
    private boolean[] used;
    private int size;
    private int mask;

    LongSet(int expected) {
        int capacity = Integer.highestOneBit(Math.max(16, expected) * 2 - 1) << 1;
        keys = new long[capacity];
        used = new boolean[capacity];
        mask = capacity - 1;
    }

    /** @return true if {@code v} was not in the set */
    boolean add(long v) {
        int i = slot(v);
        if (used[i]) {
            return false;
        }
        keys[i] = v;
        used[i] = true;
        if (++size * 2 > keys.length) {
            grow();
        }
        return true;
    }

    boolean contains(long v) {
        return used[slot(v)];
    }

    /** @return true if {@code v} was in the set */
    boolean remove(long v) {
        int i = slot(v);
        if (!used[i]) {
            return false;
        }
        // shift back each following entry of the run whose home slot does not lie cyclically in (i, j]
        int j = i;
        while (true) {
            j = (j + 1) & mask;
            if (!used[j]) {
                break;
            }
            int home = hash(keys[j]) & mask;
            boolean stays = i <= j ? i < home && home <= j : i < home || home <= j;
            if (!stays) {
                keys[i] = keys[j];
                i = j;
            }
        }
        used[i] = false;
        size--;
        return true;
    }

    int size() {
        return size;
    }

    /** The slot holding {@code v}, or the empty slot where it would go. */
    private int slot(long v) {
        int i = hash(v) & mask;
        while (used[i] && keys[i] != v) {
            i = (i + 1) & mask;
        }
        return i;
    }

    private void grow() {
        long[] oldKeys = keys;
        boolean[] oldUsed = used;
        keys = new long[oldKeys.length * 2];
        used = new boolean[oldKeys.length * 2];
        mask = keys.length - 1;
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldUsed[i]) {
                int j = slot(oldKeys[i]);
                keys[j] = oldKeys[i];
                used[j] = true;
            }
        }
    }

    /** The finalizer of MurmurHash3's 64-bit hash (every input bit affects the low bits). */
    private static int hash(long v) {
        v ^= v >>> 33;
        v *= 0xff51afd7ed558ccdL;
        v ^= v >>> 33;
        v *= 0xc4ceb9fe1a85ec53L;
        v ^= v >>> 33;
        return (int) v;
    }
}
