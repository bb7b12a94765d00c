package io.vram4j.train;

/**
 * One finished epoch.
 *
 * @param epoch          epoch, from 1
 * @param steps          steps taken
 * @param samples        training samples seen
 * @param loss           mean training loss (weighted by samples)
 * @param accuracy       training accuracy, 0..1
 * @param seconds        wall time of the training part of the epoch
 * @param samplesPerSec  {@code samples / seconds}
 * @param test           evaluation on the test set after the epoch
 * @param memory         allocator numbers at the end of the epoch (after evaluation)
 * @param peaks          the epoch's training steps' and evaluation's peaks, apart
 */
public record EpochResult(int epoch, int steps, long samples, double loss, double accuracy, double seconds,
                          double samplesPerSec, Evaluation test, MemoryPoint memory, PhasePeaks peaks) {
}
