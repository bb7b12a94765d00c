package io.vram4j.bench;

import io.vram4j.compute.Kernels;
import io.vram4j.compute.PerKernelVectorKernels;
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
 * The two loop shapes of the vector element-wise kernels side by side: {@code impl=shared} is
 * {@link Kernels#vector()} (one loop per family, the operation a function object), {@code impl=perKernel} is
 * {@link PerKernelVectorKernels} (a hand-written loop in every kernel, the code before). Both run behind the
 * same argument checks and compute the same bits; one kernel of each family (binary, with a scalar, unary,
 * backward with two inputs) plus the costly unary ones. Nanoseconds per call on {@code n} floats, single
 * thread; inputs random in [-4, 4) in a shared arena, 64-byte aligned.
 *
 * <p>{@code before=warmUp} runs {@link Kernels#warmUp()} in the setup, as {@code train} does: every kernel of
 * the implementation has then been called (on a confined arena's segments) before the measured one, so a
 * shared loop that C2 compiled on its own, rather than inlined into each kernel, would show here as a slower
 * kernel. {@code before=none} measures each kernel in a fresh JVM that has run nothing else.
 *
 * <pre>
 *   ./mvnw -B -q -pl vram4j-bench -am package -DskipTests
 *   java -jar vram4j-bench/target/benchmarks.jar VectorLoopBenchmark -p before=none -rf json -rff loops.json
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

    @Param({"shared", "perKernel"})
    public String impl;

    @Param({"1024", "65536", "1048576"})
    public int n;

    @Param({"none", "warmUp"})
    public String before;

    private Arena arena;
    private Kernels k;
    private MemorySegment a;
    private MemorySegment b;
    private MemorySegment out;

    @Setup(Level.Trial)
    public void setUp() {
        k = switch (impl) {
            case "shared" -> Kernels.vector().withThreads(1);
            case "perKernel" -> PerKernelVectorKernels.create();
            default -> throw new IllegalArgumentException("impl must be shared or perKernel, not " + impl);
        };
        switch (before) {
            case "none" -> { }
            case "warmUp" -> k.warmUp();
            default -> throw new IllegalArgumentException("before must be none or warmUp, not " + before);
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
}
