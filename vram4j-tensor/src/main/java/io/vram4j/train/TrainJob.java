package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.cuda.CudaSegments;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.LiveTensors;
import io.vram4j.tensor.MemoryProfile;
import io.vram4j.tensor.MemoryProfiler;

import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The main job of {@code vram4j train} as a library call: resolves the data, optionally searches the largest
 * batch that fits ({@link BatchSizeSearch}), opens the device, a {@link CachingAllocator} and the tensor
 * {@link Device} over it (with the device's kernels), then trains (or rehearses, as a dry run) with a
 * {@link Trainer}, and writes the run folder ({@link RunFolder}) with the JSON summary {@code result.json}.
 *
 * <pre>{@code
 * TrainJob.Result r = TrainJob.builder(TrainOptions.builder().epochs(1).limit(2000).build())
 *         .out(Path.of("runs/java")).build().run();
 * System.out.println(r.summary().get("accuracy"));
 * }</pre>
 *
 * <p>What {@code vram4j train} prints goes to {@link Builder#report(PrintWriter)} (nothing by default) and the
 * per-step progress to {@link Builder#listener(TrainListener)}. A job is not thread-safe; {@link #run()} may be
 * called once or more, each call a new run (with its own allocator, device and, without {@link Builder#out(Path)},
 * run folder).
 */
public final class TrainJob {
    private final TrainOptions options;
    private final Path data;
    private final String device;
    private final AllocatorConfig config;
    private final boolean findBatchSize;
    private final boolean profileMemory;
    private final boolean dryRun;
    private final int sampleChars;
    private final Path out;
    private final PrintWriter report;
    private final TrainListener listener;

    private final Device given;
    private final Consumer<Trainer> trained;

    private List<BatchSizeFinder.Result> batchSearch;

    private TrainJob(Builder b) {
        options = b.options;
        data = b.data;
        device = b.device;
        config = b.config;
        findBatchSize = b.findBatchSize;
        profileMemory = b.profileMemory;
        dryRun = b.dryRun;
        sampleChars = b.sampleChars;
        out = b.out;
        report = b.report;
        listener = b.listener;
        given = b.given;
        trained = b.trained;
    }

    /**
     * @param options what to train and how
     * @return a builder: host device, allocator settings from the environment, no search, no profile, a real run,
     *     200 sampled characters (transformer), a new {@code runs/<timestamp>} folder, nothing printed
     */
    public static Builder builder(TrainOptions options) {
        return new Builder(options);
    }

    /**
     * What one run produced.
     *
     * @param summary the JSON summary ({@code result.json}, and what {@code vram4j train --json} prints): JSON-ready
     *                maps, lists, strings and numbers; byte counts in bytes, times in seconds
     * @param runDir the run folder
     * @param training the training's result, or null after a dry run
     * @param dryRun the dry run's result, or null after training
     */
    public record Result(Map<String, Object> summary, Path runDir, TrainResult training, DryRunResult dryRun) {
    }

    /**
     * Runs the job.
     *
     * @return what it produced
     * @throws IllegalArgumentException naming the {@code train} option at fault ({@code --data}, {@code --device},
     *     {@code --batch-size}, {@code --out}...) when the job cannot start; nothing has been trained then
     * @throws io.vram4j.device.DeviceOutOfMemoryException if the device runs out of memory
     * @throws java.io.UncheckedIOException if the run folder cannot be written
     * @throws IllegalStateException if a tensor was leaked (closing the allocator lists them)
     */
    public Result run() {
        TrainOptions o = options;
        batchSearch = null;
        JobData d = JobData.load(o, data);
        if (!findBatchSize && o.batchSize() > d.train().size()) {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "--batch-size %,d is larger than the training set (%,d %s%s); "
                    + "use at most %,d", o.batchSize(), d.train().size(), d.unit(), o.limit() > 0 ? " after --limit" : "", d.train().size()));
        }
        if (findBatchSize) {
            o = findBatchSize(o, d);
        }
        if (profileMemory) {
            LiveTensors.captureSites(true);
        }
        // train() and dryRun() are called from here, with no frame between: recorded Java stacks keep their first frames
        try (Opened dev = given != null ? new Opened(given, () -> { }) : open()) {
            report.println("data: " + d.describe());
            report.printf(Locale.ROOT, "      %,d training %s, %,d test %s%n", d.train().size(), d.unit(), d.test().size(), d.unit());
            report.println("device: " + dev.tensors().description());
            RunFolder folder = RunFolder.create(out);
            try {
                return dryRun ? dryRun(dev.tensors(), o, d, folder) : train(dev.tensors(), o, d, folder);
            } catch (RuntimeException | Error e) {
                folder.deleteIfCreatedAndEmpty();
                throw e;
            }
        }
    }

    /** The tensor device a run computes on, and what closes what was opened for it. */
    private record Opened(Device tensors, Runnable closer) implements AutoCloseable {
        @Override
        public void close() {
            closer.run();
        }
    }

    /** Opens the {@code --device}, its allocator and the tensor device over them (the kernels it loads with it). */
    private Opened open() {
        DeviceBackend dev = openDevice(device);
        try {
            if (dev.isSimulated() && !dryRun) {
                throw new IllegalArgumentException("--device: " + dev.description() + " is simulated and has no memory to compute in; "
                        + "add --dry-run to measure the memory one training step needs, or use --device host");
            }
            CachingAllocator alloc = CachingAllocator.create(dev, config);
            try {
                Device tensors = Device.of(alloc);
                // closing the allocator throws, listing them, if a tensor was leaked
                return new Opened(tensors, () -> {
                    try (dev; alloc; tensors) {
                        // closes the kernels the device loaded, then the allocator, then the backend
                    }
                });
            } catch (RuntimeException | Error e) {
                alloc.close();
                throw e;
            }
        } catch (RuntimeException | Error e) {
            dev.close();
            throw e;
        }
    }

    /**
     * Opens a job's device; a {@code cuda} GPU places segments as {@code sim} does
     * ({@link CudaSegments#LOWEST_ADDRESS_FIRST}), so that a dry run of the job on a sim standing for it allocates
     * byte for byte as the job does.
     */
    static DeviceBackend openDevice(String spec) {
        try {
            return Devices.open(spec, CudaSegments.LOWEST_ADDRESS_FIRST);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--device: " + e.getMessage(), e);
        }
    }

    /** Searches the batch sizes and returns the options with the largest batch that fits for them. */
    private TrainOptions findBatchSize(TrainOptions options, JobData d) {
        int segments = options.checkpoint() > 0 ? options.checkpoint() : BatchSizeSearch.defaultSegments(options);
        Precision amp = options.amp() == Precision.OFF ? Precision.BF16 : options.amp();
        List<TrainOptions> settings = new ArrayList<>(BatchSizeFinder.standardSettings(options, segments, amp));
        boolean own = settings.stream().noneMatch(o -> o.checkpoint() == options.checkpoint() && o.amp() == options.amp()
                && options.accumulate() == 1 && options.microBatch() == 0);
        if (own) {
            settings.add(options);
        }
        batchSearch = BatchSizeSearch.run(device, config, options, settings, d.vocabulary(), d.train().size(),
                d.test().size(), String.format(Locale.ROOT, "the %,d training %s", d.train().size(), d.unit()), report);
        BatchSizeFinder.Result mine = batchSearch.stream().filter(r -> r.options().checkpoint() == options.checkpoint()
                && r.options().amp() == options.amp() && r.options().accumulate() == options.accumulate()
                && r.options().microBatch() == options.microBatch()).findFirst().orElseThrow();
        if (mine.largest() == 0) {
            throw new IllegalArgumentException("--find-batch-size: not even a batch of 1 fits on " + device + " with these settings");
        }
        report.printf(Locale.ROOT, "training with the largest batch that fits these settings: %,d%n", mine.largest());
        return options.withBatchSize(mine.largest());
    }

    private Result train(Device tensors, TrainOptions options, JobData d, RunFolder folder) {
        CachingAllocator alloc = tensors.allocator();
        // No Kernels.warmUp() first: running every kernel on small inputs taught the JIT a profile the training loops
        // then had to unlearn: a default MLP epoch took about 40% longer with it, a Transformer run about 12% longer
        // (BENCHMARKS.md, "The main job"). The first steps compile what they use.
        TrainResult result;
        String sample = null;
        long skipped;
        MemoryProfile profile = null;
        String live = null;
        try (Trainer trainer = d.trainer(tensors, options); MemoryProfiler profiler = profileMemory ? MemoryProfiler.start(alloc) : null) {
            report.printf(Locale.ROOT, "model: %s (%,d parameters)%n", trainer.description(), trainer.parameters());
            if (trainer.pinsMemory()) {
                report.println("data loader: pinned memory, batches copied one ahead on a side stream");
            }
            report.println("run folder: " + folder.dir());
            report.flush();
            try {
                result = trainer.fit(d.train(), d.test(), listener);
            } finally {
                listener.trainingEnded();
            }
            if (profiler != null) {
                profile = profiler.profile();
                live = LiveTensors.report(alloc, 5);
            }
            trained.accept(trainer);
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
        putProfile(summary, profile, live);
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
        summary.put("run_dir", folder.dir().toString());
        summary.put("files", folder.writeMemoryFiles(result.memorySummary(), result.memoryStats(), result.snapshot()));
        summary.put("memory_stats", result.memoryStats().asMap());
        finish(folder, summary);
        return new Result(summary, folder.dir(), result, null);
    }

    private Result dryRun(Device tensors, TrainOptions options, JobData d, RunFolder folder) {
        CachingAllocator alloc = tensors.allocator();
        DryRunResult r;
        MemoryProfile profile = null;
        String live = null;
        try (Trainer trainer = d.trainer(tensors, options); MemoryProfiler profiler = profileMemory ? MemoryProfiler.start(alloc) : null) {
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
        putProfile(summary, profile, live);
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
        summary.put("run_dir", folder.dir().toString());
        summary.put("files", folder.writeMemoryFiles(r.memorySummary(), r.memoryStats(), r.snapshot()));
        summary.put("memory_stats", r.memoryStats().asMap());
        finish(folder, summary);
        return new Result(summary, folder.dir(), null, r);
    }

    private void putProfile(Map<String, Object> summary, MemoryProfile profile, String live) {
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

    private void finish(RunFolder folder, Map<String, Object> summary) {
        RunFolder.writeJson(folder.dir().resolve("result.json"), summary);
        report.println("run folder: " + folder.dir() + " (" + String.join(", ", fileNames(summary)) + ")");
        report.flush();
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

    /** Settings of a {@link TrainJob} beyond its {@link TrainOptions}. Not thread-safe; setters return this builder. */
    public static final class Builder {
        private final TrainOptions options;
        private Path data;
        private String device = "host";
        private AllocatorConfig config;
        private boolean findBatchSize;
        private boolean profileMemory;
        private boolean dryRun;
        private int sampleChars = 200;
        private Path out;
        private PrintWriter report = new PrintWriter(OutputStream.nullOutputStream());
        private TrainListener listener = TrainListener.NONE;
        private Device given;
        private Consumer<Trainer> trained = t -> { };

        private Builder(TrainOptions options) {
            this.options = Objects.requireNonNull(options, "options");
        }

        /**
         * @param v mlp: a folder with the four Fashion-MNIST IDX files; transformer: a UTF-8 text file; null (the
         *          default) for the system's data set, else the bundled one
         * @return this builder
         */
        public Builder data(Path v) {
            data = v;
            return this;
        }

        /**
         * @param v the device, as {@link Devices#open(String)} reads it, e.g. {@code host:1GiB}, {@code sim:8GiB},
         *          {@code sim:H100-80GB} or {@code cuda:0} (default {@code host}); on {@code cuda} the tensors compute
         *          with its CUDA kernels, segments are placed as on {@code sim}
         *          ({@link CudaSegments#LOWEST_ADDRESS_FIRST}) and the batches are copied to it (the mlp's through
         *          pinned memory on a side stream unless {@link TrainOptions#pinMemory()} is off, else on the compute
         *          stream)
         * @return this builder
         */
        public Builder device(String v) {
            device = Objects.requireNonNull(v, "device");
            return this;
        }

        /**
         * @param v the allocator's settings (default: from {@code $VRAM4J_ALLOC_CONF} / {@code $PYTORCH_CUDA_ALLOC_CONF})
         * @return this builder
         */
        public Builder allocatorConfig(AllocatorConfig v) {
            config = Objects.requireNonNull(v, "config");
            return this;
        }

        /**
         * @param v first search the largest batch that fits (baseline, checkpointing, mixed precision, both and
         *          these settings), then train with the largest for these settings
         * @return this builder
         */
        public Builder findBatchSize(boolean v) {
            findBatchSize = v;
            return this;
        }

        /**
         * @param v split the training steps' peak into parameters, gradients, optimizer state, activations and
         *          temporaries, and list the live tensors by allocation site (turns on
         *          {@link LiveTensors#captureSites(boolean)} for the whole JVM)
         * @return this builder
         */
        public Builder profileMemory(boolean v) {
            profileMemory = v;
            return this;
        }

        /**
         * @param v rehearse (two training steps, one evaluation batch, one more step) instead of training; works on
         *          simulated devices
         * @return this builder
         */
        public Builder dryRun(boolean v) {
            dryRun = v;
            return this;
        }

        /**
         * @param v transformer: characters to generate at the end (0: none; default 200)
         * @return this builder
         */
        public Builder sampleChars(int v) {
            if (v < 0) {
                throw new IllegalArgumentException("--sample must not be negative, got " + v);
            }
            sampleChars = v;
            return this;
        }

        /**
         * @param v the run folder, created if missing; null (the default) for a new {@code runs/<timestamp>}
         * @return this builder
         */
        public Builder out(Path v) {
            out = v;
            return this;
        }

        /**
         * @param v where the lines {@code vram4j train} prints go (data, device, model, results, memory summary);
         *          default: nowhere
         * @return this builder
         */
        public Builder report(PrintWriter v) {
            report = Objects.requireNonNull(v, "report");
            return this;
        }

        /**
         * @param v told of every step and epoch (a progress bar, say); default {@link TrainListener#NONE}
         * @return this builder
         */
        public Builder listener(TrainListener v) {
            listener = Objects.requireNonNull(v, "listener");
            return this;
        }

        /**
         * Runs the job on an opened tensor device instead of {@link #device(String)}: its allocator and kernels (a
         * device-memory backend with kernels of its own, in tests); it stays open after the run.
         *
         * @param v the device
         * @param afterTraining given the trainer after training, before it closes (to read the final weights); not
         *                      called by a dry run
         * @return this builder
         */
        Builder on(Device v, Consumer<Trainer> afterTraining) {
            given = Objects.requireNonNull(v, "device");
            trained = Objects.requireNonNull(afterTraining, "afterTraining");
            return this;
        }

        /**
         * @return the job
         * @throws IllegalArgumentException if no allocator settings were given and the environment's are invalid
         */
        public TrainJob build() {
            if (config == null) {
                try {
                    config = AllocatorConfig.fromEnvironment(System.getenv());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("allocator settings from the environment: " + e.getMessage(), e);
                }
            }
            return new TrainJob(this);
        }
    }
}
