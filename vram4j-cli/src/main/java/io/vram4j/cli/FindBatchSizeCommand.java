package io.vram4j.cli;

import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharVocabulary;
import io.vram4j.train.BatchSizeFinder;
import io.vram4j.train.BatchSizeReport;
import io.vram4j.train.BatchSizeSearch;
import io.vram4j.train.ModelKind;
import io.vram4j.train.OptimizerKind;
import io.vram4j.train.Precision;
import io.vram4j.train.TrainOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code vram4j find-batch-size}: the largest training batch that fits on a device, for the baseline,
 * activation checkpointing, mixed precision and both (see {@link BatchSizeFinder}).
 */
@Command(name = "find-batch-size", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Find the largest batch that trains without running out of memory (doubling, then binary search; "
                + "the cache is emptied between tries), for the baseline, checkpointing, mixed precision and both.",
                "On sim it is a dry run (ops allocate but compute nothing, milliseconds per try): sim:SIZE stands for host:SIZE, "
                        + "sim:PRESET (e.g. sim:H100-80GB) and sim:TOTAL:ccMAJOR.MINOR for a CUDA GPU (its kernels' workspace "
                        + "and temporaries included); on host:SIZE and cuda[:N] it runs for real.",
                "To compare a cuda search with its dry run exactly, give both the same --memory-fraction: the cuda run "
                        + "prints the sim spec to use."})
final class FindBatchSizeCommand implements Callable<Integer> {
    @Option(names = "--model", paramLabel = "NAME", defaultValue = "transformer", description = "mlp or transformer (default: ${DEFAULT-VALUE})")
    String model;

    @Mixin
    ModelShapeOptions shape;

    @Option(names = "--optimizer", paramLabel = "NAME", description = "sgd or adamw (default: sgd for mlp, adamw for transformer)")
    String optimizer;

    @Option(names = "--checkpoint", paramLabel = "SEGMENTS", description = "checkpoint segments of the checkpointing rows "
            + "(default: one per transformer block; about sqrt(modules) for the mlp)")
    Integer checkpoint;

    @Option(names = "--amp", paramLabel = "DTYPE", defaultValue = "bf16", description = "dtype of the mixed-precision rows: bf16 or fp16 (default: ${DEFAULT-VALUE})")
    String amp;

    @Option(names = "--device", paramLabel = "SPEC", defaultValue = "sim:1GiB", description = "host[:SIZE] or cuda[:N] (real), sim:SIZE|PRESET|TOTAL:ccX.Y (dry run) "
            + "(default: ${DEFAULT-VALUE})")
    String device;

    @Option(names = "--max-batch", paramLabel = "N", defaultValue = "65536", description = "largest batch to try (default: ${DEFAULT-VALUE})")
    int maxBatch;

    @Mixin
    AllocatorOptions allocator;

    @Option(names = "--data", paramLabel = "FILE", description = "transformer: the text whose characters are the vocabulary (default: as train)")
    Path data;

    @Mixin
    JsonOutput json;

    @Override
    public Integer call() {
        TrainOptions base = baseOptions();
        Precision precision = mixedPrecision(amp);
        int segments = checkpoint != null ? checkpoint : BatchSizeSearch.defaultSegments(base);
        if (segments < 1) {
            throw new UserException("--checkpoint: the number of segments must be at least 1, got " + segments);
        }
        List<TrainOptions> settings = BatchSizeFinder.standardSettings(base, segments, precision);
        CharVocabulary vocab = base.isTransformer() ? vocabulary(data) : null;
        List<BatchSizeFinder.Result> results = BatchSizeSearch.run(device, allocator.config(), base, settings, vocab, maxBatch, 0,
                String.format(Locale.ROOT, "--max-batch %,d", maxBatch), json.report());
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("model", base.describe(base.isTransformer() ? base.blockSize() + 1 : BatchSizeSearch.IMAGE_FEATURES, vocab != null ? vocab.size() : 10));
        m.put("device", device);
        double fraction = allocator.config().perProcessMemoryFraction();
        if (!Double.isNaN(fraction)) {
            m.put("memory_fraction", fraction);
        }
        m.put("results", BatchSizeReport.json(results));
        json.print(m);
        return 0;
    }

    /**
     * @param amp {@code bf16} or {@code fp16}, in any case
     * @return the precision of the mixed-precision rows
     * @throws UserException naming {@code --amp} for anything else (off included: the rows need a 16-bit type)
     */
    static Precision mixedPrecision(String amp) {
        Precision p = null;
        try {
            p = Precision.parse(amp);
        } catch (IllegalArgumentException e) {
            // reported below, with the value as given
        }
        if (p == null || p == Precision.OFF) {
            throw new UserException("--amp: unknown precision '" + amp + "'; expected bf16 or fp16");
        }
        return p;
    }

    static CharVocabulary vocabulary(Path data) {
        try {
            return CharCorpus.resolve(data).vocabulary();
        } catch (IllegalArgumentException e) {
            throw new UserException("--data: " + e.getMessage(), e);
        }
    }

    private TrainOptions baseOptions() {
        try {
            TrainOptions d = TrainOptions.defaults(ModelKind.parse(model));
            OptimizerKind opt = optimizer != null ? OptimizerKind.parse(optimizer) : d.optimizer();
            return shape.apply(d).lr(opt.defaultLr()).optimizer(opt).weightDecay(opt.defaultWeightDecay()).testLimit(0).prefetch(0)
                    .historySteps(0).build();
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
    }
}
