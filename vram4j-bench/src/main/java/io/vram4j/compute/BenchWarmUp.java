package io.vram4j.compute;

import java.lang.foreign.Arena;

/**
 * {@link Kernels#warmUp()} on segments of a shared arena instead of its confined one, for benchmarks that ask
 * whether the kind of segment the warm-up uses matters to the code the JIT compiles afterwards. In the bench
 * module, in the package of {@code WarmUp} so that it can reach it; not part of the product.
 */
public final class BenchWarmUp {

    private BenchWarmUp() {
    }

    /**
     * Runs the warm-up of {@code k} on a shared arena, closed on return.
     *
     * @param k the kernels to warm up
     * @return the elapsed wall time in nanoseconds
     */
    public static long onSharedArena(Kernels k) {
        return WarmUp.run(k, Arena.ofShared());
    }
}
