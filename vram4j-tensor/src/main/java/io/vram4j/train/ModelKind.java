package io.vram4j.train;

import java.util.Locale;

/**
 * The model {@link Trainer} trains: the {@code train} command's {@code --model}.
 *
 * <p>{@link #toString()} is the command-line spelling ({@code mlp}, {@code transformer}), which descriptions and
 * JSON summaries use. Immutable and thread-safe.
 */
public enum ModelKind {
    /** A ReLU MLP classifying Fashion-MNIST images. */
    MLP,
    /** A GPT-style character-level Transformer language model. */
    TRANSFORMER;

    /**
     * Reads the command-line spelling, in any case.
     *
     * @param name {@code mlp} or {@code transformer}
     * @return the model
     * @throws IllegalArgumentException naming {@code --model} and the accepted names for anything else
     * @throws NullPointerException if {@code name} is null
     */
    public static ModelKind parse(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return switch (n) {
            case "mlp" -> MLP;
            case "transformer" -> TRANSFORMER;
            default -> throw new IllegalArgumentException("--model: unknown model '" + n + "'; expected mlp or transformer");
        };
    }

    /** @return the command-line spelling, e.g. {@code mlp} */
    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
