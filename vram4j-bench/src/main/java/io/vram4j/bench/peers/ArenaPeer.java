package io.vram4j.bench.peers;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One FFM arena per buffer: {@code Arena.ofConfined()} or {@code Arena.ofShared()}, {@code allocate(size)},
 * and {@code close()} as the free. Confined arenas are closed by the thread that opened them, which is what
 * the benchmark does (each thread owns its slots).
 */
final class ArenaPeer implements Peer {
    private final boolean shared;

    ArenaPeer(boolean shared) {
        this.shared = shared;
    }

    @Override
    public SlotAllocator slots(int n) {
        Arena[] arenas = new Arena[n];
        boolean s = shared;
        return new SlotAllocator() {
            @Override
            public void alloc(int slot, long size) {
                Arena arena = s ? Arena.ofShared() : Arena.ofConfined();
                MemorySegment seg = arena.allocate(size, 512);
                if (seg.byteSize() != size) {
                    throw new IllegalStateException("short segment");
                }
                arenas[slot] = arena;
            }

            @Override
            public void free(int slot) {
                arenas[slot].close();
                arenas[slot] = null;
            }

            @Override
            public void freeAll() {
                for (int i = 0; i < n; i++) {
                    if (arenas[i] != null) {
                        try {
                            free(i);
                        } catch (WrongThreadException e) {
                            // A confined arena closed from another thread at the end of a trial: the forked
                            // benchmark JVM exits right after, which returns the memory.
                            arenas[i] = null;
                        }
                    }
                }
            }
        };
    }

    @Override
    public void close() {
    }
}
