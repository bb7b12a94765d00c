package io.vram4j.bench;

import io.vram4j.compute.Kernels;
import io.vram4j.compute.BenchWarmUp;
import io.vram4j.compute.SharedLoopVectorKernels;
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
 * The two loop shapes of the vector element-wise kernels side by side: {@code impl=perKernel} is
 * {@link Kernels#vector()} (a hand-written loop in every kernel, the product), {@code impl=shared} is
 * {@link SharedLoopVectorKernels} (one loop per family, the operation a function object; tried, not kept). Both
 * run behind the same argument checks and compute the same bits. One or more kernels of each family: binary
 * ({@code add}, {@code mul}), with a scalar ({@code axpy}, {@code scale}), unary ({@code relu}, {@code exp},
 * {@code gelu}) and backward with two inputs ({@code reluBackward}, {@code geluBackward}). Nanoseconds per call
 * on {@code n} floats, single thread; inputs random in [-4, 4) in a shared arena (as host memory), 64-byte
 * aligned. {@link #mix} calls the nine one after the other, as a training step interleaves its kernels.
 *
 * <p>{@code before} is what the setup runs first: {@code none}, a fresh JVM that then runs only the measured
 * kernel; {@code warmUp}, {@link Kernels#warmUp()} as {@code train} does, so every kernel of the implementation
 * has been called (on a confined arena's segments) before the measured one, and a loop shared by several kernels
 * carries their mixed profile; {@code warmUpShared}, the same calls on a shared arena's segments
 * ({@link BenchWarmUp}), which tells the effect of the segment kind apart from the effect of the other kernels.
 *
 * <pre>
 *   ./mvnw -B -q -pl vram4j-bench -am package -DskipTests
 *   java -jar vram4j-bench/target/benchmarks.jar VectorLoopBenchmark -p before=warmUp -rf json -rff loops.json
 *   python3 vram4j-bench/jmh-table.py loops.json
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 5, time = 500, timeUnit = TimeUnit.MILLISECONDS)
@Fork(value = 2, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class VectorLoopBenchmark {

    @Param({"perKernel", "shared"})
    public String impl;

    @Param({"1024", "65536", "1048576"})
    public int n;

    @Param({"none", "warmUp", "warmUpShared"})
    public String before;

    private Arena arena;
    private Kernels k;
    private MemorySegment a;
    private MemorySegment b;
    private MemorySegment out;

    @Setup(Level.Trial)
    public void setUp() {
        k = switch (impl) {
            case "perKernel" -> Kernels.vector().withThreads(1);
            case "shared" -> SharedLoopVectorKernels.create();
            default -> throw new IllegalArgumentException("impl must be perKernel or shared, not " + impl);
        };
        switch (before) {
            case "none" -> { }
            case "warmUp" -> k.warmUp();
            case "warmUpShared" -> BenchWarmUp.onSharedArena(k);
            default -> throw new IllegalArgumentException("before must be none, warmUp or warmUpShared, not " + before);
        }
        arena = Arena.ofShared();
        SplittableRandom rnd = new SplittableRandom(7);
        a = random(rnd);
        b = random(rnd);
        out = random(rnd);
    }

    private MemorySegment random(SplittableRandom rnd) {
        MemorySegment s = arena.allocate((long) n * Float.BYTES, 64);
        for (int i = 0; i < n; i++) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (-4 + rnd.nextDouble() * 8));
        }
        return s;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    /** An element of the output, so the call is not eliminated. */
    private float result() {
        return out.getAtIndex(ValueLayout.JAVA_FLOAT, n - 1);
    }

    @Benchmark
    public float add() {
        k.add(n, a, 0, b, 0, out, 0);
        return result();
    }

    @Benchmark
    public float mul() {
        k.mul(n, a, 0, b, 0, out, 0);
        return result();
    }

    @Benchmark
    public float axpy() {
        // out += 1e-3 * a: out stays bounded over the calls of a run
        k.axpy(n, 1e-3f, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float scale() {
        k.scale(n, 0.5f, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float relu() {
        k.relu(n, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float exp() {
        k.exp(n, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float gelu() {
        k.gelu(n, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float reluBackward() {
        k.reluBackward(n, b, 0, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float geluBackward() {
        k.geluBackward(n, b, 0, a, 0, out, 0);
        return result();
    }

    /**
     * All nine kernels above, one call each, as a training step interleaves them: every shared loop then serves
     * several operations in turn, which is where a function object passed to it stops being a constant.
     */
    @Benchmark
    public float mix() {
        k.add(n, a, 0, b, 0, out, 0);
        k.mul(n, out, 0, b, 0, out, 0);
        k.axpy(n, 1e-3f, a, 0, out, 0);
        k.scale(n, 0.5f, out, 0, out, 0);
        k.relu(n, out, 0, out, 0);
        k.exp(n, a, 0, out, 0);
        k.gelu(n, out, 0, out, 0);
        k.reluBackward(n, b, 0, out, 0, out, 0);
        k.geluBackward(n, b, 0, out, 0, out, 0);
        return result();
    }
}
