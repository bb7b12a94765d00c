package io.vram4j.bench;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.data.Batch;
import io.vram4j.data.CharVocabulary;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.train.ModelKind;
import io.vram4j.train.Precision;
import io.vram4j.train.TrainOptions;
import io.vram4j.train.Trainer;
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

import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The host-side cost of one training step on a GPU device, with no GPU: {@link Trainer#trainStep} (forward,
 * cross-entropy, backward, optimizer step, the loss read back) where every kernel and matrix product is queued and
 * none runs. What is left is vram4j's own work per step: autograd, tensor and allocator bookkeeping, the kernels'
 * argument checks and launches, and on {@code cuda} the driver calls. On a GPU the device runs the kernels while the
 * host queues the next ones, so this is the floor of a step that is not limited by the GPU's own work (a small
 * model, or a small batch). Devices:
 * <ul>
 *   <li>{@code sim:H100-80GB}: the CUDA kernels over a queue that records nothing (no driver calls);</li>
 *   <li>{@code cuda}: the {@code cuda} device over the tests' stand-in driver and cuBLAS ({@link StandInDriver}),
 *       whose launches and products check their arguments and run nothing, and whose queued copies and fills are
 *       dropped ({@link StandInDriver#discardData}); pageable memory is still staged at the call, as the driver
 *       does. The real driver's own cost per call is not in it.</li>
 * </ul>
 * Models: {@code mlp} is {@code ./vram4j train}'s MLP 784-512-512-10, batch 128, SGD with momentum 0.9;
 * {@code transformer} is {@code bench techniques}' Transformer (12 blocks of width 128, 4 heads, context 256,
 * batch 8, AdamW); {@code transformer-bf16} the same under bf16 autocast. The batch is random data made once.
 *
 * <p>Run from the repository root; {@code cuda} needs the stand-in cuBLAS in the environment, which JMH's forks
 * inherit (gcc and the CUDA headers build both libraries at the first run):
 * <pre>
 * VRAM4J_LIBCUBLAS=$PWD/vram4j-bench/target/stand-in/libcublas-fake.so \
 *     java -jar vram4j-bench/target/benchmarks.jar StepHostCostBenchmark
 * </pre>
 * µs per step, sample time (the median is the figure to read). Not run by the tests.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
        "-Xms1g", "-Xmx1g"})
public class StepHostCostBenchmark {
    /** {@code sim:H100-80GB} or {@code cuda} (over the stand-in driver). */
    @Param({"sim:H100-80GB", "cuda"})
    public String device;

    /** {@code mlp}, {@code transformer} or {@code transformer-bf16}. */
    @Param({"mlp", "transformer", "transformer-bf16"})
    public String model;

    private DeviceBackend backend;
    private CachingAllocator alloc;
    private Trainer trainer;
    private Batch batch;

    @Setup(Level.Trial)
    public void open() {
        if (device.equals("cuda")) {
            Path cublas = StandInDriver.libcublas();
            if (!cublas.toString().equals(System.getenv("VRAM4J_LIBCUBLAS"))) {
                throw new IllegalStateException("run with VRAM4J_LIBCUBLAS=" + cublas + " (the stand-in cuBLAS)");
            }
            Path driver = StandInDriver.libcuda();
            StandInDriver.discardData(driver);
            System.setProperty("vram4j.libcuda", driver.toString());
        }
        backend = Devices.open(device);
        alloc = CachingAllocator.create(backend);
        Random r = new Random(1);
        if (model.equals("mlp")) {
            TrainOptions o = TrainOptions.defaults().withHistorySteps(0);
            trainer = new Trainer(alloc, o, 784, 10);
            float[] x = new float[o.batchSize() * 784];
            int[] y = new int[o.batchSize()];
            for (int i = 0; i < x.length; i++) {
                x[i] = r.nextFloat();
            }
            for (int i = 0; i < y.length; i++) {
                y[i] = r.nextInt(10);
            }
            batch = new Batch(0, y.length, 784, x, y);
            return;
        }
        TrainOptions o = TrainOptions.defaults(ModelKind.TRANSFORMER).withLayers(12).withHidden(128).withHeads(4)
                .withBlockSize(256).withBatchSize(8).withHistorySteps(0);
        if (model.equals("transformer-bf16")) {
            o = o.withAmp(Precision.BF16);
        } else if (!model.equals("transformer")) {
            throw new IllegalArgumentException("model: mlp, transformer or transformer-bf16, not " + model);
        }
        CharVocabulary vocabulary = CharVocabulary.of("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ.,;:!?'-\n0123456789");
        trainer = new Trainer(alloc, o, vocabulary);
        int features = o.blockSize() + 1;
        float[] x = new float[o.batchSize() * features];
        int[] y = new int[o.batchSize()];
        for (int i = 0; i < x.length; i++) {
            x[i] = r.nextInt(vocabulary.size());
        }
        for (int i = 0; i < y.length; i++) {
            y[i] = (int) x[i * features + features - 1];
        }
        batch = new Batch(0, y.length, features, x, y);
    }

    @TearDown(Level.Trial)
    public void close() {
        try {
            trainer.close();
        } finally {
            try {
                alloc.close();
            } finally {
                backend.close();
            }
        }
    }

    /** @return the step's loss (NaN or garbage: nothing is computed), so the step is not eliminated */
    @Benchmark
    public double trainStep() {
        return trainer.trainStep(batch);
    }
}
