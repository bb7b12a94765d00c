package io.vram4j.alloc;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Where a {@link CachingHostAllocator} gets its blocks: page-locked memory ({@code cuMemHostAlloc}, from
 * {@link io.vram4j.device.cuda.CudaDevice#pinnedMemory()}) on a GPU machine, or {@link #pageable()} memory.
 * Implementations are thread-safe.
 */
public interface HostMemorySource {

    /**
     * @param size bytes, positive
     * @return memory of exactly {@code size} bytes, or {@link MemorySegment#NULL} when there is none to be had
     */
    MemorySegment allocate(long size);

    /** @param memory a segment {@link #allocate} returned, given back once */
    void free(MemorySegment memory);

    /** @return a short name for messages and statistics, e.g. {@code "cuMemHostAlloc"} or {@code "malloc"} */
    String name();

    /**
     * @return ordinary off-heap memory ({@code malloc} through FFM, 4096-byte aligned): what host memory is on a
     *     machine without a GPU; copies from it to a GPU are not asynchronous
     */
    static HostMemorySource pageable() {
        return new HostMemorySource() {
            private final ConcurrentMap<Long, Arena> arenas = new ConcurrentHashMap<>(); // address -> its arena

            @Override
            public MemorySegment allocate(long size) {
                Arena arena = Arena.ofShared();
                try {
                    MemorySegment m = arena.allocate(size, 4096);
                    arenas.put(m.address(), arena);
                    return m;
                } catch (OutOfMemoryError e) {
                    arena.close();
                    return MemorySegment.NULL;
                }
            }

            @Override
            public void free(MemorySegment memory) {
                // throws IllegalArgumentException for memory this source did not allocate
                Arena arena = arenas.remove(memory.address());
                if (arena == null) {
                    throw new IllegalArgumentException("not memory of this source: 0x"
                            + Long.toHexString(memory.address()));
                }
                arena.close();
            }

            @Override
            public String name() {
                return "malloc";
            }
        };
    }
}
