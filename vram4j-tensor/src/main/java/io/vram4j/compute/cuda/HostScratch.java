package io.vram4j.compute.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The calling thread's scratch host memory for the small transfers of {@link CudaKernels} and its queues (a fused
 * optimizer's address table on its way in, a reduction's result on its way out), in place of an arena opened and
 * closed per call. Each use must be over before the thread's next one: the table is copied from pageable memory,
 * which the driver stages before {@code cuMemcpyHtoDAsync} returns, and the result is read once the synchronous
 * copy back has returned, so neither outlives the call that takes the segment.
 *
 * <p>Thread-safe by confinement: each thread has its own ({@link ThreadLocal}); the memory is reclaimed by the
 * garbage collector ({@link Arena#ofAuto()}) once its thread has ended or it was replaced by a larger one.
 */
final class HostScratch {
    private static final long INITIAL_BYTES = 4096;
    private static final ThreadLocal<MemorySegment> PER_THREAD =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(INITIAL_BYTES, 8));

    private HostScratch() {
    }

    /** @return the calling thread's scratch memory, exactly {@code bytes} long, 8-byte aligned, contents undefined */
    static MemorySegment get(long bytes) {
        MemorySegment s = PER_THREAD.get();
        if (s.byteSize() < bytes) {
            s = Arena.ofAuto().allocate(Math.max(bytes, 2 * s.byteSize()), 8);
            PER_THREAD.set(s);
        }
        return s.asSlice(0, bytes);
    }
}
