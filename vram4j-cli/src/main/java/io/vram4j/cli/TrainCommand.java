package io.vram4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.data.FashionMnist;
import io.vram4j.data.ImageDataset;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotWriter;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.memory.stats.MemoryStats;
import io.vram4j.train.DryRunResult;
import io.vram4j.train.EpochResult;
import io.vram4j.train.MemoryPoint;
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
 * trace, for PyTorch's memory_viz) and {@code result.json}.
 */
@Command(name = "train", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Train an MLP on Fashion-MNIST through the caching allocator and report where the memory went.",
                "Data: --data DIR, else /usr/share/datasets/fashion-mnist (apt-get install dataset-fashion-mnist), "
                        + "else the bundled subset (10,000 train / 2,000 test images)."})
final class TrainCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--model", paramLabel = "NAME", defaultValue = "mlp", description = "model: mlp (default: ${DEFAULT-VALUE})")
    String model;

    @Option(names = "--hidden", paramLabel = "N", defaultValue = "" + TrainOptions.DEFAULT_HIDDEN, description = "width of each hidden layer (default: ${DEFAULT-VALUE})")
    int hidden;

    @Option(names = "--layers", paramLabel = "N", defaultValue = "" + TrainOptions.DEFAULT_LAYERS, description = "number of hidden layers (default: ${DEFAULT-VALUE})")
    int layers;

    @Option(names = "--epochs", paramLabel = "N", defaultValue = "" + TrainOptions.DEFAULT_EPOCHS, description = "passes over the training set (default: ${DEFAULT-VALUE})")
    int epochs;

    @Option(names = "--batch-size", paramLabel = "N", defaultValue = "" + TrainOptions.DEFAULT_BATCH_SIZE, description = "samples per step (default: ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--lr", paramLabel = "RATE", description = "learning rate (default: 0.05 for sgd, 0.001 for adamw)")
    Double lr;

    @Option(names = "--optimizer", paramLabel = "NAME", defaultValue = "sgd", description = "sgd (with momentum) or adamw (default: ${DEFAULT-VALUE})")
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

    @Option(names = "--data", paramLabel = "DIR", description = "folder with the four Fashion-MNIST IDX files (.gz or plain)")
    Path data;

    @Option(names = "--limit", defaultValue = "0", paramLabel = "N", description = "train on the first N samples only (default: all)")
    int limit;

    @Option(names = "--history-steps", defaultValue = "" + TrainOptions.DEFAULT_HISTORY_STEPS, paramLabel = "N",
            description = "record the memory history of the first N steps for the snapshot; 0 for none (default: ${DEFAULT-VALUE})")
    int historySteps;

    @Option(names = "--out", paramLabel = "DIR", description = "run folder (default: runs/<timestamp>)")
    Path out;

    @Option(names = "--dry-run", description = "run one step and report the peak memory training needs (works on sim devices)")
    boolean dryRun;

    @Option(names = "--json", description = "print a machine-readable summary on stdout (everything else goes to stderr)")
    boolean json;

    @Option(names = "--progress", paramLabel = "MODE", defaultValue = "auto", description = "auto, bar, lines or none (default: ${DEFAULT-VALUE})")
    String progress;

    @Override
    public Integer call() {
        TrainOptions options = options();
        TrainProgress.Mode progressMode = progressMode();
        AllocatorConfig config = allocatorConfig();
        PrintWriter stdout = spec.commandLine().getOut();
        PrintWriter report = json ? spec.commandLine().getErr() : stdout;

        FashionMnist.Source source;
        try {
            source = FashionMnist.resolve(data);
        } catch (IllegalArgumentException e) {
            throw new UserException("--data: " + e.getMessage(), e);
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
            report.println("data: " + source.describe());
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
            report.printf(Locale.ROOT, "      %,d training samples, %,d test samples%n", train.size(), test.size());
            report.println("device: " + dev.description());
            Path runDir = runFolder();
            boolean done = false;
            // closing the allocator throws, listing them, if a tensor was leaked
            try (CachingAllocator alloc = CachingAllocator.create(dev, config)) {
                if (dryRun) {
                    dryRun(alloc, options, train, runDir, stdout, report);
                } else {
                    train(alloc, options, train, test, source, progressMode, runDir, stdout, report);
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

    private void train(CachingAllocator alloc, TrainOptions options, ImageDataset train, ImageDataset test,
                       FashionMnist.Source source, TrainProgress.Mode progressMode, Path runDir,
                       PrintWriter stdout, PrintWriter report) {
        io.vram4j.compute.Kernels.best().warmUp(); // JIT-compile the kernels before the first step
        TrainProgress listener = new TrainProgress(progressMode, System.err, report);
        TrainResult result;
        try (Trainer trainer = new Trainer(alloc, options, train.features(), train.numClasses())) {
            report.printf(Locale.ROOT, "model: %s (%,d parameters)%n", trainer.description(), trainer.parameters());
            report.println("run folder: " + runDir);
            report.flush();
            try {
                result = trainer.fit(train, test, listener);
            } finally {
                listener.close();
            }
        }
        report.printf(Locale.ROOT, "test accuracy: %.2f%% (loss %.4f) on %,d samples after %d epoch%s; %,.0f samples/s, %.1f s in all%n",
                100 * result.test().accuracy(), result.test().loss(), result.test().samples(), result.epochs().size(),
                result.epochs().size() == 1 ? "" : "s", result.samplesPerSec(), result.seconds());
        report.println(result.memory().line("end"));
        report.println();
        report.print(result.memorySummary());
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("status", "ok");
        summary.put("accuracy", result.test().accuracy());
        summary.put("loss", result.test().loss());
        summary.put("train_accuracy", result.finalTrainAccuracy());
        summary.put("train_loss", result.finalTrainLoss());
        summary.put("samples_per_sec", result.samplesPerSec());
        summary.put("seconds", result.seconds());
        putMemory(summary, result.memory());
        summary.put("epochs", epochs(result.epochs()));
        summary.put("model", result.description());
        summary.put("parameters", result.parameters());
        summary.put("device", alloc.device().description());
        summary.put("data", Map.of("source", source.describe(), "origin", source.origin().name().toLowerCase(Locale.ROOT),
                "train_samples", result.trainSamples(), "test_samples", result.test().samples()));
        summary.put("run_dir", runDir.toString());
        summary.put("files", writeRunFolder(runDir, result.memorySummary(), result.memoryStats(), result.snapshot(), summary));
        summary.put("memory_stats", result.memoryStats().asMap());
        finish(runDir, summary, stdout, report);
    }

    private void dryRun(CachingAllocator alloc, TrainOptions options, ImageDataset train, Path runDir,
                        PrintWriter stdout, PrintWriter report) {
        DryRunResult r;
        try (Trainer trainer = new Trainer(alloc, options, train.features(), train.numClasses())) {
            report.printf(Locale.ROOT, "model: %s (%,d parameters)%n", trainer.description(), trainer.parameters());
            r = trainer.dryRun(train);
        }
        report.printf(Locale.ROOT, "dry run: one step of %d samples needs %s at peak (the allocator reserved %s)%n",
                r.batchSize(), FormatSize.formatSize(r.memory().peakAllocated()), FormatSize.formatSize(r.memory().peakReserved()));
        report.println(r.memory().line("after one step"));
        report.println();
        report.print(r.memorySummary());
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("status", "ok");
        summary.put("dry_run", true);
        summary.put("batch_size", r.batchSize());
        putMemory(summary, r.memory());
        summary.put("model", r.description());
        summary.put("parameters", r.parameters());
        summary.put("device", alloc.device().description());
        summary.put("run_dir", runDir.toString());
        summary.put("files", writeRunFolder(runDir, r.memorySummary(), r.memoryStats(), r.snapshot(), summary));
        summary.put("memory_stats", r.memoryStats().asMap());
        finish(runDir, summary, stdout, report);
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
        try {
            String opt = optimizer.toLowerCase(Locale.ROOT);
            boolean adamw = opt.equals("adamw");
            double rate = lr != null ? lr : adamw ? TrainOptions.DEFAULT_ADAMW_LR : TrainOptions.DEFAULT_SGD_LR;
            double decay = weightDecay != null ? weightDecay : adamw ? 0.01 : 0.0;
            return TrainOptions.defaults().withLayers(layers).withHidden(hidden).withEpochs(epochs).withBatchSize(batchSize)
                    .withOptimizer(optimizer).withSchedule(schedule).withLr(rate).withMomentum(momentum).withWeightDecay(decay).withSeed(seed)
                    .withLimit(limit).withHistorySteps(historySteps)
                    .withModel(model);
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
