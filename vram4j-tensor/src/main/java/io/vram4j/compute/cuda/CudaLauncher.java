package io.vram4j.compute.cuda;

import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaFunction;
import io.vram4j.device.cuda.CudaModule;
import io.vram4j.device.cuda.KernelArgs;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Launches the kernels of {@link CudaKernelTable} from one loaded module: each launch is checked against its
 * descriptor (number of values and the Java type each parameter takes: a {@link MemorySegment} or {@link Long}
 * address for {@link KernelParam#PTR}, {@link Long} for 64-bit integers, {@link Integer}, {@link Float}) before
 * it reaches the driver, which cannot check them. Functions are looked up once.
 *
 * <p>Thread-safe.
 */
final class CudaLauncher {
    private final CudaModule module;
    private final Map<String, CudaFunction> functions = new ConcurrentHashMap<>();

    CudaLauncher(CudaModule module) {
        this.module = module;
    }

    /** Queues {@code kernel} on {@code stream} with {@code config}; does nothing for an empty grid. */
    void launch(CudaKernel kernel, LaunchConfig config, Stream stream, Object... values) {
        KernelArgs args = args(kernel, values);
        if (config.isEmpty()) {
            return;
        }
        functions.computeIfAbsent(kernel.name(), module::function)
                .launch(config.gridX(), config.gridY(), config.blockX(), config.sharedBytes(), stream, args);
    }

    /**
     * @return the values as launch arguments of {@code kernel}
     * @throws IllegalArgumentException naming the kernel and parameter when a value is missing, extra or of the
     *     wrong type
     */
    static KernelArgs args(CudaKernel kernel, Object... values) {
        List<KernelParam> params = kernel.params();
        if (values.length != params.size()) {
            throw new IllegalArgumentException(kernel.name() + " takes " + params.size() + " parameters, "
                    + values.length + " given");
        }
        KernelArgs a = KernelArgs.of();
        for (int i = 0; i < values.length; i++) {
            Object v = values[i];
            switch (params.get(i)) {
                case PTR -> {
                    if (v instanceof MemorySegment s) {
                        a.ptr(s.address());
                    } else if (v instanceof Long l) {
                        a.ptr(l);
                    } else {
                        throw wrong(kernel, i, "a device pointer (MemorySegment or Long)", v);
                    }
                }
                case U64, S64 -> {
                    if (!(v instanceof Long l)) {
                        throw wrong(kernel, i, "a Long", v);
                    }
                    a.i64(l);
                }
                case I32 -> {
                    if (!(v instanceof Integer n)) {
                        throw wrong(kernel, i, "an Integer", v);
                    }
                    a.i32(n);
                }
                case F32 -> {
                    if (!(v instanceof Float f)) {
                        throw wrong(kernel, i, "a Float", v);
                    }
                    a.f32(f);
                }
            }
        }
        return a;
    }

    private static IllegalArgumentException wrong(CudaKernel kernel, int i, String expected, Object v) {
        return new IllegalArgumentException(kernel.name() + " parameter " + i + " (" + kernel.params().get(i)
                + ") needs " + expected + ", got " + (v == null ? "null" : v.getClass().getSimpleName() + " " + v));
    }
}
