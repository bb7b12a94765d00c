package io.vram4j.cli;

import io.vram4j.data.CharVocabulary;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.tensor.SDPBackend;
import io.vram4j.train.BatchSizeFinder;
import io.vram4j.train.BatchSizeReport;
import io.vram4j.train.BatchSizeSearch;
import io.vram4j.train.TechniqueBenchmark;
import io.vram4j.train.ModelKind;
import io.vram4j.train.OptimizerKind;
import io.vram4j.train.Precision;
import io.vram4j.train.TrainOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code vram4j bench techniques}: peak allocated, peak reserved, activations at the peak and step time of a deep
 * MLP and a 12-block Transformer for the baseline, checkpointing, bf16, fp16, checkpointing + bf16 and
 * accumulation ×4 at a quarter of the batch (and, for the Transformer, the unfused attention path beside the fused one of
 * every other row), with the targets checked, and the batch-size finder's
 * largest batches (dry run).
 */
@Command(name = "techniques", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Measure what checkpointing, bf16, fp16, checkpointing + bf16 and accumulation x4 save and cost on a deep MLP "
                + "and a Transformer where activations dominate; check the targets; run the batch-size finder (dry run).")
final class BenchTechniquesCommand implements Callable<Integer> {
    @Option(names = "--model", paramLabel = "NAME", defaultValue = "both", description = "mlp, transformer or both (default: ${DEFAULT-VALUE})")
    String model;

    @Option(names = "--steps", paramLabel = "N", defaultValue = "3", description = "timed optimizer steps per setting (default: ${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--device", paramLabel = "SPEC", defaultValue = "host", description = "device to train on (default: ${DEFAULT-VALUE})")
    String device;

    @Option(names = "--layers", paramLabel = "N", defaultValue = "12", description = "transformer blocks (default: ${DEFAULT-VALUE})")
    int layers;

    @Option(names = "--hidden", paramLabel = "N", defaultValue = "128", description = "transformer width (default: ${DEFAULT-VALUE})")
    int hidden;

    @Option(names = "--heads", paramLabel = "N", defaultValue = "4", description = "transformer heads (default: ${DEFAULT-VALUE})")
    int heads;

    @Option(names = "--block-size", paramLabel = "N", defaultValue = "256", description = "transformer context length (default: ${DEFAULT-VALUE})")
    int blockSize;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "8", description = "transformer batch (default: ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--mlp-hidden", paramLabel = "N", defaultValue = "256", description = "MLP width (default: ${DEFAULT-VALUE})")
    int mlpHidden;

    @Option(names = "--mlp-layers", paramLabel = "N", defaultValue = "16", description = "MLP hidden layers (default: ${DEFAULT-VALUE})")
    int mlpLayers;

    @Option(names = "--mlp-batch", paramLabel = "N", defaultValue = "4096", description = "MLP batch (default: ${DEFAULT-VALUE})")
    int mlpBatch;

    @Option(names = "--finder-device", paramLabel = "SPEC", defaultValue = "sim:2GiB", description = "device of the batch-size finder's dry run; "
            + "'none' to skip (default: ${DEFAULT-VALUE})")
    String finderDevice;

    @Option(names = "--data", paramLabel = "FILE", description = "text whose characters are the transformer's vocabulary (default: as train)")
    Path data;

    @Mixin
    JsonOutput json;

    @Override
    public Integer call() {
        if (steps < 1) {
            throw new UserException("--steps must be at least 1, got " + steps);
        }
        String m = model.toLowerCase(Locale.ROOT);
        if (!m.equals("mlp") && !m.equals("transformer") && !m.equals("both")) {
            throw new UserException("--model: unknown model '" + model + "'; expected mlp, transformer or both");
        }
        TrainOptions lm;
        TrainOptions mlp;
        try {
            lm = TrainOptions.builder().model(ModelKind.TRANSFORMER).hidden(hidden).layers(layers).epochs(1).batchSize(batchSize)
                    .lr(1e-3).optimizer(OptimizerKind.ADAMW).schedule("constant").weightDecay(0.01).prefetch(0).historySteps(0)
                    .blockSize(blockSize).heads(heads).build();
            mlp = TrainOptions.builder().model(ModelKind.MLP).hidden(mlpHidden).layers(mlpLayers).epochs(1).batchSize(mlpBatch)
                    .lr(0.05).optimizer(OptimizerKind.SGD).schedule("constant").prefetch(0).historySteps(0).build();
            if (batchSize % 4 != 0 || mlpBatch % 4 != 0) {
                throw new IllegalArgumentException("--batch-size and --mlp-batch must be multiples of 4 (accumulation x4 at a quarter)");
            }
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
        PrintWriter report = json.report();
        CharVocabulary vocab = FindBatchSizeCommand.vocabulary(data);
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("device", device);
        result.put("steps", steps);
        List<Map<String, Object>> models = new ArrayList<>();
        if (!m.equals("transformer")) {
            models.add(run("mlp", mlp, null, BatchSizeSearch.defaultSegments(mlp), report));
        }
        if (!m.equals("mlp")) {
            models.add(run("transformer", lm, vocab, layers, report));
        }
        result.put("models", models);
        if (!finderDevice.equalsIgnoreCase("none") && !m.equals("mlp")) {
            report.println();
            List<BatchSizeFinder.Result> found = BatchSizeSearch.run(finderDevice, AllocatorOptions.config(""), lm,
                    BatchSizeFinder.standardSettings(lm, layers, Precision.BF16), vocab, 1 << 16, 0, "65,536", report);
            double ratio = found.getFirst().largest() == 0 ? Double.NaN : (double) found.get(3).largest() / found.getFirst().largest();
            target(report, "batch-size finder: checkpointing + bf16 fits >= 3x the baseline's batch", ratio >= 3,
                    String.format(Locale.ROOT, "%.2fx (%d vs %d)", ratio, found.get(3).largest(), found.getFirst().largest()));
            result.put("batch_size_finder", Map.of("device", finderDevice, "results", BatchSizeReport.json(found), "ratio", ratio));
        }
        json.print(result);
        return 0;
    }

    private Map<String, Object> run(String name, TrainOptions base, CharVocabulary vocab, int segments, PrintWriter report) {
        List<TrainOptions> settings = new ArrayList<>(List.of(base, base.withCheckpoint(segments), base.withAmp(Precision.BF16),
                base.withAmp(Precision.FP16), base.withCheckpoint(segments).withAmp(Precision.BF16),
                base.withBatchSize(base.batchSize() / 4).withAccumulate(4)));
        if (base.isTransformer()) {   // the baseline's attention is fused: the unfused path for comparison
            settings.add(base.withAttention(SDPBackend.MATH));
        }
        report.printf(Locale.ROOT, "%s: %s; %d timed steps on %s%n", name,
                base.describe(base.isTransformer() ? base.blockSize() + 1 : 784, vocab != null ? vocab.size() : 10)
                        .replaceAll(", \\d+ epochs?, seed \\d+", ""), steps, device);
        report.flush();
        TechniqueBenchmark.measure(device, base, vocab, 784, 10, 1); // warms up the JIT; not reported
        List<TechniqueBenchmark.Measurement> ms = new ArrayList<>();
        for (TrainOptions o : settings) {
            ms.add(TechniqueBenchmark.measure(device, o, vocab, 784, 10, steps));
        }
        String fmt = "  %-38s %6s %14s %14s %14s %10s %8s%n";
        report.printf(Locale.ROOT, fmt, "technique", "batch", "peak allocated", "peak reserved", "peak activ.", "step", "vs base");
        TechniqueBenchmark.Measurement b = ms.getFirst();
        List<Map<String, Object>> rows = new ArrayList<>();
        for (TechniqueBenchmark.Measurement x : ms) {
            String batch = x.options().accumulate() > 1 ? x.options().batchSize() + "x" + x.options().accumulate()
                    : Integer.toString(x.options().batchSize());
            report.printf(Locale.ROOT, fmt, x.technique(), batch, FormatSize.formatSize(x.peakAllocated()),
                    FormatSize.formatSize(x.peakReserved()), FormatSize.formatSize(x.activations()),
                    String.format(Locale.ROOT, "%.3f s", x.medianSeconds()),
                    String.format(Locale.ROOT, "%.2fx", x.medianSeconds() / b.medianSeconds()));
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("technique", x.technique());
            r.put("options", options(x.options()));
            r.put("peak_allocated_bytes", x.peakAllocated());
            r.put("peak_reserved_bytes", x.peakReserved());
            r.put("peak_activation_bytes", x.activations());
            r.put("profile", x.profile().asMap());
            r.put("peak_reached_in", x.profile().where());
            r.put("step_seconds_median", x.medianSeconds());
            r.put("step_seconds", x.stepSeconds());
            if (x.skippedSteps() >= 0) {
                r.put("skipped_steps", x.skippedSteps());
            }
            rows.add(r);
        }
        double actCut = 1 - (double) ms.get(1).activations() / b.activations();
        double timeUp = ms.get(1).medianSeconds() / b.medianSeconds() - 1;
        target(report, "checkpointing cuts peak activation memory >= 60% for <= 40% more step time", actCut >= 0.6 && timeUp <= 0.4,
                String.format(Locale.ROOT, "-%.0f%% activations, %+.0f%% step time", 100 * actCut, 100 * timeUp));
        double bfCut = 1 - (double) ms.get(2).peakAllocated() / b.peakAllocated();
        if (base.isTransformer()) {
            target(report, "bf16 autocast cuts peak allocated >= 40%", bfCut >= 0.4, String.format(Locale.ROOT, "-%.0f%%", 100 * bfCut));
        } else {
            report.printf(Locale.ROOT, "  (bf16 autocast changes peak allocated by %+.0f%%)%n", -100 * bfCut);
        }
        double accRatio = (double) b.activations() / ms.get(5).activations();
        target(report, "accumulation x4 cuts activation memory about 4x", accRatio >= 3.5 && accRatio <= 4.5,
                String.format(Locale.ROOT, "%.2fx less", accRatio));
        report.println();
        report.flush();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("model", name);
        out.put("description", base.describe(base.isTransformer() ? base.blockSize() + 1 : 784, vocab != null ? vocab.size() : 10));
        out.put("config", config(base, vocab, b.parameters()));
        out.put("rows", rows);
        out.put("checkpoint_activation_cut", actCut);
        out.put("checkpoint_time_increase", timeUp);
        out.put("bf16_peak_allocated_cut", bfCut);
        out.put("accumulation_activation_ratio", accRatio);
        return out;
    }

    /**
     * The model as data, enough to build the same one elsewhere ({@code gpu/techniques_pytorch.py} does): kind,
     * parameter count, the MLP's widths or the Transformer's shape, and the optimizer with its settings.
     */
    static Map<String, Object> config(TrainOptions o, CharVocabulary vocab, long parameters) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("kind", o.isTransformer() ? "transformer" : "mlp");
        c.put("parameters", parameters);
        if (o.isTransformer()) {
            c.put("vocabulary", vocab.size());
            c.put("block_size", o.blockSize());
            c.put("layers", o.layers());
            c.put("hidden", o.hidden());
            c.put("heads", o.heads());
        } else {
            c.put("widths", o.widths(784, 10));
        }
        c.put("optimizer", o.optimizer().toString());
        c.put("lr", o.lr());
        c.put("momentum", o.optimizer() == OptimizerKind.SGD ? o.momentum() : 0.0);
        c.put("weight_decay", o.weightDecay());
        return c;
    }

    /** A row's setting as data: batch, accumulation, checkpoint segments, autocast dtype, attention backend. */
    static Map<String, Object> options(TrainOptions o) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("batch_size", o.batchSize());
        m.put("accumulate", o.accumulate());
        m.put("checkpoint", o.checkpoint());
        m.put("amp", o.amp().toString());
        m.put("attention", o.attention() == SDPBackend.MATH ? "math" : "flash");
        m.put("micro_batch", o.microBatch());
        return m;
    }

    static void target(PrintWriter report, String what, boolean met, String measured) {
        report.printf(Locale.ROOT, "  target %-72s %-6s %s%n", what + ":", met ? "MET" : "MISSED", measured);
    }
}
