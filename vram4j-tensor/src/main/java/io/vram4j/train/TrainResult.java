package io.vram4j.train;

import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.stats.MemoryStats;

import java.util.List;

/**
 * What {@link Trainer#fit} did. Memory numbers are taken at the end of training, with the model and optimizer
 * state still allocated.
 *
 * @param options        the settings
 * @param description    the model and optimizer in words
 * @param parameters     number of trainable parameters
 * @param trainSamples   training samples per epoch
 * @param epochs         the finished epochs (fewer than asked when {@code maxSteps} stopped training)
 * @param test           the final evaluation on the test set
 * @param seconds        wall time of training and evaluation
 * @param samplesPerSec  training throughput over all epochs (training time only)
 * @param memory         allocated, reserved and their peaks at the end
 * @param memoryStats    the allocator's {@code memory_stats} at the end
 * @param memorySummary  the allocator's {@code memory_summary} at the end
 * @param snapshot       the snapshot taken after the first {@code historySteps} steps, with their trace; null
 *                       when no history was recorded
 * @param historySteps   steps whose history the snapshot holds
 * @param peaks          the run's training steps' and evaluations' peaks, apart (the highest over the epochs)
 */
public record TrainResult(TrainOptions options, String description, long parameters, int trainSamples,
                          List<EpochResult> epochs, Evaluation test, double seconds, double samplesPerSec,
                          MemoryPoint memory, MemoryStats memoryStats, String memorySummary, MemorySnapshot snapshot,
                          int historySteps, PhasePeaks peaks) {
    /** Copies the list. */
    public TrainResult {
        epochs = List.copyOf(epochs);
    }

    /** @return the mean training loss of the last epoch, or NaN if none finished */
    public double finalTrainLoss() {
        return epochs.isEmpty() ? Double.NaN : epochs.getLast().loss();
    }

    /** @return the training accuracy of the last epoch, or NaN if none finished */
    public double finalTrainAccuracy() {
        return epochs.isEmpty() ? Double.NaN : epochs.getLast().accuracy();
    }
}
