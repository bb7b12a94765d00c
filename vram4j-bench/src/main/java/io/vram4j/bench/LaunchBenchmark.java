package io.vram4j.bench;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.cuda.CudaKernels;
import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.cuda.CudaFunction;
import io.vram4j.device.cuda.CudaModule;
import io.vram4j.device.cuda.KernelArgs;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The host-side cost of one kernel launch on the {@code cuda} device, over the stand-in driver
 * ({@link StandInDriver}: {@code cuLaunchKernel} records the launch under a mutex and runs nothing, so what is
 * measured is vram4j's own path from the call to the driver and back, plus that bookkeeping, and no GPU):
 * <ul>
 *   <li>{@code rawLaunch}: {@link CudaFunction#launch} of {@code v4j_add_f32} with a {@link KernelArgs} built per
 *       call (the core binding alone);</li>
 *   <li>{@code add}: {@link CudaKernels#add} of 1,024 floats (one launch through the tensor runtime's checked
 *       launcher);</li>
 *   <li>{@code sgdStep}: {@link CudaKernels#sgdMulti} over the six parameters of the 784-512-512-10 MLP (the fused
 *       step: a 56-byte-per-tensor address table taken from the caching allocator, copied in, one launch, freed);</li>
 *   <li>{@code sum}: {@link CudaKernels#sum} of 1,024 floats (partials from the allocator, two launches, a stream
 *       synchronize and a 4-byte copy back).</li>
 * </ul>
 * ns per call, average time. Run: {@code java -jar vram4j-bench/target/benchmarks.jar LaunchBenchmark} from the
 * repository root (gcc and the CUDA headers build the stand-in at the first run); {@code -prof gc} gives the
 * bytes allocated per call.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 2, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xms1g", "-Xmx1g"})
public class LaunchBenchmark {
    private static final long N = 1024;
    /** The MLP's parameters: weights and biases of 784-512-512-10. */
    private static final long[] MLP_SIZES = {784 * 512, 512, 512 * 512, 512, 512 * 10, 10};

    CudaDevice device;
    CachingAllocator allocator;
    Stream stream;
    CudaKernels kernels;
    CudaModule module;
    CudaFunction addFunction;
    MemorySegment a;
    MemorySegment b;
    MemorySegment out;
    MemorySegment[] params;
    MemorySegment[] grads;

    @Setup(Level.Trial)
    public void open() {
        device = CudaDevice.open(StandInDriver.libcuda().toString(), 0);
        allocator = CachingAllocator.create(device);
        stream = device.defaultStream();
        kernels = CudaKernels.create(allocator, stream, Map.of());
        module = device.loadModule(ptx());
        addFunction = module.function("v4j_add_f32");
        a = floats(N);
        b = floats(N);
        out = floats(N);
        params = new MemorySegment[MLP_SIZES.length];
        grads = new MemorySegment[MLP_SIZES.length];
        for (int t = 0; t < MLP_SIZES.length; t++) {
            params[t] = floats(MLP_SIZES[t]);
            grads[t] = floats(MLP_SIZES[t]);
        }
    }

    private MemorySegment floats(long n) {
        return MemorySegment.ofAddress(allocator.malloc(n * Float.BYTES, stream)).reinterpret(n * Float.BYTES);
    }

    private static byte[] ptx() {
        try (InputStream in = CudaKernels.class.getResourceAsStream("vram4j_kernels.ptx")) {
            if (in == null) {
                throw new IllegalStateException("vram4j_kernels.ptx is missing from the vram4j-tensor jar");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        stream.synchronize();
        for (MemorySegment s : new MemorySegment[] {a, b, out}) {
            allocator.free(s.address());
        }
        for (int t = 0; t < MLP_SIZES.length; t++) {
            allocator.free(params[t].address());
            allocator.free(grads[t].address());
        }
        kernels.close();
        module.close();
        allocator.close();
        device.close();
    }

    @Benchmark
    public void rawLaunch() {
        addFunction.launch(4, 1, 256, 0, stream, KernelArgs.of().ptr(a.address()).ptr(b.address()).ptr(out.address())
                .i64(N));
    }

    @Benchmark
    public void add() {
        kernels.add(N, a, 0, b, 0, out, 0);
    }

    @Benchmark
    public void sgdStep() {
        kernels.sgdMulti(MLP_SIZES.length, MLP_SIZES, params, grads, null, 0.01f, 0f, 0f, false, false);
    }

    @Benchmark
    public float sum() {
        return kernels.sum(N, a, 0);
    }
}
