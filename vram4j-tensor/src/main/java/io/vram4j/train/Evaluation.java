package io.vram4j.train;

/**
 * The model on a data set, without gradients.
 *
 * @param samples  samples evaluated
 * @param loss     mean cross-entropy loss
 * @param accuracy fraction classified correctly, 0..1
 * @param seconds  wall time
 */
public record Evaluation(long samples, double loss, double accuracy, double seconds) {
}
