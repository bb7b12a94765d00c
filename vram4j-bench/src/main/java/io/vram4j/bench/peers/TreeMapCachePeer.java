package io.vram4j.bench.peers;

import java.util.ArrayDeque;
import java.util.Map;
import java.util.TreeMap;

/**
 * The naive baseline of the peer table: a best-fit cache of whole {@code malloc}ed buffers in a
 * {@code TreeMap<size, free buffers>} behind one lock. A request takes the smallest cached buffer at least as
 * large (never split), else mallocs; a free caches the buffer. Nothing is returned to libc until
 * {@link #close()}, so it holds far more free memory than a splitting allocator.
 */
final class TreeMapCachePeer implements Peer {
    private final TreeMap<Long, ArrayDeque<Long>> free = new TreeMap<>();

    /** Takes the best-fitting cached buffer into {@code slot}: returns false when none is large enough. */
    private synchronized boolean take(long size, long[] ptrs, long[] sizes, int slot) {
        Map.Entry<Long, ArrayDeque<Long>> e = free.ceilingEntry(size);
        if (e == null) {
            return false;
        }
        ArrayDeque<Long> q = e.getValue();
        ptrs[slot] = q.pollFirst();
        sizes[slot] = e.getKey();
        if (q.isEmpty()) {
            free.remove(e.getKey());
        }
        return true;
    }

    private synchronized void put(long ptr, long size) {
        free.computeIfAbsent(size, k -> new ArrayDeque<>()).addLast(ptr);
    }

    @Override
    public SlotAllocator slots(int n) {
        long[] ptrs = new long[n];
        long[] sizes = new long[n];
        return new SlotAllocator() {
            @Override
            public void alloc(int slot, long size) {
                if (!take(size, ptrs, sizes, slot)) {
                    ptrs[slot] = LibcPeer.malloc(size);
                    sizes[slot] = size;
                }
            }

            @Override
            public void free(int slot) {
                put(ptrs[slot], sizes[slot]);
                ptrs[slot] = 0;
            }

            @Override
            public void freeAll() {
                for (int i = 0; i < n; i++) {
                    if (ptrs[i] != 0) {
                        free(i);
                    }
                }
            }
        };
    }

    @Override
    public synchronized void close() {
        for (ArrayDeque<Long> q : free.values()) {
            for (long p : q) {
                LibcPeer.free(p);
            }
        }
        free.clear();
    }
}
