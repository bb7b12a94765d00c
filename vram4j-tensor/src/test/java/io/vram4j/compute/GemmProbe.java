package io.vram4j.compute;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Random;

/**
 * Prints sgemm throughput (GFLOP/s) of the best kernels for square row-major problems, for 1 and 2
 * threads: from the mean and the best wall time and, single-threaded, from the calling thread's CPU time
 * (which stays meaningful on a machine shared with other work). Not a test and not JMH: a quick probe to run
 * by hand, e.g. from {@code vram4j-tensor}:
 *
 * <pre>
 *   java --add-modules jdk.incubator.vector -cp target/classes:target/test-classes \
 *        io.vram4j.compute.GemmProbe [sizes=256,512,1024] [threads=1,2] [seconds=1.5] [tA] [tB] [shapes=MxNxK,...]
 * </pre>
 *
 * <p>{@code shapes} replaces the square sizes with {@code m x n x k} problems, e.g. the products of an MLP
 * training step: {@code shapes=128x512x784,512x784x128 tA}.
 */
public final class GemmProbe {

    private GemmProbe() {
    }

    public static void main(String[] args) {
        int[][] shapes = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}};
        int[] threads = {1, 2};
        double seconds = 1.5;
        boolean ta = false;
        boolean tb = false;
        for (String arg : args) {
            if (arg.startsWith("sizes=")) {
                shapes = Arrays.stream(arg.substring(6).split(",")).mapToInt(Integer::parseInt)
                        .mapToObj(v -> new int[] {v, v, v}).toArray(int[][]::new);
            } else if (arg.startsWith("shapes=")) {
                shapes = Arrays.stream(arg.substring(7).split(","))
                        .map(v -> Arrays.stream(v.split("x")).mapToInt(Integer::parseInt).toArray()).toArray(int[][]::new);
            } else if (arg.startsWith("threads=")) {
                threads = Arrays.stream(arg.substring(8).split(",")).mapToInt(Integer::parseInt).toArray();
            } else if (arg.startsWith("seconds=")) {
                seconds = Double.parseDouble(arg.substring(8));
            } else if (arg.equals("tA")) {
                ta = true;
            } else if (arg.equals("tB")) {
                tb = true;
            }
        }
        Kernels base = Kernels.best();
        java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
        System.out.println("kernels: " + base + ", " + Runtime.getRuntime().availableProcessors() + " cpus"
                + (ta ? ", A transposed" : "") + (tb ? ", B transposed" : ""));
        Random rnd = new Random(1);
        for (int[] shape : shapes) {
            int m = shape[0];
            int n = shape[1];
            int kk = shape[2];
            int lda = ta ? m : kk;
            int ldb = tb ? kk : n;
            try (Arena arena = Arena.ofShared()) {
                MemorySegment a = TestData.random(arena, rnd, (long) m * kk, -1, 1);
                MemorySegment b = TestData.random(arena, rnd, (long) kk * n, -1, 1);
                MemorySegment c = arena.allocate((long) m * n * Float.BYTES, 64);
                for (int t : threads) {
                    Kernels k = base.withThreads(t);
                    double flop = 2.0 * m * n * kk;
                    // warm-up: 2 s (the first calls run interpreted and C2 compiles the micro-kernel late)
                    long end = System.nanoTime() + 2_000_000_000L;
                    while (System.nanoTime() < end) {
                        k.sgemm(ta, tb, m, n, kk, 1f, a, 0, lda, b, 0, ldb, 0f, c, 0, n);
                    }
                    int reps = 0;
                    double best = Double.MAX_VALUE;
                    long cpu0 = cpu.getCurrentThreadCpuTime();
                    long start = System.nanoTime();
                    long budget = (long) (seconds * 1e9);
                    while (System.nanoTime() - start < budget || reps < 3) {
                        long t0 = System.nanoTime();
                        k.sgemm(ta, tb, m, n, kk, 1f, a, 0, lda, b, 0, ldb, 0f, c, 0, n);
                        best = Math.min(best, System.nanoTime() - t0);
                        reps++;
                    }
                    double mean = (System.nanoTime() - start) / (double) reps;
                    double cpuMean = (cpu.getCurrentThreadCpuTime() - cpu0) / (double) reps;
                    System.out.printf("%dx%dx%d threads=%d  mean %7.1f GFLOP/s  best %7.1f GFLOP/s%s  (%d reps)%n",
                            m, n, kk, t, flop / mean, flop / best,
                            t == 1 ? String.format("  per cpu-second %7.1f GFLOP/s", flop / cpuMean) : "", reps);
                }
            }
        }
    }
}
