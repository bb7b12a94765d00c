package io.vram4j.cli;

import io.vram4j.alloc.config.AllocatorConfigException;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.predict.Growth;
import io.vram4j.predict.Prediction;
import io.vram4j.predict.PredictionException;
import io.vram4j.predict.Predictor;
import io.vram4j.predict.Recording;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code vram4j predict}: the memory of a run at another batch size or sequence length, from two or three
 * snapshots of the same program at small values (see {@link Predictor}).
 */
@Command(name = "predict", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Will it fit? Predict peak allocated and reserved memory, fragmentation and out-of-memory at another batch size "
                + "or sequence length from two or three snapshots of the same program (recorded from an empty allocator).",
                "The traces are aligned event by event, each allocation's size is modelled in the parameter (affine in the batch; "
                        + "up to quadratic in the sequence length, three snapshots), the trace at the target is synthesized and "
                        + "replayed through the exact allocator.",
                "Example: vram4j predict run-b2.pickle@2 run-b4.pickle@4 --at 64 --capacity H100-80GB"})
final class PredictCommand implements Callable<Integer> {
    @Parameters(paramLabel = "FILE@VALUE", arity = "2..3", description = "a snapshot (pickle or JSON) and the parameter's value it was recorded at")
    List<String> inputs;

    @Option(names = "--at", paramLabel = "N", description = "the value to predict at")
    Long at;

    @Option(names = "--max", description = "search the largest value that fits on --capacity")
    boolean max;

    @Option(names = "--in", paramLabel = "PARAM", defaultValue = "batch",
            description = "what the value is: batch (sizes affine in it) or sequence (up to quadratic; three snapshots) (default: ${DEFAULT-VALUE})")
    String in;

    @Option(names = "--capacity", paramLabel = "SIZE|PRESET", description = "device capacity, e.g. 40GiB or H100-80GB (default: unbounded)")
    String capacity;

    @Option(names = "--conf", paramLabel = "S", description = "allocator settings in PYTORCH_CUDA_ALLOC_CONF format (default: the recorded ones)")
    String conf;

    @Option(names = "--max-value", paramLabel = "N", defaultValue = "1048576", description = "--max: the largest value to try (default: ${DEFAULT-VALUE})")
    long maxValue;

    @Mixin
    JsonOutput json;

    @Override
    public Integer call() {
        Growth growth = switch (in.toLowerCase(Locale.ROOT)) {
            case "batch" -> Growth.AFFINE;
            case "sequence", "seq" -> Growth.QUADRATIC;
            default -> throw new UserException("--in: unknown parameter '" + in + "'; expected batch or sequence");
        };
        if (at == null && !max) {
            throw new UserException("give --at N (the value to predict at), --max (the largest that fits on --capacity), or both");
        }
        if (at != null && at < 1) {
            throw new UserException("--at must be at least 1, got " + at);
        }
        long cap = capacity == null ? 0 : ReplayCommand.parseCapacity(capacity);
        if (max && cap == 0) {
            throw new UserException("--max needs --capacity (the device to fit on)");
        }
        if (maxValue < 1) {
            throw new UserException("--max-value must be at least 1, got " + maxValue);
        }
        List<Recording> recordings = new ArrayList<>();
        for (String input : inputs) {
            recordings.add(recording(input));
        }
        PrintWriter out = json.report();
        Map<String, Object> result = new LinkedHashMap<>();
        try {
            Predictor predictor = new Predictor(recordings, growth);
            result.put("recorded_values", predictor.values());
            result.put("model", growth == Growth.AFFINE ? "affine" : "quadratic");
            result.put("one_offs", predictor.oneOffs());
            out.printf(Locale.ROOT, "%d recordings at %s aligned (%s model, %d one-off allocation%s passed over)%n", recordings.size(),
                    joinValues(predictor.values()), growth == Growth.AFFINE ? "affine" : "quadratic", predictor.oneOffs(),
                    predictor.oneOffs() == 1 ? "" : "s");
            if (at != null) {
                Prediction p = predictor.predict(at, conf, cap);
                result.put("prediction", map(p));
                print(p, out);
            }
            if (max) {
                Predictor.Search s = predictor.largestFitting(conf, cap, maxValue);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("largest", s.largest());
                m.put("hit_upper_bound", s.hitUpperBound());
                m.put("tries", s.tried().stream().map(PredictCommand::map).toList());
                result.put("max", m);
                for (Prediction p : s.tried()) {
                    out.printf(Locale.ROOT, "  at %,d: %s, peak reserved %s, %.1f ms%n", p.value(), p.fits() ? "fits" : "out of memory",
                            FormatSize.formatSize(p.peakReserved()), p.seconds() * 1e3);
                }
                out.printf(Locale.ROOT, "largest value that fits on %s: %,d%s%n", FormatSize.formatSize(cap), s.largest(),
                        s.hitUpperBound() ? " (the upper bound --max-value; a larger value may fit too)" : "");
            }
        } catch (PredictionException e) {
            throw new UserException(e.getMessage(), e);
        } catch (AllocatorConfigException e) {
            throw new UserException("--conf: " + e.getMessage(), e);
        }
        out.flush();
        json.print(result);
        return 0;
    }

    private static Recording recording(String input) {
        int at = input.lastIndexOf('@');
        if (at <= 0 || at == input.length() - 1) {
            throw new UserException("'" + input + "': expected FILE@VALUE, e.g. run-b4.pickle@4");
        }
        long value;
        try {
            value = Long.parseLong(input.substring(at + 1).strip());
        } catch (NumberFormatException e) {
            throw new UserException("'" + input + "': the value after @ must be an integer, got '" + input.substring(at + 1) + "'");
        }
        if (value < 1) {
            throw new UserException("'" + input + "': the value must be at least 1, got " + value);
        }
        Path file = Path.of(input.substring(0, at));
        try {
            return new Recording(file.toString(), ReplayCommand.read(file), value);
        } catch (IOException e) {
            throw new UserException(file + ": cannot read: " + e.getMessage(), e);
        }
    }

    private static String joinValues(long[] values) {
        List<String> s = new ArrayList<>();
        for (int i = values.length - 1; i >= 0; i--) {
            s.add(String.format(Locale.ROOT, "%,d", values[i]));
        }
        return String.join(", ", s);
    }

    private static void print(Prediction p, PrintWriter out) {
        out.printf(Locale.ROOT, "at %,d: peak allocated %s, peak reserved %s (%,d events replayed in %.1f ms, settings '%s')%n",
                p.value(), FormatSize.formatSize(p.peakAllocated()), FormatSize.formatSize(p.peakReserved()), p.events(),
                p.seconds() * 1e3, p.conf().isBlank() ? "default" : p.conf());
        out.printf(Locale.ROOT, "fragmentation at the allocated peak: %s reserved but unallocated, largest free block %s (%.1f%% external)%n",
                FormatSize.formatSize(p.atPeak().reservedUnallocated()), FormatSize.formatSize(p.atPeak().largestFreeBlock()),
                100 * p.atPeak().externalFragmentation());
        if (p.capacitySource().equals("unbounded")) {
            out.println("capacity: unbounded (give --capacity for a fit/out-of-memory verdict)");
        } else if (p.fits()) {
            out.printf(Locale.ROOT, "fits on %s%n", FormatSize.formatSize(p.capacity()));
        } else {
            out.printf(Locale.ROOT, "OUT OF MEMORY on %s: allocation of %s (event %,d) at%n", FormatSize.formatSize(p.capacity()),
                    FormatSize.formatSize(p.oomSize()), p.oomEvent());
            for (Frame f : p.oomFrames().subList(0, Math.min(12, p.oomFrames().size()))) {
                out.printf(Locale.ROOT, "    %s (%s:%d)%n", f.name(), f.filename(), f.line());
            }
        }
    }

    private static Map<String, Object> map(Prediction p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("value", p.value());
        m.put("peak_allocated_bytes", p.peakAllocated());
        m.put("peak_reserved_bytes", p.peakReserved());
        m.put("reserved_unallocated_at_peak_bytes", p.atPeak().reservedUnallocated());
        m.put("largest_free_block_at_peak_bytes", p.atPeak().largestFreeBlock());
        m.put("capacity", p.capacitySource().equals("unbounded") ? null : p.capacity());
        m.put("conf", p.conf());
        m.put("fits", p.fits());
        if (!p.fits()) {
            m.put("oom_event", p.oomEvent());
            m.put("oom_size", p.oomSize());
            m.put("oom_frames", p.oomFrames().stream().map(f -> Map.of("name", f.name(), "filename", f.filename(), "line", f.line())).toList());
        }
        m.put("events", p.events());
        m.put("seconds", p.seconds());
        return m;
    }
}
