package io.vram4j.bench;

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

import java.util.concurrent.TimeUnit;

/**
 * Time of one training step of the MLP 784-{@code hidden}-{@code hidden}-10 (ReLU, cross-entropy, SGD) on
 * real Fashion-MNIST batches: ours ({@link io.vram4j.train.Trainer#trainStep} on the {@code host} device) and
 * DJL 0.35.1 on PyTorch 2.7.1 CPU, with the same batch, threads and optimizer. The mode is
 * {@link Mode#SampleTime}: JMH reports the distribution of single steps, and the comparison uses its median
 * ({@code p0.50}).
 *
 * <p>Each parameter combination runs in its own JMH fork, which is what lets the thread count be chosen per
 * run: our kernels and PyTorch both read it once per process. The DJL engine needs the {@code -Pdjl} build:
 * <pre>
 * ./mvnw -B -pl vram4j-bench -am -Pdjl package -DskipTests
 * java -Dai.djl.offline=true -jar vram4j-bench/target/benchmarks.jar TrainStepBenchmark
 * java -cp vram4j-bench/target/benchmarks.jar io.vram4j.bench.TrainStepReport   # the side-by-side table
 * </pre>
 * Threads: ours sets {@code vram4j.compute.threads}; DJL sets {@code ai.djl.pytorch.num_threads} (intra-op)
 * and one inter-op thread. Not run by the tests.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
        "-Dai.djl.offline=true", "-Xms1g", "-Xmx1g"})
public class TrainStepBenchmark {
    /** {@code vram4j} (ours) or {@code djl} (DJL on PyTorch CPU). */
    @Param({"vram4j", "djl"})
    public String engine;

    /** Compute threads of the engine. */
    @Param({"1", "2"})
    public int threads;

    /** Samples per step. */
    @Param({"128", "512"})
    public int batch;

    /** Hidden width: 1024 as in the peers' figures; 512 is {@code ./vram4j train}'s default. */
    @Param({"1024", "512"})
    public int hidden;

    /** SGD momentum: 0 as in the peers' figures; {@code ./vram4j train} defaults to 0.9. */
    @Param({"0"})
    public float momentum;

    /**
     * libgomp's {@code OMP_WAIT_POLICY} for PyTorch's OpenMP threads ({@code djl} only): {@code default}
     * leaves it unset (threads spin at barriers), {@code passive} makes waiting threads sleep, which matters
     * when the cores are shared with other processes. Set through {@link NativeEnv} before libtorch loads.
     */
    @Param({"default"})
    public String ompWait;

    private StepEngine step;
    private StepBatches batches;

    @Setup(Level.Trial)
    public void setUp() {
        batches = new StepBatches(batch, 8);
        if (!ompWait.equals("default")) {
            NativeEnv.set("OMP_WAIT_POLICY", ompWait.toUpperCase(java.util.Locale.ROOT));
        }
        step = StepEngine.open(engine, new StepEngine.Config(hidden, batch, threads, 0.1f, momentum));
        System.out.println("# " + step.description());
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        step.close();
    }

    /** @return the mean loss of the batch (so the step is not eliminated) */
    @Benchmark
    public double trainStep() {
        return step.step(batches.next());
    }
}
