package io.vram4j.cli;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.data.DataLoader;
import io.vram4j.train.BatchSizeSearch;
import io.vram4j.train.ModelKind;
import io.vram4j.train.OptimizerKind;
import io.vram4j.train.Precision;
import io.vram4j.train.TrainJob;
import io.vram4j.train.TrainOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code vram4j train}: trains an MLP on Fashion-MNIST on a device through the caching allocator and shows
 * where the memory went: a progress bar per epoch (loss, accuracy, samples/s, allocated/reserved), a memory
 * line after each epoch, then the test accuracy and {@code memory_summary}, and a run folder with
 * {@code memory_summary.txt}, {@code memory_stats.json}, {@code memory_snapshot.pickle} (the first steps'
 * trace, for PyTorch's memory_viz), {@code memory_timeline.html} (the same trace as {@code vram4j viz} draws it)
 * and {@code result.json}. The job itself is {@link TrainJob}; this command parses the options into
 * {@link TrainOptions}, runs it with a {@link TrainProgress} and prints the JSON summary for {@code --json}.
 */
@Command(name = "train", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Train a model through the caching allocator and report where the memory went: an MLP on Fashion-MNIST "
                + "(--model mlp, the default) or a character-level Transformer language model on English text (--model transformer).",
                "MLP data: --data DIR, else /usr/share/datasets/fashion-mnist (apt-get install dataset-fashion-mnist), "
                        + "else the bundled subset (10,000 train / 2,000 test images).",
                "Transformer data: --data FILE (UTF-8 text, .gz too), else Debian's fortune cookies (apt-get install fortunes), "
                        + "else the bundled public-domain Jargon File excerpt (400,616 characters)."})
final class TrainCommand implements Callable<Integer> {
    @Option(names = "--model", paramLabel = "NAME", defaultValue = "mlp", description = "mlp or transformer (default: ${DEFAULT-VALUE})")
    String model;

    @Mixin
    ModelShapeOptions shape;

    @Option(names = "--epochs", paramLabel = "N", description = "passes over the training set (default: " + TrainOptions.DEFAULT_EPOCHS + " for mlp, 1 for transformer)")
    Integer epochs;

    @Option(names = "--batch-size", paramLabel = "N", description = "samples per step (default: " + TrainOptions.DEFAULT_BATCH_SIZE
            + " for mlp, " + TrainOptions.LM_BATCH_SIZE + " for transformer)")
    Integer batchSize;

    @Option(names = "--checkpoint", paramLabel = "SEGMENTS", arity = "0..1", fallbackValue = "auto",
            description = "activation checkpointing: recompute activations in backward; the blocks (mlp: layers) run as checkpoint_sequential "
                    + "in SEGMENTS segments, the last one not checkpointed (without a value: one segment per transformer block, about sqrt(modules) for the mlp)")
    String checkpoint;

    @Option(names = "--amp", paramLabel = "DTYPE", description = "mixed precision: bf16, or fp16 with a dynamic GradScaler (reports skipped steps)")
    String amp;

    @Option(names = "--accumulate", paramLabel = "N", defaultValue = "1", description = "gradient accumulation: one optimizer step every N batches (default: ${DEFAULT-VALUE})")
    int accumulate;

    @Option(names = "--micro-batch", paramLabel = "N", defaultValue = "0", description = "split each batch into micro-batches of N samples (default: off)")
    int microBatch;

    @Option(names = "--find-batch-size", description = "first search the largest batch that fits on --device (baseline, checkpointing, "
            + "mixed precision, both, and these settings), then train with the largest for these settings")
    boolean findBatchSize;

    @Option(names = "--profile-memory", description = "split the peak memory of the training steps (evaluation left out) into parameters, gradients, optimizer state, activations "
            + "and temporaries, name the module that reached it, and list the live tensors by allocation site at the end")
    boolean profileMemory;

    @Option(names = "--sample", paramLabel = "N", defaultValue = "200", description = "transformer: characters to generate at the end (default: ${DEFAULT-VALUE}; 0 for none)")
    int sampleChars;

    @Option(names = "--lr", paramLabel = "RATE", description = "learning rate (default: 0.05 for sgd, 0.001 for adamw)")
    Double lr;

    @Option(names = "--optimizer", paramLabel = "NAME", description = "sgd (with momentum) or adamw (default: sgd for mlp, adamw for transformer)")
    String optimizer;

    @Option(names = "--schedule", paramLabel = "NAME", defaultValue = "cosine", description = "learning-rate schedule: cosine (to 0 over the run) or constant (default: ${DEFAULT-VALUE})")
    String schedule;

    @Option(names = "--momentum", paramLabel = "M", defaultValue = "0.9", description = "SGD momentum (default: ${DEFAULT-VALUE})")
    double momentum;

    @Option(names = "--weight-decay", paramLabel = "WD", description = "weight decay (default: 0 for sgd, 0.01 for adamw)")
    Double weightDecay;

    @Option(names = "--device", paramLabel = "SPEC", defaultValue = "host", description = "host[:SIZE], sim:SIZE|PRESET|TOTAL:ccX.Y (dry run) or cuda[:N] "
            + "(default: ${DEFAULT-VALUE})")
    String device;

    @Mixin
    AllocatorOptions allocator;

    @Option(names = "--seed", paramLabel = "SEED", defaultValue = "42", description = "seed of initialization and shuffling (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--data", paramLabel = "PATH", description = "mlp: folder with the four Fashion-MNIST IDX files (.gz or plain); transformer: a UTF-8 text file")
    Path data;

    @Option(names = "--limit", defaultValue = "0", paramLabel = "N", description = "train on the first N samples only (default: all)")
    int limit;

    @Option(names = "--history-steps", defaultValue = "" + TrainOptions.DEFAULT_HISTORY_STEPS, paramLabel = "N",
            description = "record the memory history of the first N steps for the snapshot; 0 for none (default: ${DEFAULT-VALUE})")
    int historySteps;

    @Option(names = "--out", paramLabel = "DIR", description = "run folder (default: runs/<timestamp>)")
    Path out;

    @Option(names = "--dry-run", description = "rehearse the job (two training steps, one evaluation batch, one more step) and report "
            + "the peak memory of training and of evaluation (works on sim devices, where nothing is computed)")
    boolean dryRun;

    @Option(names = "--pin-memory", negatable = true, description = "on cuda, batches go through pinned host memory and are copied "
            + "one batch ahead on a side stream (pin_memory=True, non_blocking=True; default: on for cuda with --model mlp; "
            + "refused for the transformer; on host and sim it warns as PyTorch does and changes nothing)")
    Boolean pinMemory;

    @Mixin
    JsonOutput json;

    @Option(names = "--progress", paramLabel = "MODE", defaultValue = "auto", description = "auto, bar, lines or none (default: ${DEFAULT-VALUE})")
    String progress;

    @Override
    public Integer call() {
        TrainOptions options = options();
        TrainProgress.Mode progressMode = progressMode();
        if (Boolean.TRUE.equals(pinMemory) && !device.strip().toLowerCase(Locale.ROOT).startsWith("cuda")) {
            System.err.println("vram4j train: warning: --pin-memory: " + DataLoader.NO_ACCELERATOR_WARNING);
        }
        AllocatorConfig config = allocator.config();
        PrintWriter report = json.report();
        TrainJob job;
        try {
            job = TrainJob.builder(options).data(data).device(device).allocatorConfig(config).findBatchSize(findBatchSize)
                    .profileMemory(profileMemory).dryRun(dryRun).sampleChars(sampleChars).out(out).report(report)
                    .listener(new TrainProgress(progressMode, System.err, report, options.isTransformer() ? "chars" : "samples"))
                    .build();
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
        json.print(job.run().summary());
        return 0;
    }

    private TrainOptions options() {
        if (limit < 0) {
            throw new UserException("--limit must not be negative, got " + limit);
        }
        int segments = 0;
        if ("auto".equals(checkpoint)) {
            TrainOptions d = TrainOptions.defaults(model.equalsIgnoreCase("transformer") ? ModelKind.TRANSFORMER : ModelKind.MLP);
            segments = BatchSizeSearch.defaultSegments(d.withLayers(shape.layers != null ? Math.max(shape.layers, 1) : d.layers()));
        } else if (checkpoint != null) {
            try {
                segments = Integer.parseInt(checkpoint.strip());
            } catch (NumberFormatException e) {
                throw new UserException("--checkpoint: '" + checkpoint + "' is not a number of segments (expected an integer >= 1)");
            }
            if (segments < 1) {
                throw new UserException("--checkpoint: the number of segments must be at least 1, got " + segments);
            }
        }
        if (Boolean.TRUE.equals(pinMemory) && "transformer".equalsIgnoreCase(model.strip())) {
            throw new UserException("--pin-memory: the transformer cuts its inputs and targets from token windows on the "
                    + "host, so its batches are not pinned; use it with --model mlp, or leave it out");
        }
        try {
            TrainOptions d = TrainOptions.defaults(ModelKind.parse(model));
            OptimizerKind opt = optimizer != null ? OptimizerKind.parse(optimizer) : d.optimizer();
            return shape.apply(d).epochs(epochs != null ? epochs : d.epochs()).batchSize(batchSize != null ? batchSize : d.batchSize())
                    .lr(lr != null ? lr : opt.defaultLr()).optimizer(opt).schedule(schedule).momentum(momentum)
                    .weightDecay(weightDecay != null ? weightDecay : opt.defaultWeightDecay()).seed(seed).limit(limit)
                    .historySteps(historySteps).checkpoint(segments)
                    .amp(amp == null ? Precision.OFF : Precision.parse(amp)).accumulate(accumulate).microBatch(microBatch)
                    .pinMemory(pinMemory == null || pinMemory).build();
        } catch (IllegalArgumentException e) {
            throw new UserException(e.getMessage(), e);
        }
    }

    private TrainProgress.Mode progressMode() {
        try {
            return TrainProgress.Mode.valueOf(progress.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new UserException("--progress: unknown mode '" + progress + "'; expected auto, bar, lines or none");
        }
    }
}
