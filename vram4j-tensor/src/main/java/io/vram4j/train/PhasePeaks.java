package io.vram4j.train;

import io.vram4j.alloc.PeakRegion;
import io.vram4j.memory.stats.FormatSize;

/**
 * The peaks of a training job's two phases, measured apart with {@link io.vram4j.alloc.CachingAllocator#openPeakRegion()}
 * (PyTorch's own peak statistics are left alone): the training steps (forward, backward, optimizer step) and the
 * evaluation that follows each epoch, which runs without gradients but at batch
 * {@link TrainOptions#evalBatchSize()}, so it can need more than a training step. In bytes.
 *
 * @param trainingAllocated   highest allocated bytes during the training steps
 * @param trainingReserved    highest reserved bytes during the training steps
 * @param evaluationAllocated highest allocated bytes during evaluation (0 when none ran)
 * @param evaluationReserved  highest reserved bytes during evaluation (0 when none ran)
 * @param evaluationBatch     samples per evaluation batch (0 when none ran)
 */
public record PhasePeaks(long trainingAllocated, long trainingReserved, long evaluationAllocated, long evaluationReserved,
                         int evaluationBatch) {
    /** Nothing measured yet. */
    public static final PhasePeaks NONE = new PhasePeaks(0, 0, 0, 0, 0);

    /** @return the higher of the two phases' allocated peaks: what the whole job needs */
    public long peakAllocated() {
        return Math.max(trainingAllocated, evaluationAllocated);
    }

    /** @return the higher of the two phases' reserved peaks: what the device must offer */
    public long peakReserved() {
        return Math.max(trainingReserved, evaluationReserved);
    }

    /**
     * @param region a closed region around training steps
     * @return these peaks with the region's counted for training
     */
    public PhasePeaks withTraining(PeakRegion region) {
        return new PhasePeaks(Math.max(trainingAllocated, region.peakAllocated()), Math.max(trainingReserved, region.peakReserved()),
                evaluationAllocated, evaluationReserved, evaluationBatch);
    }

    /**
     * @param region a closed region around an evaluation
     * @param batch  its batch size
     * @return these peaks with the region's counted for evaluation
     */
    public PhasePeaks withEvaluation(PeakRegion region, int batch) {
        return new PhasePeaks(trainingAllocated, trainingReserved, Math.max(evaluationAllocated, region.peakAllocated()),
                Math.max(evaluationReserved, region.peakReserved()), Math.max(evaluationBatch, batch));
    }

    /**
     * @param other peaks of another part of the job
     * @return the higher of each figure
     */
    public PhasePeaks max(PhasePeaks other) {
        return new PhasePeaks(Math.max(trainingAllocated, other.trainingAllocated), Math.max(trainingReserved, other.trainingReserved),
                Math.max(evaluationAllocated, other.evaluationAllocated), Math.max(evaluationReserved, other.evaluationReserved),
                Math.max(evaluationBatch, other.evaluationBatch));
    }

    /**
     * @param label e.g. {@code "epoch 1"}
     * @return e.g. {@code "epoch 1 peaks: training steps 27.44 MiB allocated, 30.00 MiB reserved; evaluation (batch 64)
     *     121.70 MiB allocated, 124.00 MiB reserved"}
     */
    public String line(String label) {
        String s = label + " peaks: training steps " + FormatSize.formatSize(trainingAllocated) + " allocated, "
                + FormatSize.formatSize(trainingReserved) + " reserved";
        if (evaluationBatch > 0) {
            s += "; evaluation (batch " + evaluationBatch + ") " + FormatSize.formatSize(evaluationAllocated) + " allocated, "
                    + FormatSize.formatSize(evaluationReserved) + " reserved";
        }
        return s;
    }
}
