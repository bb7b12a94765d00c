package io.vram4j.nn;

import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Tensor;

/** Mean cross-entropy from logits and integer class targets (see {@link Functional#crossEntropy}). */
public final class CrossEntropyLoss extends Module {
    private final int ignoreIndex;

    /** A loss with PyTorch's default ignore index -100 */
    public CrossEntropyLoss() {
        this(Functional.IGNORE_INDEX);
    }

    /** @param ignoreIndex targets equal to it are left out of the mean */
    public CrossEntropyLoss(int ignoreIndex) {
        this.ignoreIndex = ignoreIndex;
    }

    /**
     * @param logits {@code [N, C]} or {@code [..., C]}
     * @param targets int class indices {@code [N]} or {@code [...]}
     * @return the scalar loss
     */
    public Tensor forward(Tensor logits, Tensor targets) {
        return Functional.crossEntropy(logits, targets, ignoreIndex);
    }
}
