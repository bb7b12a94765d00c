package io.vram4j.train;

import io.vram4j.data.Batch;

/**
 * A classifier with its optimizer, as {@link Trainer} drives it: one call per training step, one per
 * evaluation batch. Every device buffer a call allocates is freed before it returns, except what lives across
 * steps (parameters, optimizer state), which {@link #close()} frees.
 */
interface Network extends AutoCloseable {
    /** @return the model and optimizer in words */
    String description();

    /** @return number of trainable parameters */
    long parameters();

    /**
     * Sets the learning rate of the following steps (for schedules).
     *
     * @param lr the learning rate
     */
    void setLearningRate(double lr);

    /**
     * Forward, backward and optimizer step on one batch.
     *
     * @param batch the samples
     * @return the batch's summed loss and correct predictions (NaN and 0 on a device without storage)
     */
    StepStats trainStep(Batch batch);

    /**
     * {@link #trainStep(Batch)} on a batch already on the device (from a {@link io.vram4j.data.DeviceLoader}).
     *
     * @param batch the samples: float32 features and int64 labels, left open
     * @return the batch's summed loss and correct predictions
     * @throws UnsupportedOperationException for a model whose inputs are not the features as they are
     */
    StepStats trainStep(io.vram4j.data.DeviceBatch batch);

    /**
     * {@link #trainStep} on {@code samples} samples of unspecified values, on a {@code sim} device: it
     * allocates exactly as a step on real data and reads no host data (a dry run holds no batch in memory).
     *
     * @param samples samples in the batch
     * @return NaN loss and 0 correct
     * @throws IllegalStateException on a device that is not {@code sim}
     */
    StepStats simulatedTrainStep(int samples);

    /**
     * {@link #evaluate} on {@code samples} samples of unspecified values, on a {@code sim} device.
     *
     * @param samples samples in the batch
     * @return NaN loss and 0 correct
     * @throws IllegalStateException on a device that is not {@code sim}
     */
    StepStats simulatedEvaluate(int samples);

    /**
     * Forward only, without gradients.
     *
     * @param batch the samples
     * @return the batch's summed loss and correct predictions (NaN and 0 on a device without storage)
     */
    StepStats evaluate(Batch batch);

    /**
     * {@link #evaluate(Batch)} on a batch already on the device.
     *
     * @param batch the samples, left open
     * @return the batch's summed loss and correct predictions
     * @throws UnsupportedOperationException for a model whose inputs are not the features as they are
     */
    StepStats evaluate(io.vram4j.data.DeviceBatch batch);

    /** Frees parameters and optimizer state. */
    @Override
    void close();

    /**
     * @param lossSum sum of the per-sample losses
     * @param correct samples whose highest logit is their label
     * @param samples samples in the batch
     */
    record StepStats(double lossSum, int correct, int samples) {
    }
}
