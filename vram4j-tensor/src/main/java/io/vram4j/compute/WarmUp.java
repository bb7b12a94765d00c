package io.vram4j.compute;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Runs every kernel on small inputs often enough that HotSpot's tiered policy compiles the hot loops with C2
 * before real work arrives. Vector API code that is still interpreted or in C1 code boxes every vector and
 * runs a hundred times slower than C2 code. {@code train} no longer runs it: end to end, the training loops that
 * followed it ran slower (BENCHMARKS.md, "The main job"); benchmarks that want compiled kernels from the first
 * measured call still do.
 *
 * <p>Shapes are chosen to take every path: full and partial vectors, full and partial sgemm tiles, all four
 * transpose combinations, {@code beta} 0, 1 and other. sgemm, the bulk of a training step, is warmed alone
 * first ({@value #GEMM_ROUNDS} rounds) so the compile queue holds only its methods; then everything runs
 * {@value #ROUNDS} rounds, the element-wise inputs long enough to loop about forty times per call. That
 * passes HotSpot's tier-3 thresholds (Tier3InvocationThreshold 200, Tier3CompileThreshold 2000 calls plus
 * loop back-edges), so no kernel is left in the interpreter, and starts the tier-4 (C2) profile; real work
 * finishes it within its first steps.
 *
 * <p>It is a trade, kept small on purpose: every warm-up round runs slowly (interpreted or C1 code). Measured
 * on a 2-core Xeon shared with other jobs: about 1 s of process CPU time (compiler threads included), where
 * 200 + 250 rounds cost 1.9 s and did not make the following training epoch cheaper.
 */
final class WarmUp {

    /** Rounds of sgemm alone. */
    static final int GEMM_ROUNDS = 100;
    /** Rounds over all kernels, after the sgemm rounds. */
    static final int ROUNDS = 60;

    private WarmUp() {
    }

    /**
     * Warms up {@code k} on a private confined arena that is closed on return.
     *
     * @return the elapsed wall time in nanoseconds
     */
    static long run(Kernels k) {
        return run(k, Arena.ofConfined());
    }

    /**
     * Warms up {@code k} on segments of {@code arena}, which is closed on return (the benchmarks compare a
     * confined arena with the shared one that host memory uses).
     *
     * @return the elapsed wall time in nanoseconds
     */
    static long run(Kernels k, Arena arena) {
        long t0 = System.nanoTime();
        // 40 vectors of 512 bits plus a tail for every species
        int n = 645;
        int rows = 16;
        int cols = 37;
        // sgemm: two row tiles (one partial), one full panel and one partial for 512-bit vectors
        int gm = 20;
        int gn = 37;
        int gk = 24;
        int g = Math.max(gm, gn) * gk;
        try (arena) {
            int len = Math.max(g, Math.max(n, rows * cols));
            MemorySegment a = floats(arena, len, 0.25f);
            MemorySegment b = floats(arena, len, -0.2f);
            MemorySegment c = arena.allocate((long) gm * gn * Float.BYTES * 2, 64);
            MemorySegment out = arena.allocate((long) len * Float.BYTES, 64);
            MemorySegment out2 = arena.allocate((long) len * Float.BYTES, 64);
            MemorySegment stats = arena.allocate((long) rows * 2 * Float.BYTES, 64);
            MemorySegment gamma = floats(arena, cols, 1f);
            MemorySegment grads = arena.allocate(3L * rows * cols * Float.BYTES, 64);
            float sink = 0;
            for (int r = -GEMM_ROUNDS; r < ROUNDS; r++) {
                boolean ta = (r & 1) != 0;
                boolean tb = (r & 2) != 0;
                float beta = switch (Math.floorMod(r, 3)) {
                    case 0 -> 0f;
                    case 1 -> 1f;
                    default -> 0.5f;
                };
                k.sgemm(ta, tb, gm, gn, gk, 1f, a, 0, ta ? gm : gk, b, 0, tb ? gk : gn, beta, c, 0, gn);
                if (r % 8 == 0) {
                    k.sgemmBatched(2, ta, tb, gm / 2, gn, gk, 1f, a, 0, ta ? gm / 2 : gk, 0,
                            b, 0, tb ? gk : gn, 0, beta, c, 0, gn, (long) gm * gn);
                }
                if (r < 0) {
                    continue;
                }
                k.add(n, a, 0, b, 0, out, 0);
                k.sub(n, a, 0, b, 0, out, 0);
                k.mul(n, a, 0, b, 0, out, 0);
                k.div(n, a, 0, b, 0, out, 0);
                k.axpy(n, 0.5f, a, 0, out, 0);
                k.scale(n, 2f, a, 0, out, 0);
                k.addScalar(n, 1f, a, 0, out, 0);
                k.fill(n, 0.125f, out, 0);
                k.copy(n, a, 0, out, 0);
                k.neg(n, a, 0, out, 0);
                k.exp(n, a, 0, out, 0);
                k.log(n, out, 0, out, 0);
                k.sqrt(n, a, 0, out, 0);
                k.tanh(n, a, 0, out, 0);
                k.sigmoid(n, a, 0, out, 0);
                k.relu(n, b, 0, out, 0);
                k.reluBackward(n, a, 0, b, 0, out, 0);
                k.gelu(n, a, 0, out, 0);
                k.geluBackward(n, a, 0, b, 0, out, 0);
                sink += k.sum(n, a, 0) + k.max(n, a, 0) + k.sumOfSquares(n, a, 0) + k.dot(n, a, 0, b, 0);
                sink += k.anyNonFinite(n, a, 0) ? 1 : 0;
                k.softmaxRows(rows, cols, a, 0, out, 0);
                k.softmaxBackwardRows(rows, cols, out, 0, b, 0, out2, 0);
                k.logSoftmaxRows(rows, cols, a, 0, out, 0);
                k.logSoftmaxBackwardRows(rows, cols, out, 0, b, 0, out2, 0);
                k.layerNormRows(rows, cols, a, 0, gamma, 0, b, 0, 1e-5f, out, 0, stats, 0, stats, rows);
                k.layerNormBackwardRows(rows, cols, b, 0, a, 0, stats, 0, stats, rows, gamma, 0,
                        out2, 0, out, 0, out, cols);
                // fused attention: one problem of 16 rows of 37 (a partial tile, an odd head dimension)
                k.attentionForward(1, rows, cols, 0.25f, (r & 1) == 0, a, 0, b, 0, a, 0, out, 0, stats, 0);
                k.attentionBackward(1, rows, cols, 0.25f, (r & 1) == 0, a, 0, b, 0, a, 0, out, 0, stats, 0, b, 0,
                        grads, 0, grads, rows * cols, grads, 2 * rows * cols);
            }
            if (Float.isNaN(sink)) {
                // keeps the reductions from being dead code; never true for these inputs
                throw new AssertionError("warm-up produced NaN");
            }
        }
        return System.nanoTime() - t0;
    }

    /** {@code count} floats cycling through small values around {@code base}, none zero. */
    private static MemorySegment floats(Arena arena, int count, float base) {
        MemorySegment s = arena.allocate((long) count * Float.BYTES, 64);
        for (int i = 0; i < count; i++) {
            s.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, base + (i % 7) * 0.0625f);
        }
        return s;
    }
}
