package io.vram4j.tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Compute workspace outside the caching allocator, for float32 copies of float16/bfloat16 or strided
 * operands while one op runs (PyTorch's kernels convert in registers instead; tensors and their sizes are
 * unaffected). Freed when the op ends.
 */
final class Scratch implements AutoCloseable {
    private Arena arena;
    private final List<Tensor> tensors = new ArrayList<>();

    MemorySegment floats(long n) {
        if (arena == null) {
            arena = Arena.ofConfined();
        }
        return arena.allocate(Math.max(1, n) * Float.BYTES, 64);
    }

    /**
     * @return a float32 tensor of {@code shape} from {@code device}'s caching allocator (device memory scratch,
     *     as PyTorch's temporaries), closed with this scratch
     */
    Tensor tensor(Device device, int[] shape) {
        Tensor t = Tensor.allocate(device, DType.FLOAT32, shape.clone());
        tensors.add(t);
        return t;
    }

    @Override
    public void close() {
        tensors.forEach(Tensor::close);
        tensors.clear();
        if (arena != null) {
            arena.close();
            arena = null;
        }
    }
}
