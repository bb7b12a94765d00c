package io.vram4j.train;

import io.vram4j.autograd.NoGrad;
import io.vram4j.data.Batch;
import io.vram4j.nn.Module;
import io.vram4j.optim.AdamW;
import io.vram4j.optim.Optimizer;
import io.vram4j.optim.SGD;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

/**
 * The training step shared by the models, with the memory-saving techniques of {@link TrainOptions}: the batch
 * is split into micro-batches ({@link TrainOptions#microBatch()}), each micro-batch's loss is scaled by its
 * share of the batch and by {@code 1 / accumulate}, back-propagated (through the {@link Techniques}: autocast,
 * checkpointing, loss scaling), and the optimizer steps once every {@link TrainOptions#accumulate()} batches,
 * after which the gradients are dropped ({@code zero_grad(set_to_none=True)}). Each micro-batch runs in its own
 * {@link MemoryScope}, so its activations are freed before the next one starts.
 */
abstract class ModelNetwork implements Network {
    final Device dev;
    final TrainOptions options;
    final Module model;
    final Optimizer optimizer;
    final Techniques techniques;
    private int pendingBatches;
    private boolean closed;

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
            this.optimizer = options.optimizer().equals("adamw")
                    ? new AdamW(model.parameters(), lr, 0.9f, 0.999f, 1e-8f, wd)
                    : new SGD(model.parameters(), lr, (float) options.momentum(), wd);
            this.techniques = Techniques.of(options, optimizer);
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

    @Override
    public StepStats trainStep(Batch batch) {
        ensureOpen();
        model.train();
        int micro = options.microBatch() > 0 ? Math.min(options.microBatch(), batch.size()) : batch.size();
        double lossSum = 0;
        int correct = 0;
        for (int from = 0; from < batch.size(); from += micro) {
            int count = Math.min(micro, batch.size() - from);
            try (MemoryScope scope = MemoryScope.open()) {
                Tensor[] xy = tensors(batch, from, count);
                Tensor logits;
                Tensor loss;
                try (AutoCloseable autocast = techniques.autocast()) {
                    logits = logits(xy[0], true);
                    loss = Functional.crossEntropy(logits, xy[1]);
                }
                float share = (float) count / batch.size() / options.accumulate();
                Tensor scaled = share == 1f ? loss : loss.mul(share);
                techniques.backward(scaled);
                StepStats s = stats(logits, loss, xy[1], count);
                lossSum += s.lossSum();
                correct += s.correct();
            } catch (Exception e) {
                throw e instanceof RuntimeException r ? r : new IllegalStateException(e);
            }
        }
        if (++pendingBatches >= options.accumulate()) {
            pendingBatches = 0;
            techniques.step();
            optimizer.zeroGrad(true);
        }
        return new StepStats(lossSum, correct, batch.size() * predictionsPerSample());
    }

    @Override
    public StepStats evaluate(Batch batch) {
        ensureOpen();
        model.eval();
        try (NoGrad noGrad = NoGrad.enter(); MemoryScope scope = MemoryScope.open()) {
            Tensor[] xy = tensors(batch, 0, batch.size());
            Tensor logits = logits(xy[0], false);
            Tensor loss = Functional.crossEntropy(logits, xy[1]);
            return stats(logits, loss, xy[1], batch.size());
        }
    }

    /** @return loss summed over predictions and correct predictions (NaN and 0 on a device without storage) */
    private StepStats stats(Tensor logits, Tensor loss, Tensor targets, int samples) {
        int n = samples * predictionsPerSample();
        if (!dev.hasStorage()) {
            return new StepStats(Double.NaN, 0, n);
        }
        long[] predicted;
        long[] truth;
        try (NoGrad noGrad = NoGrad.enter(); Tensor argmax = logits.argmax(-1, false)) {
            predicted = argmax.toLongArray();
            truth = targets.toLongArray();
        }
        int correct = 0;
        for (int i = 0; i < predicted.length; i++) {
            if (predicted[i] == truth[i]) {
                correct++;
            }
        }
        return new StepStats((double) loss.item() * n, correct, n);
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
