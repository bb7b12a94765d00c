package io.vram4j.compute;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Random;

/** Temporary: interleaves blocking configurations, single thread, and reports median CPU-time GFLOP/s. */
public final class GemmTune {
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        String[] cfgs = Arrays.copyOfRange(args, 1, args.length); // "kc:mcTiles"
        ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
        Kernels k = Kernels.vector().withThreads(1);
        Random rnd = new Random(1);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment a = TestData.random(arena, rnd, (long) n * n, -1, 1);
            MemorySegment b = TestData.random(arena, rnd, (long) n * n, -1, 1);
            MemorySegment c = arena.allocate((long) n * n * 4);
            int rounds = 12;
            double[][] res = new double[cfgs.length][rounds];
            for (int r = -2; r < rounds; r++) {
                for (int ci = 0; ci < cfgs.length; ci++) {
                    String[] kv = cfgs[ci].split(":");
                    VectorGemm.KC = Integer.parseInt(kv[0]);
                    VectorGemm.MC = Integer.parseInt(kv[1]) * VectorGemm.MR;
                    int reps = Math.max(1, (int) (2e8 / ((double) n * n * n)));
                    long c0 = cpu.getCurrentThreadCpuTime();
                    for (int i = 0; i < reps; i++) {
                        k.sgemm(false, false, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n);
                    }
                    long dt = cpu.getCurrentThreadCpuTime() - c0;
                    if (r >= 0) {
                        res[ci][r] = 2.0 * n * n * n * reps / dt;
                    }
                }
            }
            for (int ci = 0; ci < cfgs.length; ci++) {
                Arrays.sort(res[ci]);
                System.out.printf("n=%d %s median %.1f max %.1f%n", n, cfgs[ci], res[ci][rounds / 2], res[ci][rounds - 1]);
            }
        }
    }
}
