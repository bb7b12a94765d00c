package io.vram4j.train;

import io.vram4j.autograd.NoGrad;
import io.vram4j.data.Batch;
import io.vram4j.nn.Module;
import io.vram4j.optim.AdamW;
import io.vram4j.optim.Optimizer;
import io.vram4j.optim.SGD;
import io.vram4j.data.CharVocabulary;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.SdpaKernel;
import io.vram4j.tensor.Tensor;

/**
 * The training step shared by the models, with the memory-saving techniques of {@link TrainOptions}, built on
 * the technique library: the forward pass and loss run in an {@link io.vram4j.amp.Autocast} region for
 * {@code --amp}; subclasses run their layers through {@link Checkpoint#checkpointSequential} for
 * {@code --checkpoint}; a batch is split by {@link MicroBatcher} for {@code --micro-batch} (each micro-batch's
 * loss weighted by its share of the batch, its activations freed before the next starts); and
 * {@link GradientAccumulation} divides the loss by {@code --accumulate N}, scales it with the fp16
 * {@link io.vram4j.amp.GradScaler}, and steps the optimizer every {@code N}-th batch, dropping the gradients
 * afterwards ({@code zero_grad(set_to_none=True)}).
 */
abstract class ModelNetwork implements Network {
    final Device dev;
    final TrainOptions options;
    final Module model;
    final Optimizer optimizer;
    final Techniques techniques;
    private final GradientAccumulation accumulation;
    private int pendingBatches;
    private boolean closed;

    /**
     * The network of {@code options}' model: the character-level Transformer when a vocabulary is given, else the
     * MLP.
     *
     * @param dev the device (owned: closed with the network, which does not close its allocator)
     * @param features floats per sample (mlp; the transformer's windows are {@code blockSize() + 1} tokens)
     * @param classes number of classes (mlp)
     * @param vocabulary the characters (transformer), or null (mlp)
     */
    static ModelNetwork create(Device dev, TrainOptions options, int features, int classes, CharVocabulary vocabulary) {
        return vocabulary != null ? new CharTransformer(dev, options, vocabulary) : new TensorMlp(dev, options, features, classes);
    }

    /**
     * @param dev the device (owned: closed with the network, which does not close its allocator)
     * @param options the settings
     * @param model the model (closed with the network, also when this constructor fails)
     */
    ModelNetwork(Device dev, TrainOptions options, Module model) {
        this.dev = dev;
        this.options = options;
        this.model = model;
        try {
            float lr = (float) options.lr();
            float wd = (float) options.weightDecay();
            this.optimizer = options.optimizer() == OptimizerKind.ADAMW
                    ? new AdamW(model.parameters(), lr, 0.9f, 0.999f, 1e-8f, wd)
                    : new SGD(model.parameters(), lr, (float) options.momentum(), wd);
            this.techniques = Techniques.of(options, optimizer);
            this.accumulation = new GradientAccumulation(optimizer, options.accumulate(), techniques.scaler());
        } catch (RuntimeException | Error e) {
            model.close();
            throw e;
        }
    }

    /**
     * The model's input and targets for samples {@code [from, from + count)} of a batch.
     *
     * @return {@code {input, targets}}, created in the caller's scope
     */
    abstract Tensor[] tensors(Batch batch, int from, int count);

    /**
     * The forward pass, with checkpointing when {@link TrainOptions#checkpoint()} is on.
     *
     * @param input the model's input
     * @param training true in a training step (checkpointing applies), false for evaluation
     * @return the logits
     */
    abstract Tensor logits(Tensor input, boolean training);

    /** @return how many predictions (samples or tokens) one sample contributes to the statistics */
    abstract int predictionsPerSample();

    @Override
    public long parameters() {
        return model.parameterCount();
    }

    @Override
    public void setLearningRate(double lr) {
        optimizer.setLr((float) lr);
    }

    /** @return the model */
    Module module() {
        return model;
    }

    /**
     * The model's input and targets for {@code count} samples whose values are unspecified, allocated as
     * {@link #tensors} allocates them (same dtypes, shapes and order), on a {@code sim} device.
     *
     * @return {@code {input, targets}}, created in the caller's scope
     */
    abstract Tensor[] placeholders(int count);

    @Override
    public StepStats trainStep(Batch batch) {
        return trainStep(() -> tensors(batch, 0, batch.size()), batch.size());
    }

    @Override
    public StepStats trainStep(io.vram4j.data.DeviceBatch batch) {
        return trainStep(() -> tensors(batch), batch.size());
    }

    @Override
    public StepStats evaluate(io.vram4j.data.DeviceBatch batch) {
        return evaluate(() -> tensors(batch), batch.size());
    }

    /**
     * The model's input and targets from a batch on the device: the features and labels themselves (the mlp).
     *
     * @throws UnsupportedOperationException for a model that makes its inputs otherwise
     */
    Tensor[] tensors(io.vram4j.data.DeviceBatch batch) {
        return new Tensor[] {batch.x(), batch.y()};
    }

    @Override
    public StepStats simulatedTrainStep(int samples) {
        requireSimulated();
        return trainStep(() -> placeholders(samples), samples);
    }

    @Override
    public StepStats simulatedEvaluate(int samples) {
        requireSimulated();
        return evaluate(() -> placeholders(samples), samples);
    }

    private void requireSimulated() {
        if (!dev.isSimulated()) {
            throw new IllegalStateException("simulated steps are for sim devices; " + dev + " computes");
        }
    }

    private StepStats trainStep(java.util.function.Supplier<Tensor[]> inputs, int size) {
        ensureOpen();
        model.train();
        double[] lossSum = {0};
        int[] correct = {0};
        // the attention backend holds for the backward pass too: checkpointing recomputes the forward there
        try (MemoryScope scope = MemoryScope.open(); SdpaKernel attention = SdpaKernel.enable(options.attention())) {
            Tensor[] xy = inputs.get();
            if (options.microBatch() > 0 && options.microBatch() < size) {
                // micro-batches: each weighted by its share of the batch, gradients summed; then one accumulation step
                MicroBatcher.accumulate(options.microBatch(), mb -> {
                    Tensor[] lossAndLogits = forwardLoss(mb[0], mb[1], true);
                    StepStats s = stats(lossAndLogits[1], lossAndLogits[0], mb[1], mb[0].size(0));
                    lossSum[0] += s.lossSum();
                    correct[0] += s.correct();
                    Tensor loss = lossAndLogits[0];
                    return options.accumulate() == 1 ? loss : loss.div(options.accumulate());
                }, techniques.scaler(), xy[0], xy[1]);
                if (++pendingBatches >= options.accumulate()) {
                    pendingBatches = 0;
                    accumulation.step();
                }
            } else {
                Tensor[] lossAndLogits = forwardLoss(xy[0], xy[1], true);
                // the predictions are taken now, read once the backward pass and the step are queued: the host
                // waits for the device only at the step's end, as loss.item() after optimizer.step() in PyTorch
                try (Readback pending = readback(lossAndLogits[1], lossAndLogits[0], xy[1], size)) {
                    accumulation.backward(lossAndLogits[0]); // divides by N, steps every N-th batch, zero_grad(set_to_none)
                    StepStats s = pending.read();
                    lossSum[0] += s.lossSum();
                    correct[0] += s.correct();
                }
            }
        }
        return new StepStats(lossSum[0], correct[0], size * predictionsPerSample());
    }

    /** Forward and loss inside the autocast region; returns {@code {loss, logits}} in the caller's scope. */
    private Tensor[] forwardLoss(Tensor x, Tensor y, boolean training) {
        try (AutoCloseable autocast = techniques.autocast()) {
            Tensor logits = logits(x, training);
            return new Tensor[] {Functional.crossEntropy(logits, y), logits};
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public StepStats evaluate(Batch batch) {
        return evaluate(() -> tensors(batch, 0, batch.size()), batch.size());
    }

    private StepStats evaluate(java.util.function.Supplier<Tensor[]> inputs, int size) {
        ensureOpen();
        model.eval();
        try (NoGrad noGrad = NoGrad.enter(); MemoryScope scope = MemoryScope.open();
             SdpaKernel attention = SdpaKernel.enable(options.attention())) {
            Tensor[] xy = inputs.get();
            Tensor[] lossAndLogits = forwardLoss(xy[0], xy[1], false); // in the training's precision, as torch.autocast around both
            return stats(lossAndLogits[1], lossAndLogits[0], xy[1], size);
        }
    }

    /**
     * @return loss summed over predictions and correct predictions, read at once (see {@link Readback#read})
     */
    private StepStats stats(Tensor logits, Tensor loss, Tensor targets, int samples) {
        try (Readback pending = readback(logits, loss, targets, samples)) {
            return pending.read();
        }
    }

    /** @return the step's predictions ({@code logits}' argmax, on the device), to be read with its loss later */
    private Readback readback(Tensor logits, Tensor loss, Tensor targets, int samples) {
        try (NoGrad noGrad = NoGrad.enter()) {
            return new Readback(logits.argmax(-1, false), loss, targets, samples * predictionsPerSample());
        }
    }

    /**
     * What a step reads back: its predictions (owned, closed with this), loss and targets (the caller's).
     *
     * @param n predictions in the batch
     */
    private record Readback(Tensor argmax, Tensor loss, Tensor targets, int n) implements AutoCloseable {
        /**
         * @return loss summed over predictions and correct predictions (NaN and 0 on {@code sim}, where the argmax
         *     is allocated all the same, so that a simulated step allocates exactly as a real one; reading the
         *     values back allocates no device memory, and the sim synchronizes the compute stream as reading back
         *     does)
         */
        StepStats read() {
            Device dev = argmax.device();
            if (dev.isSimulated()) {
                // the read-back below waits for the compute stream (HostAccess): so does the sim, so that the
                // events of blocks used by it (recordStream, e.g. batches from a side stream) complete as there
                dev.stream().synchronize();
                return new StepStats(Double.NaN, 0, n);
            }
            long[] predicted = argmax.toLongArray();
            long[] truth = targets.toLongArray();
            int correct = 0;
            for (int i = 0; i < predicted.length; i++) {
                if (predicted[i] == truth[i]) {
                    correct++;
                }
            }
            return new StepStats((double) loss.item() * n, correct, n);
        }

        @Override
        public void close() {
            argmax.close();
        }
    }

    /** @return the loss scaler's statistics, or null without fp16 */
    Techniques.ScalerStats scalerStats() {
        return techniques.scalerStats();
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("network closed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            optimizer.close();
        } finally {
            try {
                model.close();
            } finally {
                dev.close();
            }
        }
    }
}
