package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.PeakRegion;

/**
 * A training job in miniature, as a dry run and each try of {@link BatchSizeFinder} run it: the first steps
 * (the second one with the optimizer state live, as every later step), one evaluation batch at
 * {@link TrainOptions#evalBatchSize()} with the cache as training left it, then the steps of the next epoch
 * after that evaluation. Each phase's peaks are measured apart ({@link PhasePeaks}); when a phase runs out of
 * memory the peaks up to the failure stay readable, with the phase's name. Not thread-safe.
 */
final class Rehearsal {
    private final CachingAllocator alloc;
    private PhasePeaks peaks = PhasePeaks.NONE;
    private String phase = "training";

    Rehearsal(CachingAllocator alloc) {
        this.alloc = alloc;
    }

    /**
     * @param firstSteps  training steps before the evaluation
     * @param step        one training step
     * @param evalBatch   samples of the evaluation batch (0: no evaluation)
     * @param evaluation  one evaluation batch
     * @param laterSteps  training steps after the evaluation
     * @throws io.vram4j.alloc.DeviceOutOfMemoryException when a phase runs out of memory ({@link #phase()} names it)
     */
    void run(int firstSteps, Runnable step, int evalBatch, Runnable evaluation, int laterSteps) {
        run(firstSteps, steps -> {
            for (int i = 0; i < steps; i++) {
                step.run();
            }
        }, evalBatch, evaluation, laterSteps);
    }

    /**
     * As {@link #run(int, Runnable, int, Runnable, int)}, each training phase run by {@code trainPhase} (given its
     * number of steps), for batches that live across the steps of a phase ({@link PinnedRehearsal}).
     */
    void run(int firstSteps, java.util.function.IntConsumer trainPhase, int evalBatch, Runnable evaluation, int laterSteps) {
        train(firstSteps, trainPhase);
        if (evalBatch > 0) {
            phase = "evaluation";
            PeakRegion region = alloc.openPeakRegion();
            try {
                evaluation.run();
            } finally {
                region.close();
                peaks = peaks.withEvaluation(region, evalBatch);
            }
        }
        train(laterSteps, trainPhase);
    }

    private void train(int steps, java.util.function.IntConsumer trainPhase) {
        if (steps == 0) {
            return;
        }
        phase = "training";
        PeakRegion region = alloc.openPeakRegion();
        try {
            trainPhase.accept(steps);
        } finally {
            region.close();
            peaks = peaks.withTraining(region);
        }
    }

    /** @return the peaks measured so far */
    PhasePeaks peaks() {
        return peaks;
    }

    /** @return {@code "training"} or {@code "evaluation"}: the phase running last (the one that failed, after a failure) */
    String phase() {
        return phase;
    }
}
