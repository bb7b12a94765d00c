package io.vram4j.train;

import java.util.Locale;
import java.util.Objects;

/**
 * What {@link Trainer} trains and how: the model (an MLP or a character-level Transformer), the optimizer,
 * the batches, the memory-saving techniques (activation checkpointing, mixed precision, gradient accumulation,
 * micro-batching), and how much memory history to record. Immutable; the {@code with…} methods return modified copies and check their argument,
 * naming the setting in the exception (with the spelling of the {@code train} command's option).
 *
 * <p>The defaults reach about 88–89% test accuracy on the full Fashion-MNIST in 3 epochs: a 784-512-512-10
 * ReLU MLP trained by SGD with momentum 0.9, learning rate 0.05, batch size 128.
 *
 * @param model        {@code "mlp"} or {@code "transformer"} (a GPT-style character-level language model)
 * @param hidden       width of each hidden layer (mlp) or the model width {@code n_embd} (transformer)
 * @param layers       number of hidden layers (mlp; 0: a linear classifier) or Transformer blocks
 * @param epochs       passes over the training set
 * @param batchSize    samples per step
 * @param lr           learning rate
 * @param optimizer    {@code "sgd"} (with momentum) or {@code "adamw"}
 * @param schedule     learning-rate schedule: {@code "cosine"} (from {@code lr} down to 0 over all steps, per
 *                     step, as {@code CosineAnnealingLR} with {@code T_max} = total steps) or {@code "constant"}
 * @param momentum     SGD momentum (ignored by AdamW)
 * @param weightDecay  weight decay (decoupled for AdamW, L2 for SGD)
 * @param seed         seed of the weight initialization and the shuffling
 * @param limit        train on the first {@code limit} samples only (0: all)
 * @param testLimit    evaluate on the first {@code testLimit} test samples only (0: all)
 * @param prefetch     batches the data loader assembles ahead on its thread (0: none)
 * @param historySteps record the allocator's memory history (with Java stacks) for this many first steps,
 *                     then take a snapshot and stop recording (0: none)
 * @param maxSteps     stop after this many steps in all (0: no limit); for quick runs and tests
 * @param blockSize    context length of the transformer, in characters (ignored by the mlp)
 * @param heads        attention heads of the transformer; must divide {@code hidden} (ignored by the mlp)
 * @param checkpoint   activation checkpointing: 0 off, else the number of segments the blocks (transformer)
 *                     or layers (mlp) are checkpointed in, as {@code checkpoint_sequential(segments)}
 * @param amp          mixed precision: {@code "off"}, {@code "bf16"} (autocast to bfloat16) or {@code "fp16"}
 *                     (autocast to float16 with a dynamic {@code GradScaler})
 * @param accumulate   gradient accumulation: an optimizer step every {@code accumulate} batches, each batch's
 *                     loss divided by {@code accumulate} (1: off)
 * @param microBatch   split every batch into micro-batches of this many samples whose gradients are summed
 *                     before the optimizer step (0: off)
 */
public record TrainOptions(String model, int hidden, int layers, int epochs, int batchSize, double lr,
                           String optimizer, String schedule, double momentum, double weightDecay, long seed, int limit,
                           int testLimit, int prefetch, int historySteps, int maxSteps, int blockSize, int heads,
                           int checkpoint, String amp, int accumulate, int microBatch) {
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

    /** Checks every setting. */
    public TrainOptions {
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(optimizer, "optimizer");
        model = model.toLowerCase(Locale.ROOT);
        optimizer = optimizer.toLowerCase(Locale.ROOT);
        Objects.requireNonNull(schedule, "schedule");
        schedule = schedule.toLowerCase(Locale.ROOT);
        if (!schedule.equals("cosine") && !schedule.equals("constant")) {
            throw new IllegalArgumentException("--schedule: unknown schedule '" + schedule + "'; expected cosine or constant");
        }
        if (!model.equals("mlp") && !model.equals("transformer")) {
            throw new IllegalArgumentException("--model: unknown model '" + model + "'; expected mlp or transformer");
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
        if (!optimizer.equals("sgd") && !optimizer.equals("adamw")) {
            throw new IllegalArgumentException("--optimizer: unknown optimizer '" + optimizer + "'; expected sgd or adamw");
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
        if (model.equals("transformer") && hidden % heads != 0) {
            throw new IllegalArgumentException("--heads " + heads + " must divide the model width --hidden " + hidden);
        }
        if (model.equals("transformer") && layers < 1) {
            throw new IllegalArgumentException("--layers must be at least 1 for the transformer, got " + layers);
        }
        if (checkpoint < 0) {
            throw new IllegalArgumentException("--checkpoint must be a number of segments >= 1 (or 0 for off), got " + checkpoint);
        }
        Objects.requireNonNull(amp, "amp");
        amp = amp.toLowerCase(Locale.ROOT);
        if (amp.equals("none") || amp.equals("fp32") || amp.equals("float32")) {
            amp = "off";
        }
        if (!amp.equals("off") && !amp.equals("bf16") && !amp.equals("fp16")) {
            throw new IllegalArgumentException("--amp: unknown precision '" + amp + "'; expected bf16 or fp16");
        }
        positive("--accumulate", accumulate);
        nonNegative("--micro-batch", microBatch);
        if (microBatch > batchSize) {
            throw new IllegalArgumentException("--micro-batch " + microBatch + " is larger than --batch-size " + batchSize);
        }
    }

    /** @return the defaults: MLP 784-512-512-10, 3 epochs, batch 128, SGD lr 0.05 momentum 0.9, seed 42 */
    public static TrainOptions defaults() {
        return new TrainOptions("mlp", DEFAULT_HIDDEN, DEFAULT_LAYERS, DEFAULT_EPOCHS, DEFAULT_BATCH_SIZE,
                DEFAULT_SGD_LR, "sgd", "cosine", 0.9, 0.0, 42, 0, 0, 2, DEFAULT_HISTORY_STEPS, 0,
                LM_BLOCK_SIZE, LM_HEADS, 0, "off", 1, 0);
    }

    /**
     * The defaults of a model: {@link #defaults()} for {@code mlp}; for {@code transformer} a 4-block GPT of width
     * 128 with 4 heads and a 64-character context, AdamW lr 1e-3 weight decay 0.01 (cosine schedule), batch 32,
     * 1 epoch, validation on the first 256 windows of the held-out text.
     *
     * @param model {@code mlp} or {@code transformer}
     * @return the defaults
     */
    public static TrainOptions defaults(String model) {
        TrainOptions d = defaults().withModel(model);
        if (d.model().equals("transformer")) {
            return d.withHidden(LM_HIDDEN).withLayers(LM_LAYERS).withBatchSize(LM_BATCH_SIZE).withEpochs(1)
                    .withOptimizer("adamw").withLr(DEFAULT_ADAMW_LR).withWeightDecay(0.01).withTestLimit(256);
        }
        return d;
    }

    /** @return true for the character-level Transformer */
    public boolean isTransformer() {
        return model.equals("transformer");
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

    /** @param v the model, {@code mlp} @return a copy with it */
    public TrainOptions withModel(String v) {
        return new TrainOptions(v, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v hidden width @return a copy with it */
    public TrainOptions withHidden(int v) {
        return new TrainOptions(model, v, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v hidden layers @return a copy with it */
    public TrainOptions withLayers(int v) {
        return new TrainOptions(model, hidden, v, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v epochs @return a copy with it */
    public TrainOptions withEpochs(int v) {
        return new TrainOptions(model, hidden, layers, v, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v batch size @return a copy with it */
    public TrainOptions withBatchSize(int v) {
        return new TrainOptions(model, hidden, layers, epochs, v, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v learning rate @return a copy with it */
    public TrainOptions withLr(double v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, v, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /**
     * @param v {@code sgd} or {@code adamw}
     * @return a copy with it (the learning rate unchanged)
     */
    public TrainOptions withOptimizer(String v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, v, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v {@code cosine} or {@code constant} @return a copy with it */
    public TrainOptions withSchedule(String v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, v, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v SGD momentum @return a copy with it */
    public TrainOptions withMomentum(double v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, v, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v weight decay @return a copy with it */
    public TrainOptions withWeightDecay(double v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, v, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v seed @return a copy with it */
    public TrainOptions withSeed(long v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, v, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v training samples to use (0: all) @return a copy with it */
    public TrainOptions withLimit(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, v, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v test samples to use (0: all) @return a copy with it */
    public TrainOptions withTestLimit(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, v, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v batches prefetched (0: no loader thread) @return a copy with it */
    public TrainOptions withPrefetch(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, v, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v first steps whose memory history is recorded (0: none) @return a copy with it */
    public TrainOptions withHistorySteps(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, v, maxSteps, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v steps after which training stops (0: no limit) @return a copy with it */
    public TrainOptions withMaxSteps(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, v, blockSize, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v transformer context length @return a copy with it */
    public TrainOptions withBlockSize(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, v, heads, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v transformer attention heads @return a copy with it */
    public TrainOptions withHeads(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, v, checkpoint, amp, accumulate, microBatch);
    }

    /** @param v checkpoint segments (0: off) @return a copy with it */
    public TrainOptions withCheckpoint(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, v, amp, accumulate, microBatch);
    }

    /** @param v {@code off}, {@code bf16} or {@code fp16} @return a copy with it */
    public TrainOptions withAmp(String v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, v, accumulate, microBatch);
    }

    /** @param v batches per optimizer step (1: off) @return a copy with it */
    public TrainOptions withAccumulate(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, v, microBatch);
    }

    /** @param v samples per micro-batch (0: off) @return a copy with it */
    public TrainOptions withMicroBatch(int v) {
        return new TrainOptions(model, hidden, layers, epochs, batchSize, lr, optimizer, schedule, momentum, weightDecay, seed, limit, testLimit, prefetch, historySteps, maxSteps, blockSize, heads, checkpoint, amp, accumulate, v);
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
        StringBuilder sb = new StringBuilder(model).append(' ');
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
        if (optimizer.equals("sgd") && momentum > 0) {
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
        if (!amp.equals("off")) {
            parts.add(amp + " autocast" + (amp.equals("fp16") ? " with GradScaler" : ""));
        }
        if (accumulate > 1) {
            parts.add("accumulation x" + accumulate);
        }
        if (microBatch > 0) {
            parts.add("micro-batches of " + microBatch);
        }
        return String.join(", ", parts);
    }

    private static String fmt(double v) {
        String s = Double.toString(v);
        return s.endsWith(".0") ? s.substring(0, s.length() - 2) : s;
    }
}
