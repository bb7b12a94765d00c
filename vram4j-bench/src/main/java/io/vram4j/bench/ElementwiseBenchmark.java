package io.vram4j.bench;

import io.vram4j.compute.BenchWarmUp;
import io.vram4j.compute.Kernels;
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
 * The element-wise kernels of {@link Kernels} on {@code n} floats: the binary, with-a-scalar, unary and
 * backward families (the ones a training step runs besides sgemm). The score is nanoseconds per call
 * (average time); {@code n / score} is elements per nanosecond. {@code impl} picks {@link Kernels#vector()}
 * or {@link Kernels#scalar()}, or {@code vectorShared}: {@link SharedLoopVectorKernels}, the vector kernels on
 * one loop per family (tried, not kept; the same bits as {@code vector}). {@code n} = 16,384 keeps the three
 * operands (192 KiB) in L2, so the kernels' loops rather than memory bandwidth are measured. {@link #mix} calls
 * nine of the kernels one after the other, as a training step interleaves them. Inputs are random in [-4, 4) (positive for
 * {@code sqrt}), in native memory (a shared arena, as the {@code host} device's memory), 64-byte aligned.
 *
 * <p>With {@code warmUp=true} the setup first runs {@link Kernels#warmUp()}, as {@code train} did until it was
 * measured to slow training (BENCHMARKS.md, "The main job"): every kernel has then been called, so a loop shared by several kernels is measured with the mixed profile it has
 * in real use, not the single-kernel profile of a JMH fork. Its inputs live in a confined arena, so the
 * compiled kernels then also meet a second kind of segment; figures with it vary much more from fork to fork.
 * {@code warmUpArena=shared} runs the same warm-up on a shared arena ({@link BenchWarmUp}), the kind of segment
 * the benchmark and the {@code host} device use, which tells the two effects apart.
 *
 * <pre>
 *   ./mvnw -B -q -pl vram4j-bench -am package -DskipTests
 *   java -jar vram4j-bench/target/benchmarks.jar ElementwiseBenchmark -rf json -rff elementwise.json
 *   python3 vram4j-bench/jmh-table.py elementwise.json
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
public class ElementwiseBenchmark {

    @Param({"vector", "scalar"})
    public String impl;

    @Param({"16384"})
    public int n;

    @Param({"false"})
    public boolean warmUp;

    /** The arena of {@link #warmUp}'s inputs: {@code confined} (as {@link Kernels#warmUp()}) or {@code shared}. */
    @Param({"confined"})
    public String warmUpArena;

    private Arena arena;
    private Kernels k;
    private MemorySegment a;
    private MemorySegment b;
    private MemorySegment positive;
    private MemorySegment out;

    @Setup(Level.Trial)
    public void setUp() {
        k = switch (impl) {
            case "vector" -> Kernels.vector();
            case "scalar" -> Kernels.scalar();
            case "vectorShared" -> SharedLoopVectorKernels.create();
            default -> throw new IllegalArgumentException("impl must be vector, scalar or vectorShared, not " + impl);
        };
        if (warmUp) {
            switch (warmUpArena) {
                case "confined" -> k.warmUp();
                case "shared" -> BenchWarmUp.onSharedArena(k);
                default -> throw new IllegalArgumentException("warmUpArena must be confined or shared, not " + warmUpArena);
            }
        }
        arena = Arena.ofShared();
        SplittableRandom rnd = new SplittableRandom(7);
        a = random(rnd, -4, 8);
        b = random(rnd, -4, 8);
        positive = random(rnd, 0.001, 8);
        out = arena.allocate((long) n * Float.BYTES, 64);
    }

    private MemorySegment random(SplittableRandom rnd, double from, double width) {
        MemorySegment s = arena.allocate((long) n * Float.BYTES, 64);
        for (int i = 0; i < n; i++) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (from + rnd.nextDouble() * width));
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
        k.axpy(n, 1e-3f, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float scale() {
        k.scale(n, 0.5f, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float neg() {
        k.neg(n, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float exp() {
        k.exp(n, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float sqrt() {
        k.sqrt(n, positive, 0, out, 0);
        return result();
    }

    @Benchmark
    public float sigmoid() {
        k.sigmoid(n, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float relu() {
        k.relu(n, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float reluBackward() {
        k.reluBackward(n, b, 0, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float gelu() {
        k.gelu(n, a, 0, out, 0);
        return result();
    }

    @Benchmark
    public float geluBackward() {
        k.geluBackward(n, b, 0, a, 0, out, 0);
        return result();
    }

    /** Nine of the kernels above, one call each, as a training step interleaves them. */
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
