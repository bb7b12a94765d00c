package io.vram4j.train;

/**
 * Receives {@link Trainer} progress, on the training thread; keep the callbacks quick. All methods do nothing
 * by default.
 */
public interface TrainListener {
    /** A listener that ignores everything. */
    TrainListener NONE = new TrainListener() {
    };

    /**
     * @param epoch epoch, from 1
     * @param epochs epochs in all
     * @param steps steps in this epoch
     */
    default void epochStarted(int epoch, int epochs, int steps) {
    }

    /** @param info progress after a step */
    default void stepDone(StepInfo info) {
    }

    /** Called after the training steps of an epoch, before the evaluation. @param epoch epoch, from 1 */
    default void trainingPartDone(int epoch) {
    }

    /** @param result the finished epoch, with its evaluation */
    default void epochDone(EpochResult result) {
    }

    /**
     * Called when the memory history of the first steps has been captured.
     *
     * @param steps steps recorded
     */
    default void historyCaptured(int steps) {
    }

    /** Called once when {@link Trainer#fit} returned or threw, by {@link TrainJob}, before it prints the results. */
    default void trainingEnded() {
    }
}
