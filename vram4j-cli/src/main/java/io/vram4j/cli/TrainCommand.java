package io.vram4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.data.CharCorpus;
import io.vram4j.data.CharDataset;
import io.vram4j.data.CharVocabulary;
import io.vram4j.data.Dataset;
import io.vram4j.data.FashionMnist;
import io.vram4j.data.ImageDataset;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotWriter;
import io.vram4j.memory.viz.MemoryTimeline;
import io.vram4j.memory.viz.TimelinePage;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.memory.stats.MemoryStats;
import io.vram4j.tensor.LiveTensors;
import io.vram4j.tensor.MemoryProfile;
import io.vram4j.tensor.MemoryProfiler;
import io.vram4j.train.BatchSizeFinder;
import io.vram4j.train.DryRunResult;
import io.vram4j.train.EpochResult;
import io.vram4j.train.MemoryPoint;
import io.vram4j.train.ModelKind;
import io.vram4j.train.OptimizerKind;
import io.vram4j.train.Precision;
import io.vram4j.train.TrainOptions;
import io.vram4j.train.TrainResult;
import io.vram4j.train.Trainer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code vram4j train}: trains an MLP on Fashion-MNIST on a device through the caching allocator and shows
 * where the memory went: a progress bar per epoch (loss, accuracy, samples/s, allocated/reserved), a memory
 * line after each epoch, then the test accuracy and {@code memory_summary}, and a run folder with
 * {@code memory_summary.txt}, {@code memory_stats.json}, {@code memory_snapshot.pickle} (the first steps'
 * trace, for PyTorch's memory_viz), {@code memory_timeline.html} (the same trace as {@code vram4j viz} draws it)
 * and {@code result.json}.
 */
@Command(name = "train", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Train a model through the caching allocator and report where the memory went: an MLP on Fashion-MNIST "
                + "(--model mlp, the default) or a character-level Transformer language model on English text (--model transformer).",
                "MLP data: --data DIR, else /usr/share/datasets/fashion-mnist (apt-get install dataset-fashion-mnist), "
                        + "else the bundled subset (10,000 train / 2,000 test images).",
                "Transformer data: --data FILE (UTF-8 text, .gz too), else Debian's fortune cookies (apt-get install fortunes), "
                        + "else the bundled public-domain Jargon File excerpt (400,616 characters)."})
final class TrainCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--model", paramLabel = "NAME", defaultValue = "mlp", description = "mlp or transformer (default: ${DEFAULT-VALUE})")
    String model;

    @Option(names = "--hidden", paramLabel = "N", description = "mlp: width of each hidden layer (default: " + TrainOptions.DEFAULT_HIDDEN
            + "); transformer: model width (default: " + TrainOptions.LM_HIDDEN + ")")
    Integer hidden;

    @Option(names = "--layers", paramLabel = "N", description = "mlp: hidden layers (default: " + TrainOptions.DEFAULT_LAYERS
            + "); transformer: blocks (default: " + TrainOptions.LM_LAYERS + ")")
    Integer layers;

    @Option(names = "--heads", paramLabel = "N", defaultValue = "" + TrainOptions.LM_HEADS, description = "transformer: attention heads (default: ${DEFAULT-VALUE})")
    int heads;

    @Option(names = "--block-size", paramLabel = "N", defaultValue = "" + TrainOptions.LM_BLOCK_SIZE, description = "transformer: context length in characters (default: ${DEFAULT-VALUE})")
    int blockSize;

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

    @Option(names = "--device", paramLabel = "SPEC", defaultValue = "host", description = "host[:SIZE] or sim:SIZE|PRESET (default: ${DEFAULT-VALUE})")
    String device;

    @Option(names = "--alloc-conf", paramLabel = "CONF", defaultValue = "", description = "allocator settings in PYTORCH_CUDA_ALLOC_CONF format "
            + "(default: $VRAM4J_ALLOC_CONF / $PYTORCH_CUDA_ALLOC_CONF)")
    String allocConf;

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

    @Option(names = "--json", description = "print a machine-readable summary on stdout (everything else goes to stderr)")
    boolean json;

    @Option(names = "--progress", paramLabel = "MODE", defaultValue = "auto", description = "auto, bar, lines or none (default: ${DEFAULT-VALUE})")
    String progress;

    /**
     * The training and test sets of the chosen model, and where they came from.
     *
     * @param train training samples
     * @param test test (validation) samples
     * @param describe the source in words
     * @param origin {@code directory}, {@code system}, {@code bundled}, {@code file} or {@code fortunes}
     * @param vocabulary the characters (transformer), or null (mlp)
     */
    private record Data(Dataset train, Dataset test, String describe, String origin, CharVocabulary vocabulary) {
        Trainer trainer(CachingAllocator alloc, TrainOptions options) {
            return vocabulary != null ? new Trainer(alloc, options, vocabulary)
                    : new Trainer(alloc, options, train.features(), train.numClasses());
        }
    }

    private Data loadData(TrainOptions options) {
        if (options.isTransformer()) {
            CharCorpus corpus;
            try {
                corpus = CharCorpus.resolve(data);
            } catch (IllegalArgumentException e) {
                throw new UserException("--data: " + e.getMessage(), e);
            }
            CharVocabulary vocab = corpus.vocabulary();
            CharDataset train;
            CharDataset test;
            try {
                train = new CharDataset(corpus.trainText(), vocab, options.blockSize(), options.blockSize(), "training text");
                test = new CharDataset(corpus.validationText(), vocab, options.blockSize(), options.blockSize(), "validation text");
            } catch (IllegalArgumentException e) {
                throw new UserException("--block-size " + options.blockSize() + " is too long for the text: " + e.getMessage(), e);
            }
            Dataset trainSet = limit > 0 && limit < train.size() ? limited(train, limit) : train;
            Dataset testSet = options.testLimit() > 0 && options.testLimit() < test.size() ? limited(test, options.testLimit()) : test;
            return new Data(trainSet, testSet, corpus.describe() + ", " + vocab.size() + " distinct characters",
                    corpus.origin().name().toLowerCase(Locale.ROOT), vocab);
        }
        FashionMnist.Source source;
        try {
            source = FashionMnist.resolve(data);
        } catch (IllegalArgumentException e) {
            throw new UserException("--data: " + e.getMessage(), e);
        }
        ImageDataset train;
        ImageDataset test;
        try {
            train = source.train();
            test = source.test();
        } catch (IllegalArgumentException e) {
            throw new UserException((source.origin() == FashionMnist.Origin.DIRECTORY ? "--data: " : "") + e.getMessage(), e);
        }
        if (limit > 0) {
            train = train.limit(limit);
        }
        return new Data(train, test, source.describe(), source.origin().name().toLowerCase(Locale.ROOT), null);
    }

    /** The first {@code n} samples of a data set. */
    static Dataset limited(Dataset d, int n) {
        return new Dataset() {
            @Override
            public int size() {
                return n;
            }

            @Override
            public int features() {
                return d.features();
            }

            @Override
            public int numClasses() {
                return d.numClasses();
            }

            @Override
            public void copyFeatures(int index, float[] dst, int offset) {
                d.copyFeatures(java.util.Objects.checkIndex(index, n), dst, offset);
            }

            @Override
            public int label(int index) {
                return d.label(java.util.Objects.checkIndex(index, n));
            }

            @Override
            public String description() {
                return d.description() + " (first " + n + ")";
            }
        };
    }

    @Override
    public Integer call() {
        TrainOptions options = options();
        TrainProgress.Mode progressMode = progressMode();
        AllocatorConfig config = allocatorConfig();
        PrintWriter stdout = spec.commandLine().getOut();
        PrintWriter report = json ? spec.commandLine().getErr() : stdout;
        Data d = loadData(options);
        if (!findBatchSize && options.batchSize() > d.train().size()) {
            throw new UserException(String.format(Locale.ROOT, "--batch-size %,d is larger than the training set (%,d %s%s); "
                            + "use at most %,d", options.batchSize(), d.train().size(), options.isTransformer() ? "windows" : "samples",
                    limit > 0 ? " after --limit" : "", d.train().size()));
        }
        if (findBatchSize) {
            options = findBatchSize(options, d, report);
        }
        if (profileMemory) {
            LiveTensors.captureSites(true);
        }
        DeviceBackend dev;
        try {
            dev = Devices.open(device);
        } catch (IllegalArgumentException e) {
            throw new UserException("--device: " + e.getMessage(), e);
        }
        try (dev) {
            if (!dev.hasStorage() && !dryRun) {
                throw new UserException("--device: " + dev.description() + " is simulated and has no memory to compute in; "
                        + "add --dry-run to measure the memory one training step needs, or use --device host");
            }
            report.println("data: " + d.describe());
            report.printf(Locale.ROOT, "      %,d training %s, %,d test %s%n", d.train().size(),
                    options.isTransformer() ? "windows" : "samples", d.test().size(), options.isTransformer() ? "windows" : "samples");
            report.println("device: " + dev.description());
            Path runDir = runFolder();
            boolean done = false;
            // closing the allocator throws, listing them, if a tensor was leaked
            try (CachingAllocator alloc = CachingAllocator.create(dev, config)) {
                if (dryRun) {
                    dryRun(alloc, options, d, runDir, stdout, report);
                } else {
                    train(alloc, options, d, progressMode, runDir, stdout, report);
                }
                done = true;
            } finally {
                if (!done && createdRunDir) {
                    deleteIfEmpty(runDir);
                }
            }
        }
        return 0;
    }

    private List<BatchSizeFinder.Result> batchSearch;

    /** Searches the batch sizes and returns the options with the largest batch that fits for them. */
    private TrainOptions findBatchSize(TrainOptions options, Data d, PrintWriter report) {
        int segments = options.checkpoint() > 0 ? options.checkpoint() : FindBatchSizeCommand.defaultSegments(options);
        Precision amp = options.amp() == Precision.OFF ? Precision.BF16 : options.amp();
        List<TrainOptions> settings = new ArrayList<>(BatchSizeFinder.standardSettings(options, segments, amp));
        boolean own = settings.stream().noneMatch(o -> o.checkpoint() == options.checkpoint() && o.amp() == options.amp()
                && options.accumulate() == 1 && options.microBatch() == 0);
        if (own) {
            settings.add(options);
        }
        batchSearch = FindBatchSizeCommand.search(device, allocConf, options, settings, d.vocabulary(), d.train().size(),
                d.test().size(), String.format(Locale.ROOT, "the %,d training %s", d.train().size(),
                        options.isTransformer() ? "windows" : "samples"), report);
        BatchSizeFinder.Result mine = batchSearch.stream().filter(r -> r.options().checkpoint() == options.checkpoint()
                && r.options().amp() == options.amp() && r.options().accumulate() == options.accumulate()
                && r.options().microBatch() == options.microBatch()).findFirst().orElseThrow();
        if (mine.largest() == 0) {
            throw new UserException("--find-batch-size: not even a batch of 1 fits on " + device + " with these settings");
        }
        report.printf(Locale.ROOT, "training with the largest batch that fits these settings: %,d%n", mine.largest());
        return options.withBatchSize(mine.largest());
    }

    private void train(CachingAllocator alloc, TrainOptions options, Data d, TrainProgress.Mode progressMode, Path runDir,
                       PrintWriter stdout, PrintWriter report) {
        io.vram4j.compute.Kernels.best().warmUp(); // JIT-compile the kernels before the first step
        TrainProgress listener = new TrainProgress(progressMode, System.err, report, options.isTransformer() ? "chars" : "samples");
        TrainResult result;
        String sample = null;
        long skipped;
        MemoryProfile profile = null;
        String live = null;
        try (Trainer trainer = d.trainer(alloc, options); MemoryProfiler profiler = profileMemory ? MemoryProfiler.start(alloc) : null) {
            report.printf(Locale.ROOT, "model: %s (%,d parameters)%n", trainer.description(), trainer.parameters());
            report.println("run folder: " + runDir);
            report.flush();
            try {
                result = trainer.fit(d.train(), d.test(), listener);
            } finally {
                listener.close();
            }
            if (profiler != null) {
                profile = profiler.profile();
                live = LiveTensors.report(alloc, 5);
            }
            skipped = trainer.skippedSteps();
            if (options.isTransformer() && sampleChars > 0) {
                sample = trainer.sample("\n", sampleChars, 0.8, options.seed());
            }
        }
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("status", "ok");
        if (options.isTransformer()) {
            report.printf(Locale.ROOT, "validation loss: %.4f nats/char = %.3f bits/char, next-character accuracy %.2f%% on %,d characters "
                            + "after %d epoch%s; %,.0f characters/s, %.1f s in all%n",
                    result.test().loss(), result.test().loss() / Math.log(2), 100 * result.test().accuracy(), result.test().samples(),
                    result.epochs().size(), result.epochs().size() == 1 ? "" : "s", result.samplesPerSec(), result.seconds());
            summary.put("bits_per_char", result.test().loss() / Math.log(2));
        } else {
            report.printf(Locale.ROOT, "test accuracy: %.2f%% (loss %.4f) on %,d samples after %d epoch%s; %,.0f samples/s, %.1f s in all%n",
                    100 * result.test().accuracy(), result.test().loss(), result.test().samples(), result.epochs().size(),
                    result.epochs().size() == 1 ? "" : "s", result.samplesPerSec(), result.seconds());
        }
        if (skipped >= 0) {
            report.printf(Locale.ROOT, "fp16 GradScaler: %d optimizer step%s skipped (inf/NaN gradients)%n", skipped, skipped == 1 ? "" : "s");
            summary.put("skipped_steps", skipped);
        }
        if (sample != null) {
            report.println("sample (temperature 0.8):");
            report.println(sample.strip());
            summary.put("sample", sample);
        }
        putProfile(summary, profile, live, report);
        report.println(result.memory().line("end"));
        report.println(result.peaks().line("run"));
        report.println();
        report.print(result.memorySummary());
        summary.put("accuracy", result.test().accuracy());
        summary.put("loss", result.test().loss());
        summary.put("train_accuracy", result.finalTrainAccuracy());
        summary.put("train_loss", result.finalTrainLoss());
        summary.put("samples_per_sec", result.samplesPerSec());
        summary.put("seconds", result.seconds());
        putMemory(summary, result.memory());
        summary.put("peaks", BatchSizeReport.peaks(result.peaks()));
        summary.put("epochs", epochs(result.epochs()));
        summary.put("model", result.description());
        summary.put("parameters", result.parameters());
        summary.put("techniques", options.techniques());
        summary.put("device", alloc.device().description());
        summary.put("data", Map.of("source", d.describe(), "origin", d.origin(),
                "train_samples", result.trainSamples(), "test_samples", result.test().samples()));
        summary.put("run_dir", runDir.toString());
        summary.put("files", writeRunFolder(runDir, result.memorySummary(), result.memoryStats(), result.snapshot(), summary));
        summary.put("memory_stats", result.memoryStats().asMap());
        finish(runDir, summary, stdout, report);
    }

    private void dryRun(CachingAllocator alloc, TrainOptions options, Data d, Path runDir,
                        PrintWriter stdout, PrintWriter report) {
        DryRunResult r;
        MemoryProfile profile = null;
        String live = null;
        try (Trainer trainer = d.trainer(alloc, options); MemoryProfiler profiler = profileMemory ? MemoryProfiler.start(alloc) : null) {
            report.printf(Locale.ROOT, "model: %s (%,d parameters)%n", trainer.description(), trainer.parameters());
            r = trainer.dryRun(d.train(), d.test());
            if (profiler != null) {
                profile = profiler.profile();
                live = LiveTensors.report(alloc, 5);
            }
        }
        report.printf(Locale.ROOT, "dry run: training at batch %d and evaluation at batch %d need %s at peak (the allocator reserved %s)%n",
                r.batchSize(), r.peaks().evaluationBatch(), FormatSize.formatSize(r.peaks().peakAllocated()),
                FormatSize.formatSize(r.peaks().peakReserved()));
        report.println(r.peaks().line("dry run"));
        report.println(r.memory().line("after the dry run"));
        Map<String, Object> summary = new LinkedHashMap<>();
        putProfile(summary, profile, live, report);
        report.println();
        report.print(r.memorySummary());
        summary.put("status", "ok");
        summary.put("dry_run", true);
        summary.put("batch_size", r.batchSize());
        putMemory(summary, r.memory());
        summary.put("peaks", BatchSizeReport.peaks(r.peaks()));
        summary.put("model", r.description());
        summary.put("parameters", r.parameters());
        summary.put("techniques", options.techniques());
        summary.put("device", alloc.device().description());
        summary.put("run_dir", runDir.toString());
        summary.put("files", writeRunFolder(runDir, r.memorySummary(), r.memoryStats(), r.snapshot(), summary));
        summary.put("memory_stats", r.memoryStats().asMap());
        finish(runDir, summary, stdout, report);
    }

    private void putProfile(Map<String, Object> summary, MemoryProfile profile, String live, PrintWriter report) {
        if (batchSearch != null) {
            summary.put("batch_size_search", BatchSizeReport.json(batchSearch));
        }
        if (profile == null) {
            return;
        }
        report.print(profile.table());
        report.println("live tensors at the end, by allocation site:");
        report.print(live);
        Map<String, Object> m = new LinkedHashMap<>(profile.asMap());
        m.put("peak_allocated", profile.peakAllocated());
        m.put("where", profile.where());
        summary.put("memory_profile", m);
    }

    private void finish(Path runDir, Map<String, Object> summary, PrintWriter stdout, PrintWriter report) {
        writeJson(runDir.resolve("result.json"), summary);
        report.println("run folder: " + runDir + " (" + String.join(", ", fileNames(summary)) + ")");
        report.flush();
        if (json) {
            try {
                stdout.println(mapper().writeValueAsString(summary));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        stdout.flush();
    }

    @SuppressWarnings("unchecked")
    private static List<String> fileNames(Map<String, Object> summary) {
        List<String> names = new ArrayList<>(((Map<String, Object>) summary.get("files")).values().stream().map(String::valueOf)
                .map(p -> Path.of(p).getFileName().toString()).toList());
        names.add("result.json");
        return names;
    }

    private static void putMemory(Map<String, Object> summary, MemoryPoint m) {
        summary.put("allocated_bytes", m.allocated());
        summary.put("reserved_bytes", m.reserved());
        summary.put("peak_allocated_bytes", m.peakAllocated());
        summary.put("peak_reserved_bytes", m.peakReserved());
    }

    private static List<Map<String, Object>> epochs(List<EpochResult> epochs) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (EpochResult e : epochs) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("epoch", e.epoch());
            m.put("steps", e.steps());
            m.put("train_loss", e.loss());
            m.put("train_accuracy", e.accuracy());
            m.put("test_loss", e.test().loss());
            m.put("test_accuracy", e.test().accuracy());
            m.put("seconds", e.seconds());
            m.put("samples_per_sec", e.samplesPerSec());
            putMemory(m, e.memory());
            m.put("peaks", BatchSizeReport.peaks(e.peaks()));
            out.add(m);
        }
        return out;
    }

    private Map<String, String> writeRunFolder(Path runDir, String memorySummary, MemoryStats stats, MemorySnapshot snapshot,
                                               Map<String, Object> summary) {
        Map<String, String> files = new LinkedHashMap<>();
        try {
            Path s = runDir.resolve("memory_summary.txt");
            Files.writeString(s, memorySummary);
            files.put("memory_summary", s.toString());
            Path j = runDir.resolve("memory_stats.json");
            writeJson(j, stats.asMap());
            files.put("memory_stats", j.toString());
            if (snapshot != null) {
                Path p = runDir.resolve("memory_snapshot.pickle");
                SnapshotWriter.write(snapshot, p);
                files.put("memory_snapshot", p.toString());
                int device = VizCommand.defaultDevice(snapshot);
                if (snapshot.devices().contains(device)) {
                    Path html = runDir.resolve("memory_timeline.html");
                    TimelinePage.write(MemoryTimeline.of(snapshot, device, MemoryTimeline.DEFAULT_MAX_ENTRIES),
                            runDir.getFileName() + "/memory_snapshot.pickle", html);
                    files.put("memory_timeline", html.toString());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the run folder " + runDir + ": " + e.getMessage(), e);
        }
        return files;
    }

    private static ObjectMapper mapper() {
        return new ObjectMapper();
    }

    private static void writeJson(Path file, Object value) {
        try {
            mapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), value);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    private boolean createdRunDir;

    private static void deleteIfEmpty(Path dir) {
        try (var entries = Files.list(dir)) {
            if (entries.findAny().isEmpty()) {
                Files.delete(dir);
            }
        } catch (IOException e) {
            // leave it
        }
    }

    private Path runFolder() {
        try {
            if (out != null) {
                if (Files.exists(out) && !Files.isDirectory(out)) {
                    throw new UserException("--out: '" + out + "' exists and is not a folder");
                }
                createdRunDir = !Files.exists(out);
                Files.createDirectories(out);
                return out;
            }
            createdRunDir = true;
            Path runs = Path.of("runs");
            Files.createDirectories(runs);
            String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT));
            for (int i = 1; ; i++) {
                Path candidate = runs.resolve(i == 1 ? stamp : stamp + "-" + i);
                try {
                    return Files.createDirectory(candidate);
                } catch (FileAlreadyExistsException e) {
                    // try the next suffix
                }
            }
        } catch (IOException e) {
            throw new UserException("--out: cannot create the run folder: " + e, e);
        }
    }

    private TrainOptions options() {
        if (limit < 0) {
            throw new UserException("--limit must not be negative, got " + limit);
        }
        int segments = 0;
        if ("auto".equals(checkpoint)) {
            TrainOptions d = TrainOptions.defaults(model.equalsIgnoreCase("transformer") ? ModelKind.TRANSFORMER : ModelKind.MLP);
            segments = FindBatchSizeCommand.defaultSegments(d.withLayers(layers != null ? Math.max(layers, 1) : d.layers()));
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
        try {
            TrainOptions d = TrainOptions.defaults(ModelKind.parse(model));
            OptimizerKind opt = optimizer != null ? OptimizerKind.parse(optimizer) : d.optimizer();
            return d.toBuilder().hidden(hidden != null ? hidden : d.hidden()).layers(layers != null ? layers : d.layers())
                    .epochs(epochs != null ? epochs : d.epochs()).batchSize(batchSize != null ? batchSize : d.batchSize())
                    .lr(lr != null ? lr : opt.defaultLr()).optimizer(opt).schedule(schedule).momentum(momentum)
                    .weightDecay(weightDecay != null ? weightDecay : opt.defaultWeightDecay()).seed(seed).limit(limit)
                    .historySteps(historySteps).blockSize(blockSize).heads(heads).checkpoint(segments)
                    .amp(amp == null ? Precision.OFF : Precision.parse(amp)).accumulate(accumulate).microBatch(microBatch).build();
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

    private AllocatorConfig allocatorConfig() {
        AllocatorConfig config;
        try {
            config = AllocatorConfig.fromEnvironment(System.getenv());
        } catch (IllegalArgumentException e) {
            throw new UserException("allocator settings from the environment: " + e.getMessage(), e);
        }
        if (!allocConf.isBlank()) {
            try {
                config = config.parse(allocConf);
            } catch (IllegalArgumentException e) {
                throw new UserException("--alloc-conf: " + e.getMessage(), e);
            }
        }
        return config;
    }
}
