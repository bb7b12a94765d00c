package io.vram4j.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Compute workspace outside the caching allocator, for float32 copies of float16/bfloat16 or strided
 * operands while one op runs (PyTorch's kernels convert in registers instead; tensors and their sizes are
 * unaffected). Freed when the op ends.
 */
final class Scratch implements AutoCloseable {
    private Arena arena;

    MemorySegment floats(long n) {
        if (arena == null) {
            arena = Arena.ofConfined();
        }
        return arena.allocate(Math.max(1, n) * Float.BYTES, 64);
    }

    @Override
    public void close() {
        if (arena != null) {
            arena.close();
            arena = null;
        }
    }
}
