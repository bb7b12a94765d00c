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
     * {@link #trainStep} on {@code samples} samples of unspecified values, on a device without storage: it
     * allocates exactly as a step on real data and reads no host data (a dry run holds no batch in memory).
     *
     * @param samples samples in the batch
     * @return NaN loss and 0 correct
     * @throws IllegalStateException on a device with storage
     */
    StepStats simulatedTrainStep(int samples);

    /**
     * {@link #evaluate} on {@code samples} samples of unspecified values, on a device without storage.
     *
     * @param samples samples in the batch
     * @return NaN loss and 0 correct
     * @throws IllegalStateException on a device with storage
     */
    StepStats simulatedEvaluate(int samples);

    /**
     * Forward only, without gradients.
     *
     * @param batch the samples
     * @return the batch's summed loss and correct predictions (NaN and 0 on a device without storage)
     */
    StepStats evaluate(Batch batch);

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
