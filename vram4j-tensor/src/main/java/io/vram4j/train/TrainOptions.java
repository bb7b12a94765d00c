package io.vram4j.train;

import io.vram4j.tensor.SDPBackend;
import io.vram4j.tensor.SdpaKernel;

import java.util.Locale;
import java.util.Objects;

/**
 * What {@link Trainer} trains and how: the model (an MLP or a character-level Transformer), the optimizer,
 * the batches, the memory-saving techniques (activation checkpointing, mixed precision, gradient accumulation,
 * micro-batching), and how much memory history to record. Built by {@link #builder()} (or {@link #defaults(ModelKind)}
 * and {@link #toBuilder()}); immutable and thread-safe. {@link Builder#build()} and the {@code with…} copy methods
 * check every setting, naming it in the exception with the spelling of the {@code train} command's option.
 *
 * <p>The defaults reach about 88–89% test accuracy on the full Fashion-MNIST in 3 epochs: a 784-512-512-10
 * ReLU MLP trained by SGD with momentum 0.9, learning rate 0.05, batch size 128.
 *
 * <p>The settings (one accessor each):
 * <ul>
 * <li>{@code model}: {@link ModelKind#MLP} or {@link ModelKind#TRANSFORMER} (a GPT-style character-level language model)
 * <li>{@code hidden}: width of each hidden layer (mlp) or the model width {@code n_embd} (transformer)
 * <li>{@code layers}: number of hidden layers (mlp; 0: a linear classifier) or Transformer blocks
 * <li>{@code epochs}: passes over the training set
 * <li>{@code batchSize}: samples per step
 * <li>{@code lr}: learning rate
 * <li>{@code optimizer}: {@link OptimizerKind#SGD} (with momentum) or {@link OptimizerKind#ADAMW}
 * <li>{@code schedule}: learning-rate schedule: {@code "cosine"} (from {@code lr} down to 0 over all steps, per
 *                     step, as {@code CosineAnnealingLR} with {@code T_max} = total steps) or {@code "constant"}
 * <li>{@code momentum}: SGD momentum (ignored by AdamW)
 * <li>{@code weightDecay}: weight decay (decoupled for AdamW, L2 for SGD)
 * <li>{@code seed}: seed of the weight initialization and the shuffling
 * <li>{@code limit}: train on the first {@code limit} samples only (0: all)
 * <li>{@code testLimit}: evaluate on the first {@code testLimit} test samples only (0: all)
 * <li>{@code prefetch}: batches the data loader assembles ahead on its thread (0: none)
 * <li>{@code pinMemory}: on an accelerator ({@code cuda}), batches go through pinned host memory and are copied
 *                     to the device one batch ahead on a side stream ({@code pin_memory=True} and
 *                     {@code non_blocking=True}, see {@link io.vram4j.data.DeviceLoader}); on by default, for the
 *                     mlp only; nothing changes on {@code host} and {@code sim}
 * <li>{@code historySteps}: record the allocator's memory history (with Java stacks) for this many first steps,
 *                     then take a snapshot and stop recording (0: none)
 * <li>{@code maxSteps}: stop after this many steps in all (0: no limit); for quick runs and tests
 * <li>{@code blockSize}: context length of the transformer, in characters (ignored by the mlp)
 * <li>{@code heads}: attention heads of the transformer; must divide {@code hidden} (ignored by the mlp)
 * <li>{@code checkpoint}: activation checkpointing: 0 off, else the number of segments the blocks (transformer)
 *                     or layers (mlp) are checkpointed in, as {@code checkpoint_sequential(segments)}
 * <li>{@code amp}: mixed precision: {@link Precision#OFF}, {@link Precision#BF16} (autocast to bfloat16) or
 *                     {@link Precision#FP16} (autocast to float16 with a dynamic {@code GradScaler})
 * <li>{@code accumulate}: gradient accumulation: an optimizer step every {@code accumulate} batches, each batch's
 *                     loss divided by {@code accumulate} (1: off)
 * <li>{@code microBatch}: split every batch into micro-batches of this many samples whose gradients are summed
 *                     before the optimizer step (0: off)
 * <li>{@code attention}: the transformer's attention backend: {@link SDPBackend#FLASH_ATTENTION} (the fused
 *                     kernel, default) or {@link SDPBackend#MATH} (the unfused ops that save the probabilities), as
 *                     {@code torch.nn.attention.sdpa_kernel}; the job runs inside {@link SdpaKernel} with it
 * </ul>
 */
public final class TrainOptions {
    /** Default hidden width. */
    public static final int DEFAULT_HIDDEN = 512;
    /** Default number of hidden layers. */
    public static final int DEFAULT_LAYERS = 2;
    /** Default epochs. */
    public static final int DEFAULT_EPOCHS = 3;
    /** Default batch size. */
    public static final int DEFAULT_BATCH_SIZE = 128;
    /** Default SGD learning rate. */
    public static final double DEFAULT_SGD_LR = 0.05;
    /** Default AdamW learning rate. */
    public static final double DEFAULT_ADAMW_LR = 1e-3;
    /** Default Transformer width. */
    public static final int LM_HIDDEN = 128;
    /** Default Transformer blocks. */
    public static final int LM_LAYERS = 4;
    /** Default Transformer attention heads. */
    public static final int LM_HEADS = 4;
    /** Default Transformer context length. */
    public static final int LM_BLOCK_SIZE = 64;
    /** Default Transformer batch size. */
    public static final int LM_BATCH_SIZE = 32;
    /** Default number of first steps whose memory history is recorded. */
    public static final int DEFAULT_HISTORY_STEPS = 5;

    private final ModelKind model;
    private final int hidden;
    private final int layers;
    private final int epochs;
    private final int batchSize;
    private final double lr;
    private final OptimizerKind optimizer;
    private final String schedule;
    private final double momentum;
    private final double weightDecay;
    private final long seed;
    private final int limit;
    private final int testLimit;
    private final int prefetch;
    private final boolean pinMemory;
    private final int historySteps;
    private final int maxSteps;
    private final int blockSize;
    private final int heads;
    private final int checkpoint;
    private final Precision amp;
    private final int accumulate;
    private final int microBatch;
    private final SDPBackend attention;

    private TrainOptions(Builder b) {
        model = b.model;
        hidden = b.hidden;
        layers = b.layers;
        epochs = b.epochs;
        batchSize = b.batchSize;
        lr = b.lr;
        optimizer = b.optimizer;
        schedule = b.schedule;
        momentum = b.momentum;
        weightDecay = b.weightDecay;
        seed = b.seed;
        limit = b.limit;
        testLimit = b.testLimit;
        prefetch = b.prefetch;
        pinMemory = b.pinMemory;
        historySteps = b.historySteps;
        maxSteps = b.maxSteps;
        blockSize = b.blockSize;
        heads = b.heads;
        checkpoint = b.checkpoint;
        amp = b.amp;
        accumulate = b.accumulate;
        microBatch = b.microBatch;
        attention = b.attention;
        check();
    }

    /** Checks every setting; the messages name the {@code train} command's options. */
    private void check() {
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(optimizer, "optimizer");
        Objects.requireNonNull(schedule, "schedule");
        Objects.requireNonNull(amp, "amp");
        Objects.requireNonNull(attention, "attention");
        if (!schedule.equals("cosine") && !schedule.equals("constant")) {
            throw new IllegalArgumentException("--schedule: unknown schedule '" + schedule + "'; expected cosine or constant");
        }
        positive("--hidden", hidden);
        if (layers < 0 || layers > 64) {
            throw new IllegalArgumentException("--layers must be between 0 and 64, got " + layers);
        }
        positive("--epochs", epochs);
        positive("--batch-size", batchSize);
        if (!(lr > 0) || !Double.isFinite(lr)) {
            throw new IllegalArgumentException("--lr must be a positive number, got " + lr);
        }
        if (!(momentum >= 0 && momentum < 1)) {
            throw new IllegalArgumentException("--momentum must be in [0, 1), got " + momentum);
        }
        if (!(weightDecay >= 0) || !Double.isFinite(weightDecay)) {
            throw new IllegalArgumentException("--weight-decay must be a non-negative number, got " + weightDecay);
        }
        nonNegative("--limit", limit);
        nonNegative("--test-limit", testLimit);
        nonNegative("--prefetch", prefetch);
        nonNegative("--history-steps", historySteps);
        nonNegative("--max-steps", maxSteps);
        positive("--block-size", blockSize);
        positive("--heads", heads);
        if (model == ModelKind.TRANSFORMER && hidden % heads != 0) {
            throw new IllegalArgumentException("--heads " + heads + " must divide the model width --hidden " + hidden);
        }
        if (model == ModelKind.TRANSFORMER && layers < 1) {
            throw new IllegalArgumentException("--layers must be at least 1 for the transformer, got " + layers);
        }
        if (checkpoint < 0) {
            throw new IllegalArgumentException("--checkpoint must be a number of segments >= 1 (or 0 for off), got " + checkpoint);
        }
        positive("--accumulate", accumulate);
        nonNegative("--micro-batch", microBatch);
        if (microBatch > batchSize) {
            throw new IllegalArgumentException("--micro-batch " + microBatch + " is larger than --batch-size " + batchSize);
        }
    }

    /** @return a builder holding {@link #defaults()} */
    public static Builder builder() {
        return new Builder();
    }

    /** @return a builder holding these settings */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /** @return the defaults: MLP 784-512-512-10, 3 epochs, batch 128, SGD lr 0.05 momentum 0.9, seed 42 */
    public static TrainOptions defaults() {
        return builder().build();
    }

    /**
     * The defaults of a model: {@link #defaults()} for the MLP; for the Transformer a 4-block GPT of width
     * 128 with 4 heads and a 64-character context, AdamW lr 1e-3 weight decay 0.01 (cosine schedule), batch 32,
     * 1 epoch, validation on the first 256 windows of the held-out text.
     *
     * @param model the model
     * @return the defaults
     */
    public static TrainOptions defaults(ModelKind model) {
        Builder b = builder().model(model);
        if (model == ModelKind.TRANSFORMER) {
            b.hidden(LM_HIDDEN).layers(LM_LAYERS).batchSize(LM_BATCH_SIZE).epochs(1).optimizer(OptimizerKind.ADAMW)
                    .lr(DEFAULT_ADAMW_LR).weightDecay(OptimizerKind.ADAMW.defaultWeightDecay()).testLimit(256);
        }
        return b.build();
    }

    /** @return true for the character-level Transformer */
    public boolean isTransformer() {
        return model == ModelKind.TRANSFORMER;
    }

    private static void positive(String name, long v) {
        if (v < 1) {
            throw new IllegalArgumentException(name + " must be at least 1, got " + v);
        }
    }

    private static void nonNegative(String name, long v) {
        if (v < 0) {
            throw new IllegalArgumentException(name + " must not be negative, got " + v);
        }
    }

    /** @return the model */
    public ModelKind model() {
        return model;
    }

    /** @return width of each hidden layer (mlp) or the model width {@code n_embd} (transformer) */
    public int hidden() {
        return hidden;
    }

    /** @return hidden layers (mlp; 0: a linear classifier) or Transformer blocks */
    public int layers() {
        return layers;
    }

    /** @return passes over the training set */
    public int epochs() {
        return epochs;
    }

    /** @return samples per step */
    public int batchSize() {
        return batchSize;
    }

    /** @return learning rate */
    public double lr() {
        return lr;
    }

    /** @return the optimizer */
    public OptimizerKind optimizer() {
        return optimizer;
    }

    /** @return learning-rate schedule: {@code cosine} or {@code constant} */
    public String schedule() {
        return schedule;
    }

    /** @return SGD momentum (ignored by AdamW) */
    public double momentum() {
        return momentum;
    }

    /** @return weight decay (decoupled for AdamW, L2 for SGD) */
    public double weightDecay() {
        return weightDecay;
    }

    /** @return seed of the weight initialization and the shuffling */
    public long seed() {
        return seed;
    }

    /** @return training samples to use (0: all) */
    public int limit() {
        return limit;
    }

    /** @return test samples to use (0: all) */
    public int testLimit() {
        return testLimit;
    }

    /**
     * @return whether batches go through pinned memory and a side-stream copy on an accelerator (the mlp on
     *     {@code cuda}); true by default
     */
    public boolean pinMemory() {
        return pinMemory;
    }

    /** @return batches prefetched (0: no loader thread) */
    public int prefetch() {
        return prefetch;
    }

    /** @return first steps whose memory history is recorded (0: none) */
    public int historySteps() {
        return historySteps;
    }

    /** @return steps after which training stops (0: no limit) */
    public int maxSteps() {
        return maxSteps;
    }

    /** @return transformer context length, in characters */
    public int blockSize() {
        return blockSize;
    }

    /** @return transformer attention heads */
    public int heads() {
        return heads;
    }

    /** @return checkpoint segments (0: off) */
    public int checkpoint() {
        return checkpoint;
    }

    /** @return mixed precision */
    public Precision amp() {
        return amp;
    }

    /** @return batches per optimizer step (1: off) */
    public int accumulate() {
        return accumulate;
    }

    /** @return samples per micro-batch (0: off) */
    public int microBatch() {
        return microBatch;
    }

    /** @return the attention backend of the transformer ({@link SDPBackend#FLASH_ATTENTION} by default) */
    public SDPBackend attention() {
        return attention;
    }

    /**
     * @param v the model
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withModel(ModelKind v) {
        return toBuilder().model(v).build();
    }

    /**
     * @param v width of each hidden layer (mlp) or the model width {@code n_embd} (transformer)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withHidden(int v) {
        return toBuilder().hidden(v).build();
    }

    /**
     * @param v hidden layers (mlp; 0: a linear classifier) or Transformer blocks
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withLayers(int v) {
        return toBuilder().layers(v).build();
    }

    /**
     * @param v passes over the training set
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withEpochs(int v) {
        return toBuilder().epochs(v).build();
    }

    /**
     * @param v samples per step
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withBatchSize(int v) {
        return toBuilder().batchSize(v).build();
    }

    /**
     * @param v learning rate
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withLr(double v) {
        return toBuilder().lr(v).build();
    }

    /**
     * @param v the optimizer
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withOptimizer(OptimizerKind v) {
        return toBuilder().optimizer(v).build();
    }

    /**
     * @param v learning-rate schedule: {@code cosine} or {@code constant}
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withSchedule(String v) {
        return toBuilder().schedule(v).build();
    }

    /**
     * @param v SGD momentum (ignored by AdamW)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withMomentum(double v) {
        return toBuilder().momentum(v).build();
    }

    /**
     * @param v weight decay (decoupled for AdamW, L2 for SGD)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withWeightDecay(double v) {
        return toBuilder().weightDecay(v).build();
    }

    /**
     * @param v seed of the weight initialization and the shuffling
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withSeed(long v) {
        return toBuilder().seed(v).build();
    }

    /**
     * @param v training samples to use (0: all)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withLimit(int v) {
        return toBuilder().limit(v).build();
    }

    /**
     * @param v test samples to use (0: all)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withTestLimit(int v) {
        return toBuilder().testLimit(v).build();
    }

    /**
     * @param v batches prefetched (0: no loader thread)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withPrefetch(int v) {
        return toBuilder().prefetch(v).build();
    }

    /**
     * @param v whether batches go through pinned memory and a side-stream copy on an accelerator
     * @return a copy with it
     */
    public TrainOptions withPinMemory(boolean v) {
        return toBuilder().pinMemory(v).build();
    }

    /**
     * @param v first steps whose memory history is recorded (0: none)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withHistorySteps(int v) {
        return toBuilder().historySteps(v).build();
    }

    /**
     * @param v steps after which training stops (0: no limit)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withMaxSteps(int v) {
        return toBuilder().maxSteps(v).build();
    }

    /**
     * @param v transformer context length, in characters
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withBlockSize(int v) {
        return toBuilder().blockSize(v).build();
    }

    /**
     * @param v transformer attention heads
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withHeads(int v) {
        return toBuilder().heads(v).build();
    }

    /**
     * @param v checkpoint segments (0: off)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withCheckpoint(int v) {
        return toBuilder().checkpoint(v).build();
    }

    /**
     * @param v mixed precision
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withAmp(Precision v) {
        return toBuilder().amp(v).build();
    }

    /**
     * @param v batches per optimizer step (1: off)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withAccumulate(int v) {
        return toBuilder().accumulate(v).build();
    }

    /**
     * @param v samples per micro-batch (0: off)
     * @return a copy with it
     * @throws IllegalArgumentException if the copy's settings are invalid
     */
    public TrainOptions withMicroBatch(int v) {
        return toBuilder().microBatch(v).build();
    }

    /**
     * @param v the attention backend
     * @return a copy with it
     */
    public TrainOptions withAttention(SDPBackend v) {
        return toBuilder().attention(v).build();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TrainOptions t && model == t.model && hidden == t.hidden && layers == t.layers && epochs == t.epochs
                && batchSize == t.batchSize && Double.compare(lr, t.lr) == 0 && optimizer == t.optimizer && schedule.equals(t.schedule)
                && Double.compare(momentum, t.momentum) == 0 && Double.compare(weightDecay, t.weightDecay) == 0 && seed == t.seed
                && limit == t.limit && testLimit == t.testLimit && prefetch == t.prefetch && pinMemory == t.pinMemory && historySteps == t.historySteps
                && maxSteps == t.maxSteps && blockSize == t.blockSize && heads == t.heads && checkpoint == t.checkpoint
                && amp == t.amp && accumulate == t.accumulate && microBatch == t.microBatch
                && attention == t.attention;
    }

    @Override
    public int hashCode() {
        return Objects.hash(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, pinMemory, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch, attention);
    }

    @Override
    public String toString() {
        return "TrainOptions[" + "model=" + model + ", " + "hidden=" + hidden + ", " + "layers=" + layers + ", " + "epochs=" + epochs + ", " + "batchSize=" + batchSize + ", " + "lr=" + lr + ", " + "optimizer=" + optimizer + ", " + "schedule=" + schedule + ", " + "momentum=" + momentum + ", " + "weightDecay=" + weightDecay + ", " + "seed=" + seed + ", " + "limit=" + limit + ", " + "testLimit=" + testLimit + ", " + "prefetch=" + prefetch + ", " + "pinMemory=" + pinMemory + ", " + "historySteps=" + historySteps + ", " + "maxSteps=" + maxSteps + ", " + "blockSize=" + blockSize + ", " + "heads=" + heads + ", " + "checkpoint=" + checkpoint + ", " + "amp=" + amp + ", " + "accumulate=" + accumulate + ", " + "microBatch=" + microBatch + ", " + "attention=" + attention + "]";
    }

    /**
     * The learning rate of a step under the schedule.
     *
     * @param step the step, from 0
     * @param totalSteps steps in the whole run, at least 1
     * @return the learning rate for that step
     */
    public double learningRate(long step, long totalSteps) {
        if (schedule.equals("constant") || totalSteps <= 1) {
            return lr;
        }
        double t = Math.min(1.0, (double) step / totalSteps);
        return lr * 0.5 * (1 + Math.cos(Math.PI * t));
    }

    /**
     * @param inputs features per sample
     * @param classes number of classes
     * @return the layer widths, e.g. {@code [784, 512, 512, 10]}
     */
    public int[] widths(int inputs, int classes) {
        int[] w = new int[layers + 2];
        w[0] = inputs;
        for (int i = 1; i <= layers; i++) {
            w[i] = hidden;
        }
        w[layers + 1] = classes;
        return w;
    }

    /** @return e.g. {@code "mlp 784-512-512-10 relu, sgd lr 0.05 momentum 0.9, batch 128, 3 epochs"} */
    public String describe(int inputs, int classes) {
        StringBuilder sb = new StringBuilder(model.toString()).append(' ');
        if (isTransformer()) {
            sb.append(layers).append(layers == 1 ? " block" : " blocks").append(" of width ").append(hidden).append(", ")
                    .append(heads).append(" heads, context ").append(blockSize).append(", vocabulary ").append(classes);
        } else {
            int[] w = widths(inputs, classes);
            for (int i = 0; i < w.length; i++) {
                sb.append(i == 0 ? "" : "-").append(w[i]);
            }
            sb.append(layers > 0 ? " relu" : "");
        }
        sb.append(", ").append(optimizer).append(" lr ").append(fmt(lr));
        if (optimizer == OptimizerKind.SGD && momentum > 0) {
            sb.append(" momentum ").append(fmt(momentum));
        }
        if (weightDecay > 0) {
            sb.append(" weight decay ").append(fmt(weightDecay));
        }
        sb.append(schedule.equals("cosine") ? ", cosine schedule" : "");
        sb.append(", batch ").append(batchSize).append(", ").append(epochs).append(epochs == 1 ? " epoch" : " epochs")
                .append(", seed ").append(seed);
        String t = techniques();
        if (!t.isEmpty()) {
            sb.append("; ").append(t);
        }
        return sb.toString();
    }

    /**
     * The batch size of evaluation: the samples a training step puts through the model at once (the micro-batch
     * when micro-batching, else the batch), so that a batch that trains also evaluates. (It was
     * {@code max(batchSize, 256)}, whose evaluation could need several times a training step's memory and ran
     * out of memory after a batch-size search.) {@link Trainer} evaluates at this size, the last batch of the
     * test set being smaller; every prediction (dry run, {@link BatchSizeFinder}) includes evaluation.
     *
     * @return samples per evaluation batch
     */
    public int evalBatchSize() {
        return microBatch > 0 ? microBatch : batchSize;
    }

    /** @return the memory-saving techniques in words, e.g. {@code "checkpointing (2 segments), bf16 autocast"}; empty when none */
    public String techniques() {
        java.util.List<String> parts = new java.util.ArrayList<>();
        if (checkpoint > 0) {
            parts.add("checkpointing (" + checkpoint + (checkpoint == 1 ? " segment)" : " segments)"));
        }
        if (amp != Precision.OFF) {
            parts.add(amp + " autocast" + (amp == Precision.FP16 ? " with GradScaler" : ""));
        }
        if (accumulate > 1) {
            parts.add("accumulation x" + accumulate);
        }
        if (microBatch > 0) {
            parts.add("micro-batches of " + microBatch);
        }
        if (model == ModelKind.TRANSFORMER && attention == SDPBackend.MATH) {
            parts.add("unfused (math) attention");
        }
        return String.join(", ", parts);
    }

    /**
     * Collects settings for {@link TrainOptions}, starting from {@link TrainOptions#defaults()}; {@link #build()}
     * checks them all. Not thread-safe; each setter returns this builder.
     */
    public static final class Builder {
        private ModelKind model = ModelKind.MLP;
        private int hidden = DEFAULT_HIDDEN;
        private int layers = DEFAULT_LAYERS;
        private int epochs = DEFAULT_EPOCHS;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private double lr = DEFAULT_SGD_LR;
        private OptimizerKind optimizer = OptimizerKind.SGD;
        private String schedule = "cosine";
        private double momentum = 0.9;
        private double weightDecay = 0.0;
        private long seed = 42;
        private int limit = 0;
        private int testLimit = 0;
        private int prefetch = 2;
        private boolean pinMemory = true;
        private int historySteps = DEFAULT_HISTORY_STEPS;
        private int maxSteps = 0;
        private int blockSize = LM_BLOCK_SIZE;
        private int heads = LM_HEADS;
        private int checkpoint = 0;
        private Precision amp = Precision.OFF;
        private int accumulate = 1;
        private int microBatch = 0;
        private SDPBackend attention = SDPBackend.FLASH_ATTENTION;

        private Builder() {
        }

        private Builder(TrainOptions o) {
            model = o.model;
            hidden = o.hidden;
            layers = o.layers;
            epochs = o.epochs;
            batchSize = o.batchSize;
            lr = o.lr;
            optimizer = o.optimizer;
            schedule = o.schedule;
            momentum = o.momentum;
            weightDecay = o.weightDecay;
            seed = o.seed;
            limit = o.limit;
            testLimit = o.testLimit;
            prefetch = o.prefetch;
            pinMemory = o.pinMemory;
            historySteps = o.historySteps;
            maxSteps = o.maxSteps;
            blockSize = o.blockSize;
            heads = o.heads;
            checkpoint = o.checkpoint;
            amp = o.amp;
            accumulate = o.accumulate;
            microBatch = o.microBatch;
            attention = o.attention;
        }

        /**
         * @param v the model
         * @return this builder
         */
        public Builder model(ModelKind v) {
            model = v;
            return this;
        }

        /**
         * @param v width of each hidden layer (mlp) or the model width {@code n_embd} (transformer)
         * @return this builder
         */
        public Builder hidden(int v) {
            hidden = v;
            return this;
        }

        /**
         * @param v hidden layers (mlp; 0: a linear classifier) or Transformer blocks
         * @return this builder
         */
        public Builder layers(int v) {
            layers = v;
            return this;
        }

        /**
         * @param v passes over the training set
         * @return this builder
         */
        public Builder epochs(int v) {
            epochs = v;
            return this;
        }

        /**
         * @param v samples per step
         * @return this builder
         */
        public Builder batchSize(int v) {
            batchSize = v;
            return this;
        }

        /**
         * @param v learning rate
         * @return this builder
         */
        public Builder lr(double v) {
            lr = v;
            return this;
        }

        /**
         * @param v the optimizer
         * @return this builder
         */
        public Builder optimizer(OptimizerKind v) {
            optimizer = v;
            return this;
        }

        /**
         * @param v learning-rate schedule: {@code cosine} or {@code constant}, in any case
         * @return this builder
         * @throws NullPointerException if {@code v} is null
         */
        public Builder schedule(String v) {
            schedule = v.toLowerCase(Locale.ROOT);
            return this;
        }

        /**
         * @param v SGD momentum (ignored by AdamW)
         * @return this builder
         */
        public Builder momentum(double v) {
            momentum = v;
            return this;
        }

        /**
         * @param v weight decay (decoupled for AdamW, L2 for SGD)
         * @return this builder
         */
        public Builder weightDecay(double v) {
            weightDecay = v;
            return this;
        }

        /**
         * @param v seed of the weight initialization and the shuffling
         * @return this builder
         */
        public Builder seed(long v) {
            seed = v;
            return this;
        }

        /**
         * @param v training samples to use (0: all)
         * @return this builder
         */
        public Builder limit(int v) {
            limit = v;
            return this;
        }

        /**
         * @param v test samples to use (0: all)
         * @return this builder
         */
        public Builder testLimit(int v) {
            testLimit = v;
            return this;
        }

        /**
         * @param v batches prefetched (0: no loader thread)
         * @return this builder
         */
        public Builder prefetch(int v) {
            prefetch = v;
            return this;
        }

        /**
         * @param v whether batches go through pinned memory and a side-stream copy on an accelerator (default true)
         * @return this builder
         */
        public Builder pinMemory(boolean v) {
            pinMemory = v;
            return this;
        }

        /**
         * @param v first steps whose memory history is recorded (0: none)
         * @return this builder
         */
        public Builder historySteps(int v) {
            historySteps = v;
            return this;
        }

        /**
         * @param v steps after which training stops (0: no limit)
         * @return this builder
         */
        public Builder maxSteps(int v) {
            maxSteps = v;
            return this;
        }

        /**
         * @param v transformer context length, in characters
         * @return this builder
         */
        public Builder blockSize(int v) {
            blockSize = v;
            return this;
        }

        /**
         * @param v transformer attention heads
         * @return this builder
         */
        public Builder heads(int v) {
            heads = v;
            return this;
        }

        /**
         * @param v checkpoint segments (0: off)
         * @return this builder
         */
        public Builder checkpoint(int v) {
            checkpoint = v;
            return this;
        }

        /**
         * @param v mixed precision
         * @return this builder
         */
        public Builder amp(Precision v) {
            amp = v;
            return this;
        }

        /**
         * @param v batches per optimizer step (1: off)
         * @return this builder
         */
        public Builder accumulate(int v) {
            accumulate = v;
            return this;
        }

        /**
         * @param v samples per micro-batch (0: off)
         * @return this builder
         */
        public Builder microBatch(int v) {
            microBatch = v;
            return this;
        }

        /**
         * @param v the transformer's attention backend
         * @return this builder
         */
        public Builder attention(SDPBackend v) {
            attention = v;
            return this;
        }

        /**
         * @return the options
         * @throws IllegalArgumentException naming the {@code train} option of the first invalid setting
         * @throws NullPointerException if the model, optimizer, schedule or precision is null
         */
        public TrainOptions build() {
            return new TrainOptions(this);
        }
    }

    private static String fmt(double v) {
        String s = Double.toString(v);
        return s.endsWith(".0") ? s.substring(0, s.length() - 2) : s;
    }
}
