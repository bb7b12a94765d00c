package io.vram4j.cli;

import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharDataset;
import io.vram4j.data.CharVocabulary;
import io.vram4j.train.TechniqueBenchmark;
import io.vram4j.train.ModelKind;
import io.vram4j.train.Precision;
import io.vram4j.train.TrainOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code vram4j bench loss-curves}: the Transformer trained with float32, bf16 autocast and fp16 autocast with a
 * GradScaler from the same initialisation on the same batches; the mean training loss of every interval.
 */
@Command(name = "loss-curves", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Train the character-level Transformer in float32, bf16 and fp16 + GradScaler from the same start on the same "
                + "batches and print the training loss at intervals.")
final class BenchLossCurvesCommand implements Callable<Integer> {
    @Option(names = "--steps", paramLabel = "N", defaultValue = "300", description = "optimizer steps (default: ${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--every", paramLabel = "N", defaultValue = "25", description = "steps per table row (default: ${DEFAULT-VALUE})")
    int every;

    @Option(names = "--device", paramLabel = "SPEC", defaultValue = "host", description = "device (default: ${DEFAULT-VALUE})")
    String device;

    @Option(names = "--layers", paramLabel = "N", defaultValue = "" + TrainOptions.LM_LAYERS, description = "blocks (default: ${DEFAULT-VALUE})")
    int layers;

    @Option(names = "--hidden", paramLabel = "N", defaultValue = "" + TrainOptions.LM_HIDDEN, description = "width (default: ${DEFAULT-VALUE})")
    int hidden;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "" + TrainOptions.LM_BATCH_SIZE, description = "batch (default: ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--data", paramLabel = "FILE", description = "UTF-8 text (default: as train)")
    Path data;

    @Mixin
    JsonOutput json;

    @Override
    public Integer call() {
        if (steps < 1 || every < 1 || every > steps) {
            throw new UserException("--steps and --every must be at least 1 and --every at most --steps, got " + steps + " and " + every);
        }
        TrainOptions base;
        try {
            base = TrainOptions.defaults(ModelKind.TRANSFORMER).withHidden(hidden).withLayers(layers).withBatchSize(batchSize)
                    .withHistorySteps(0);
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
        CharCorpus corpus;
        try {
            corpus = CharCorpus.resolve(data);
        } catch (IllegalArgumentException e) {
            throw new UserException("--data: " + e.getMessage(), e);
        }
        CharVocabulary vocab = corpus.vocabulary();
        CharDataset train = new CharDataset(corpus.trainText(), vocab, base.blockSize(), base.blockSize(), "training text");
        PrintWriter report = json.report();
        report.printf(Locale.ROOT, "loss curves on %s: %s, %d steps%n", corpus.describe(),
                base.describe(base.blockSize() + 1, vocab.size()).replaceAll(", \\d+ epochs?", ""), steps);
        report.flush();
        Map<String, double[]> curves = new LinkedHashMap<>();
        for (Precision amp : Precision.values()) {
            long t0 = System.nanoTime();
            curves.put(amp.toString(), TechniqueBenchmark.lossCurve(device, base.withAmp(amp), vocab, train, steps));
            report.printf(Locale.ROOT, "  %s: %.1f s%n", amp == Precision.OFF ? "float32" : amp, (System.nanoTime() - t0) / 1e9);
            report.flush();
        }
        report.printf(Locale.ROOT, "  %-11s %9s %9s %9s %11s %11s%n", "steps", "float32", "bf16", "fp16", "bf16-fp32", "fp16-fp32");
        for (int from = 0; from < steps; from += every) {
            int to = Math.min(steps, from + every);
            double f = mean(curves.get("off"), from, to);
            double b = mean(curves.get("bf16"), from, to);
            double h = mean(curves.get("fp16"), from, to);
            report.printf(Locale.ROOT, "  %4d-%-6d %9.4f %9.4f %9.4f %+11.4f %+11.4f%n", from + 1, to, f, b, h, b - f, h - f);
        }
        report.flush();
        json.print(Map.of("steps", steps, "float32", curves.get("off"),
                        "bf16", curves.get("bf16"), "fp16", curves.get("fp16")));
        return 0;
    }

    /** Mean of the finite values in {@code [from, to)}. */
    private static double mean(double[] v, int from, int to) {
        double s = 0;
        int n = 0;
        for (int i = from; i < to; i++) {
            if (Double.isFinite(v[i])) {
                s += v[i];
                n++;
            }
        }
        return n == 0 ? Double.NaN : s / n;
    }
}
