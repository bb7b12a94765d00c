package io.vram4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharVocabulary;
import io.vram4j.train.BatchSizeFinder;
import io.vram4j.train.BatchSizeReport;
import io.vram4j.train.BatchSizeSearch;
import io.vram4j.train.ModelKind;
import io.vram4j.train.OptimizerKind;
import io.vram4j.train.Precision;
import io.vram4j.train.TrainOptions;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
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
                "On sim:SIZE it is a dry run (ops allocate but compute nothing, milliseconds per try); on host:SIZE it runs for real."})
final class FindBatchSizeCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--model", paramLabel = "NAME", defaultValue = "transformer", description = "mlp or transformer (default: ${DEFAULT-VALUE})")
    String model;

    @Option(names = "--hidden", paramLabel = "N", description = "mlp: hidden width (default: " + TrainOptions.DEFAULT_HIDDEN
            + "); transformer: model width (default: " + TrainOptions.LM_HIDDEN + ")")
    Integer hidden;

    @Option(names = "--layers", paramLabel = "N", description = "mlp: hidden layers (default: " + TrainOptions.DEFAULT_LAYERS
            + "); transformer: blocks (default: " + TrainOptions.LM_LAYERS + ")")
    Integer layers;

    @Option(names = "--heads", paramLabel = "N", defaultValue = "" + TrainOptions.LM_HEADS, description = "transformer: attention heads (default: ${DEFAULT-VALUE})")
    int heads;

    @Option(names = "--block-size", paramLabel = "N", defaultValue = "" + TrainOptions.LM_BLOCK_SIZE, description = "transformer: context length (default: ${DEFAULT-VALUE})")
    int blockSize;

    @Option(names = "--optimizer", paramLabel = "NAME", description = "sgd or adamw (default: sgd for mlp, adamw for transformer)")
    String optimizer;

    @Option(names = "--checkpoint", paramLabel = "SEGMENTS", description = "checkpoint segments of the checkpointing rows "
            + "(default: one per transformer block; about sqrt(modules) for the mlp)")
    Integer checkpoint;

    @Option(names = "--amp", paramLabel = "DTYPE", defaultValue = "bf16", description = "dtype of the mixed-precision rows: bf16 or fp16 (default: ${DEFAULT-VALUE})")
    String amp;

    @Option(names = "--device", paramLabel = "SPEC", defaultValue = "sim:1GiB", description = "host[:SIZE] (real) or sim:SIZE|PRESET (dry run) (default: ${DEFAULT-VALUE})")
    String device;

    @Option(names = "--max-batch", paramLabel = "N", defaultValue = "65536", description = "largest batch to try (default: ${DEFAULT-VALUE})")
    int maxBatch;

    @Option(names = "--alloc-conf", paramLabel = "CONF", defaultValue = "", description = "allocator settings in PYTORCH_CUDA_ALLOC_CONF format")
    String allocConf;

    @Option(names = "--data", paramLabel = "FILE", description = "transformer: the text whose characters are the vocabulary (default: as train)")
    Path data;

    @Option(names = "--json", description = "print the searches as JSON on stdout")
    boolean json;

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
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter report = json ? spec.commandLine().getErr() : out;
        List<BatchSizeFinder.Result> results = BatchSizeSearch.run(device, allocatorConfig(allocConf), base, settings, vocab, maxBatch, 0,
                String.format(Locale.ROOT, "--max-batch %,d", maxBatch), report);
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("model", base.describe(base.isTransformer() ? base.blockSize() + 1 : BatchSizeSearch.IMAGE_FEATURES, vocab != null ? vocab.size() : 10));
            m.put("device", device);
            m.put("results", BatchSizeReport.json(results));
            try {
                out.println(new ObjectMapper().writeValueAsString(m));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            out.flush();
        }
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

    /**
     * @param allocConf the {@code --alloc-conf} value (blank: none)
     * @return the environment's allocator settings with {@code allocConf} applied
     * @throws UserException naming {@code --alloc-conf} if either is invalid
     */
    static AllocatorConfig allocatorConfig(String allocConf) {
        try {
            AllocatorConfig config = AllocatorConfig.fromEnvironment(System.getenv());
            return allocConf.isBlank() ? config : config.parse(allocConf);
        } catch (IllegalArgumentException e) {
            throw new UserException("--alloc-conf: " + e.getMessage(), e);
        }
    }

    private TrainOptions baseOptions() {
        try {
            TrainOptions d = TrainOptions.defaults(ModelKind.parse(model));
            OptimizerKind opt = optimizer != null ? OptimizerKind.parse(optimizer) : d.optimizer();
            return d.toBuilder().hidden(hidden != null ? hidden : d.hidden()).layers(layers != null ? layers : d.layers())
                    .lr(opt.defaultLr()).optimizer(opt).weightDecay(opt.defaultWeightDecay()).testLimit(0).prefetch(0)
                    .historySteps(0).blockSize(blockSize).heads(heads).build();
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
    }
}
