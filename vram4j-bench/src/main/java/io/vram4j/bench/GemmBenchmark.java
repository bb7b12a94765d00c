package io.vram4j.bench;

import io.vram4j.compute.Kernels;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.openblas.global.openblas_nolapack;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Square row-major sgemm {@code C = A * B} ({@code n x n} float32, {@code alpha = 1}, {@code beta = 0}) on
 * vram4j's kernels ({@link Kernels#best()}: the Vector API kernels with {@code --add-modules
 * jdk.incubator.vector}) and on OpenBLAS 0.3.31 ({@code cblas_sgemm} through {@code org.bytedeco:openblas}),
 * each on {@code threads} threads. The score is milliseconds per product, sampled per call so JMH reports
 * percentiles: on a machine shared with other work the median shows the load and the minimum (p0.00) how
 * fast each side runs when it has the cores. GFLOP/s is {@code 2 n^3 / time}.
 *
 * <p>Each fork runs one parameter set, so OpenBLAS's process-wide thread count
 * ({@code openblas_set_num_threads}, through JavaCPP's {@code blas_set_num_threads}) belongs to it alone.
 * Both sides get the same random inputs in [-1, 1) in native memory.
 *
 * <pre>
 *   ./mvnw -B -q -pl vram4j-bench -am package -DskipTests
 *   java -jar vram4j-bench/target/benchmarks.jar GemmBenchmark -f 1 -wi 3 -i 5
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class GemmBenchmark {

    @Param({"256", "512", "1024"})
    public int n;

    @Param({"1", "2"})
    public int threads;

    @Param({"vram4j", "openblas"})
    public String impl;

    private Arena arena;
    private MemorySegment a;
    private MemorySegment b;
    private MemorySegment c;
    private Kernels kernels;

    private FloatPointer pa;
    private FloatPointer pb;
    private FloatPointer pc;

    @Setup(Level.Trial)
    public void setUp() {
        long count = (long) n * n;
        float[] av = random(count, 1);
        float[] bv = random(count, 2);
        switch (impl) {
            case "vram4j" -> {
                kernels = Kernels.best().withThreads(threads);
                if (!kernels.name().equals("vector")) {
                    throw new IllegalStateException("vector kernels unavailable; run with --add-modules jdk.incubator.vector");
                }
                arena = Arena.ofShared();
                a = arena.allocate(count * Float.BYTES, 64);
                b = arena.allocate(count * Float.BYTES, 64);
                c = arena.allocate(count * Float.BYTES, 64);
                MemorySegment.copy(av, 0, a, ValueLayout.JAVA_FLOAT, 0, av.length);
                MemorySegment.copy(bv, 0, b, ValueLayout.JAVA_FLOAT, 0, bv.length);
            }
            case "openblas" -> {
                // loads the library; the preset's helper then calls openblas_set_num_threads
                org.bytedeco.javacpp.Loader.load(openblas_nolapack.class);
                org.bytedeco.openblas.presets.openblas_nolapack.blas_set_num_threads(threads);
                int got = org.bytedeco.openblas.presets.openblas_nolapack.blas_get_num_threads();
                if (got != threads) {
                    throw new IllegalStateException("OpenBLAS runs " + got + " threads, wanted " + threads);
                }
                pa = new FloatPointer(av);
                pb = new FloatPointer(bv);
                pc = new FloatPointer(count);
            }
            default -> throw new IllegalArgumentException("impl must be vram4j or openblas, not " + impl);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (arena != null) {
            arena.close();
        }
        for (FloatPointer p : new FloatPointer[] {pa, pb, pc}) {
            if (p != null) {
                p.close();
            }
        }
    }

    /** One product; returns an element of C so the work is not eliminated. */
    @Benchmark
    public float sgemm() {
        if (pa != null) {
            openblas_nolapack.cblas_sgemm(openblas_nolapack.CblasRowMajor, openblas_nolapack.CblasNoTrans,
                    openblas_nolapack.CblasNoTrans, n, n, n, 1f, pa, n, pb, n, 0f, pc, n);
            return pc.get(n + 1);
        }
        kernels.sgemm(false, false, n, n, n, 1f, a, 0, n, b, 0, n, 0f, c, 0, n);
        return c.getAtIndex(ValueLayout.JAVA_FLOAT, n + 1);
    }

    private static float[] random(long count, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] v = new float[Math.toIntExact(count)];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) (rnd.nextDouble() * 2 - 1);
        }
        return v;
    }
}
