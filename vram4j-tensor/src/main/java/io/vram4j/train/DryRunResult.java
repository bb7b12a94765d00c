package io.vram4j.train;

import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.stats.MemoryStats;

/**
 * A dry run ({@link Trainer#dryRun(io.vram4j.data.Dataset, io.vram4j.data.Dataset)}): training steps (forward,
 * backward, optimizer step, which creates the optimizer state) of a full batch and, when a test set was given,
 * an evaluation batch, measured: the peak is what the device must at least offer to run the job with these
 * settings (the allocator's reserved peak, which includes its rounding and caching, is what it actually took).
 *
 * @param description   the model and optimizer in words
 * @param parameters    number of trainable parameters
 * @param batchSize     samples in the step
 * @param memory        allocated, reserved and their peaks after the step (model and optimizer state live)
 * @param memoryStats   the allocator's {@code memory_stats} after the step
 * @param memorySummary the allocator's {@code memory_summary} after the step
 * @param snapshot      a snapshot with the step's trace, or null when history was not recorded
 * @param seconds       wall time of the step(s)
 * @param peaks         the training steps' and the evaluation's peaks, apart (no evaluation: zero evaluation figures)
 */
public record DryRunResult(String description, long parameters, int batchSize, MemoryPoint memory,
                           MemoryStats memoryStats, String memorySummary, MemorySnapshot snapshot, double seconds,
                           PhasePeaks peaks) {
}
