package io.vram4j.cli;

import io.vram4j.data.CharVocabulary;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.tensor.SDPBackend;
import io.vram4j.train.ModelKind;
import io.vram4j.train.OptimizerKind;
import io.vram4j.train.TechniqueBenchmark;
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
 * {@code vram4j bench attention}: the Transformer's training step with fused attention (FlashAttention's method,
 * {@link SDPBackend#FLASH_ATTENTION}) and with the unfused ops ({@link SDPBackend#MATH}) at several context lengths:
 * peak allocated, peak reserved, activations at the peak and the median step time, with the target (the
 * fused peak at least 30% below the unfused one at context 1024) checked. On {@code sim} nothing is computed and the
 * step times mean nothing; the bytes are exact.
 */
@Command(name = "attention", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Measure a Transformer training step with fused attention (flash) and the unfused ops (math) at several "
                + "context lengths: peak allocated and reserved bytes, activations, step time; check the target at context 1024.")
final class BenchAttentionCommand implements Callable<Integer> {
    @Option(names = "--contexts", paramLabel = "N,N", split = ",", defaultValue = "256,512,1024",
            description = "context lengths (default: ${DEFAULT-VALUE})")
    int[] contexts;

    @Option(names = "--steps", paramLabel = "N", defaultValue = "3", description = "timed optimizer steps per row (default: ${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--device", paramLabel = "SPEC", defaultValue = "host", description = "host[:SIZE] or sim:SIZE|PRESET "
            + "(sim: exact bytes, no computation, so any size; default: ${DEFAULT-VALUE})")
    String device;

    @Option(names = "--layers", paramLabel = "N", defaultValue = "4", description = "blocks (default: ${DEFAULT-VALUE})")
    int layers;

    @Option(names = "--hidden", paramLabel = "N", defaultValue = "128", description = "model width (default: ${DEFAULT-VALUE})")
    int hidden;

    @Option(names = "--heads", paramLabel = "N", defaultValue = "4", description = "attention heads (default: ${DEFAULT-VALUE})")
    int heads;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "8", description = "sequences per step (default: ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--data", paramLabel = "FILE", description = "text whose characters are the vocabulary (default: as train)")
    Path data;

    @Mixin
    JsonOutput json;

    /** The context of the target. */
    static final int TARGET_CONTEXT = 1024;

    @Override
    public Integer call() {
        if (steps < 1) {
            throw new UserException("--steps must be at least 1, got " + steps);
        }
        if (contexts.length == 0) {
            throw new UserException("--contexts: give at least one context length");
        }
        List<TrainOptions> bases = new ArrayList<>();
        try {
            for (int t : contexts) {
                bases.add(TrainOptions.builder().model(ModelKind.TRANSFORMER).hidden(hidden).layers(layers).heads(heads)
                        .blockSize(t).batchSize(batchSize).epochs(1).lr(1e-3).optimizer(OptimizerKind.ADAMW).schedule("constant")
                        .weightDecay(0.01).prefetch(0).historySteps(0).build());
            }
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage().replace("--block-size", "--contexts"), e);   // the contexts are the block sizes
        }
        PrintWriter report = json.report();
        CharVocabulary vocab = FindBatchSizeCommand.vocabulary(data);
        TrainOptions first = bases.getFirst();
        report.printf(Locale.ROOT, "transformer: %s; %d timed steps on %s%n", first.describe(first.blockSize() + 1, vocab.size())
                .replaceAll(", context \\d+", "").replaceAll(", \\d+ epochs?, seed \\d+", ""), steps, device);
        report.flush();
        TechniqueBenchmark.measure(device, first, vocab, 0, 0, 1); // warms up the JIT; not reported
        String fmt = "  %7s %-6s %14s %14s %14s %10s %9s%n";
        report.printf(Locale.ROOT, fmt, "context", "attn", "peak allocated", "peak reserved", "peak activ.", "step", "peak cut");
        List<Map<String, Object>> rows = new ArrayList<>();
        Double targetCut = null;
        for (TrainOptions base : bases) {
            TechniqueBenchmark.Measurement math = TechniqueBenchmark.measure(device, base.withAttention(SDPBackend.MATH), vocab, 0, 0, steps);
            TechniqueBenchmark.Measurement flash = TechniqueBenchmark.measure(device, base, vocab, 0, 0, steps);
            double cut = 1 - (double) flash.peakAllocated() / math.peakAllocated();
            if (base.blockSize() == TARGET_CONTEXT) {
                targetCut = cut;
            }
            for (TechniqueBenchmark.Measurement x : List.of(math, flash)) {
                boolean fused = x == flash;
                report.printf(Locale.ROOT, fmt, base.blockSize(), fused ? "flash" : "math", FormatSize.formatSize(x.peakAllocated()),
                        FormatSize.formatSize(x.peakReserved()), FormatSize.formatSize(x.activations()),
                        String.format(Locale.ROOT, "%.3f s", x.medianSeconds()),
                        fused ? String.format(Locale.ROOT, "-%.1f%%", 100 * cut) : "");
                Map<String, Object> r = new LinkedHashMap<>();
                r.put("context", base.blockSize());
                r.put("attention", fused ? "flash" : "math");
                r.put("peak_allocated_bytes", x.peakAllocated());
                r.put("peak_reserved_bytes", x.peakReserved());
                r.put("peak_activation_bytes", x.activations());
                r.put("step_seconds_median", x.medianSeconds());
                r.put("step_seconds", x.stepSeconds());
                if (fused) {
                    r.put("peak_allocated_cut", cut);
                }
                rows.add(r);
            }
            report.flush();
        }
        if (targetCut != null) {
            BenchTechniquesCommand.target(report, "fused attention's peak allocated >= 30% below the unfused path at context "
                    + TARGET_CONTEXT, targetCut >= 0.3, String.format(Locale.ROOT, "-%.1f%%", 100 * targetCut));
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("device", device);
        result.put("steps", steps);
        result.put("description", first.describe(first.blockSize() + 1, vocab.size()));
        result.put("rows", rows);
        if (targetCut != null) {
            result.put("target_context", TARGET_CONTEXT);
            result.put("target_peak_allocated_cut", targetCut);
        }
        json.print(result);
        return 0;
    }
}
