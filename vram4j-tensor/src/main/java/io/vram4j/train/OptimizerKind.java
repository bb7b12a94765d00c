package io.vram4j.train;

import java.util.Locale;

/**
 * The optimizer {@link Trainer} steps with: the {@code train} command's {@code --optimizer}.
 *
 * <p>{@link #toString()} is the command-line spelling ({@code sgd}, {@code adamw}), which descriptions and JSON
 * summaries use. Immutable and thread-safe.
 */
public enum OptimizerKind {
    /** SGD with momentum ({@code torch.optim.SGD}); weight decay is L2. */
    SGD(TrainOptions.DEFAULT_SGD_LR, 0.0),
    /** AdamW ({@code torch.optim.AdamW}); weight decay is decoupled. */
    ADAMW(TrainOptions.DEFAULT_ADAMW_LR, 0.01);

    private final double defaultLr;
    private final double defaultWeightDecay;

    OptimizerKind(double defaultLr, double defaultWeightDecay) {
        this.defaultLr = defaultLr;
        this.defaultWeightDecay = defaultWeightDecay;
    }

    /**
     * Reads the command-line spelling, in any case.
     *
     * @param name {@code sgd} or {@code adamw}
     * @return the optimizer
     * @throws IllegalArgumentException naming {@code --optimizer} and the accepted names for anything else
     * @throws NullPointerException if {@code name} is null
     */
    public static OptimizerKind parse(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return switch (n) {
            case "sgd" -> SGD;
            case "adamw" -> ADAMW;
            default -> throw new IllegalArgumentException("--optimizer: unknown optimizer '" + n + "'; expected sgd or adamw");
        };
    }

    /** @return the learning rate used when none is given: 0.05 for SGD, 0.001 for AdamW */
    public double defaultLr() {
        return defaultLr;
    }

    /** @return the weight decay used when none is given: 0 for SGD, 0.01 for AdamW (PyTorch's AdamW default) */
    public double defaultWeightDecay() {
        return defaultWeightDecay;
    }

    /** @return the command-line spelling, e.g. {@code adamw} */
    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
