package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Multi-threaded sgemm gives the single-threaded result bit for bit, and concurrent callers do not interfere. */
class GemmThreadingTest {

    @BeforeEach
    void vectorAvailable() {
        assumeTrue(Kernels.vectorAvailable(), "jdk.incubator.vector not available");
    }

    private static void assertBitwiseEqual(MemorySegment e, MemorySegment a, long n, String what) {
        for (long i = 0; i < n; i++) {
            int eb = Float.floatToRawIntBits(TestData.get(e, i));
            int ab = Float.floatToRawIntBits(TestData.get(a, i));
            if (eb != ab) {
                fail(what + ": element " + i + " differs: " + TestData.get(e, i) + " vs " + TestData.get(a, i));
            }
        }
    }

    @Test
    void threadCountDoesNotChangeTheResult() {
        int[][] shapes = {{300, 500, 600}, {1000, 37, 300}, {13, 2000, 257}, {257, 257, 1030}, {64, 64, 2048}};
        Random rnd = new Random(1);
        try (Arena arena = Arena.ofShared()) {
            for (int[] s : shapes) {
                int m = s[0];
                int n = s[1];
                int k = s[2];
                for (int t = 0; t < 4; t++) {
                    boolean ta = (t & 1) != 0;
                    boolean tb = (t & 2) != 0;
                    MemorySegment a = TestData.random(arena, rnd, (long) m * k, -1, 1);
                    MemorySegment b = TestData.random(arena, rnd, (long) k * n, -1, 1);
                    MemorySegment c0 = TestData.random(arena, rnd, (long) m * n, -1, 1);
                    MemorySegment ref = TestData.copyOf(arena, c0);
                    Kernels.vector().withThreads(1).sgemm(ta, tb, m, n, k, 1.5f, a, 0, ta ? m : k, b, 0, tb ? k : n,
                            0.25f, ref, 0, n);
                    for (int threads : new int[] {2, 3, 4, 7}) {
                        MemorySegment c = TestData.copyOf(arena, c0);
                        Kernels.vector().withThreads(threads).sgemm(ta, tb, m, n, k, 1.5f, a, 0, ta ? m : k, b, 0,
                                tb ? k : n, 0.25f, c, 0, n);
                        assertBitwiseEqual(ref, c, (long) m * n, m + "x" + n + "x" + k + " t=" + t + " threads=" + threads);
                    }
                }
            }
        }
    }

    @Test
    void confinedSegmentsStayOnTheCallingThread() {
        Random rnd = new Random(2);
        int m = 200;
        int n = 300;
        int k = 400;
        try (Arena shared = Arena.ofShared(); Arena confined = Arena.ofConfined()) {
            MemorySegment a = TestData.random(confined, rnd, (long) m * k, -1, 1);
            MemorySegment b = TestData.random(shared, rnd, (long) k * n, -1, 1);
            MemorySegment c = confined.allocate((long) m * n * 4);
            MemorySegment ref = shared.allocate((long) m * n * 4);
            MemorySegment a2 = TestData.copyOf(shared, a);
            Kernels.vector().withThreads(4).sgemm(false, false, m, n, k, 1f, a, 0, k, b, 0, n, 0f, c, 0, n);
            Kernels.vector().withThreads(1).sgemm(false, false, m, n, k, 1f, a2, 0, k, b, 0, n, 0f, ref, 0, n);
            assertBitwiseEqual(ref, c, (long) m * n, "confined");
        }
    }

    @Test
    void batchedThreadCountDoesNotChangeTheResult() {
        Random rnd = new Random(3);
        int batch = 9;
        int m = 70;
        int n = 90;
        int k = 110;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment a = TestData.random(arena, rnd, (long) batch * m * k, -1, 1);
            MemorySegment b = TestData.random(arena, rnd, (long) batch * k * n, -1, 1);
            MemorySegment ref = arena.allocate((long) batch * m * n * 4);
            Kernels.vector().withThreads(1).sgemmBatched(batch, false, true, m, n, k, 1f, a, 0, k, (long) m * k,
                    b, 0, k, (long) k * n, 0f, ref, 0, n, (long) m * n);
            for (int threads : new int[] {2, 4}) {
                MemorySegment c = TestData.filled(arena, (long) batch * m * n, Float.NaN);
                Kernels.vector().withThreads(threads).sgemmBatched(batch, false, true, m, n, k, 1f, a, 0, k,
                        (long) m * k, b, 0, k, (long) k * n, 0f, c, 0, n, (long) m * n);
                assertBitwiseEqual(ref, c, (long) batch * m * n, "batched threads=" + threads);
            }
        }
    }

    @Test
    void concurrentCallersGetCorrectResults() throws Exception {
        int callers = 6;
        int rounds = 5;
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        try (Arena arena = Arena.ofShared()) {
            List<MemorySegment[]> problems = new ArrayList<>();
            List<MemorySegment> expected = new ArrayList<>();
            Random rnd = new Random(4);
            for (int i = 0; i < callers; i++) {
                int m = 150 + 37 * i;
                int n = 140 + 29 * i;
                int k = 160 + 41 * i;
                MemorySegment a = TestData.random(arena, rnd, (long) m * k, -1, 1);
                MemorySegment b = TestData.random(arena, rnd, (long) k * n, -1, 1);
                MemorySegment e = arena.allocate((long) m * n * 4);
                Kernels.vector().withThreads(1).sgemm(false, false, m, n, k, 1f, a, 0, k, b, 0, n, 0f, e, 0, n);
                problems.add(new MemorySegment[] {a, b});
                expected.add(e);
            }
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < callers; i++) {
                int id = i;
                futures.add(pool.submit((Callable<Void>) () -> {
                    int m = 150 + 37 * id;
                    int n = 140 + 29 * id;
                    int k = 160 + 41 * id;
                    MemorySegment c = arena.allocate((long) m * n * 4);
                    Kernels kern = Kernels.vector().withThreads(1 + id % 3);
                    start.await();
                    for (int r = 0; r < rounds; r++) {
                        TestData.filled(arena, 1, 0f); // allocate concurrently too
                        kern.sgemm(false, false, m, n, k, 1f, problems.get(id)[0], 0, k, problems.get(id)[1], 0, n,
                                0f, c, 0, n);
                        assertBitwiseEqual(expected.get(id), c, (long) m * n, "caller " + id + " round " + r);
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : futures) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(0, 0);
    }
}
