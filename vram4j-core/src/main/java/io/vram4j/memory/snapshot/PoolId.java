package io.vram4j.memory.snapshot;

/**
 * The owning private pool of a segment, PyTorch's {@code segment_pool_id} tuple {@code (first, second)}
 * ({@code MempoolId_t}): {@code (0, 0)} for the default pools. The two values are raw 64-bit integers; Python may
 * show them unsigned. Immutable and thread-safe.
 *
 * @param first  the first tuple element (CUDA-graph capture pools)
 * @param second the second tuple element (user-created pools)
 */
public record PoolId(long first, long second) {
    /** The default pools' id, {@code (0, 0)}. */
    public static final PoolId DEFAULT = new PoolId(0, 0);

    /** @return true for {@code (0, 0)} */
    public boolean isDefault() {
        return first == 0 && second == 0;
    }

    @Override
    public String toString() {
        return "(" + Long.toUnsignedString(first) + ", " + Long.toUnsignedString(second) + ")";
    }
}
