package io.vram4j.compute.cuda;

import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.cuda.GpuTimer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * GPU time by kernel, for finding where a step's GPU time goes: with {@code VRAM4J_KERNEL_TIMES} naming a file,
 * {@link DriverQueue} times every launch, cuBLAS product and queued copy or fill between two events created with
 * timing ({@link GpuTimer}), and when the kernels are closed appends a table to that file: per kernel the calls, the
 * total and mean GPU time and the share of the total, largest first. Like {@code torch.profiler}'s CUDA times, but
 * with events: each call costs two event records, and every {@value #PENDING_LIMIT} calls the host waits to read
 * them, so a timed run is slower than an untimed one and is for finding hot kernels, not for timing steps.
 *
 * <p>Thread-safe (one lock).
 */
final class KernelClock {
    /** The environment variable naming the report file. */
    static final String ENV = "VRAM4J_KERNEL_TIMES";
    /** Timed calls kept before their events are read. */
    static final int PENDING_LIMIT = 2048;

    private record Pending(String name, GpuTimer timer) {
    }

    private final CudaDevice device;
    private final Path report;
    private final List<Pending> pending = new ArrayList<>();
    private final Map<String, double[]> totals = new TreeMap<>();   // name -> {calls, milliseconds}

    private KernelClock(CudaDevice device, Path report) {
        this.device = device;
        this.report = report;
    }

    /**
     * @return a clock reporting to the file {@code env} names in {@value #ENV}, or null when it names none
     * @throws IllegalArgumentException when the file's directory does not exist or cannot be written (one line)
     */
    static KernelClock fromEnvironment(CudaDevice device, Map<String, String> env) {
        String file = env.get(ENV);
        if (file == null || file.isBlank()) {
            return null;
        }
        Path path = Path.of(file).toAbsolutePath();
        Path dir = path.getParent();
        if (dir == null || !Files.isDirectory(dir) || !Files.isWritable(dir) || Files.isDirectory(path)) {
            throw new IllegalArgumentException(ENV + "=" + file + ": expected a file in a writable directory");
        }
        return new KernelClock(device, path);
    }

    /** Runs {@code call}, which queues its GPU work on {@code stream}, between the two records of a timer. */
    synchronized void time(String name, Stream stream, Runnable call) {
        GpuTimer timer = device.newTimer();
        try {
            timer.start(stream);
            call.run();
            timer.stop(stream);
        } catch (RuntimeException | Error e) {
            timer.close();
            throw e;
        }
        pending.add(new Pending(name, timer));
        if (pending.size() >= PENDING_LIMIT) {
            drain();
        }
    }

    /** Reads the pending timers (waiting for the last one) and adds them to the totals. */
    private void drain() {
        try {
            for (Pending p : pending) {
                double[] t = totals.computeIfAbsent(p.name(), k -> new double[2]);
                t[0]++;
                t[1] += p.timer().elapsedMs();
            }
        } finally {
            for (Pending p : pending) {
                p.timer().close();
            }
            pending.clear();
        }
    }

    /**
     * Appends the table to the report file.
     *
     * @throws UncheckedIOException when the file cannot be written (naming it)
     */
    synchronized void report() {
        drain();
        double all = totals.values().stream().mapToDouble(t -> t[1]).sum();
        long calls = totals.values().stream().mapToLong(t -> (long) t[0]).sum();
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "# GPU time by kernel on %s (%s): %,d calls, %.3f ms, each between two CUDA events%n",
                device.description(), ENV, calls, all));
        sb.append(String.format(Locale.ROOT, "%-40s %9s %12s %10s %7s%n", "kernel", "calls", "total ms", "mean us",
                "share"));
        totals.entrySet().stream().sorted((a, b) -> Double.compare(b.getValue()[1], a.getValue()[1])).forEach(e ->
                sb.append(String.format(Locale.ROOT, "%-40s %,9d %12.3f %10.2f %6.1f%%%n", e.getKey(),
                        (long) e.getValue()[0], e.getValue()[1], 1000 * e.getValue()[1] / e.getValue()[0],
                        all == 0 ? 0 : 100 * e.getValue()[1] / all)));
        try {
            Files.writeString(report, sb, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(ENV + ": cannot write " + report + ": " + e.getMessage(), e);
        }
    }
}
