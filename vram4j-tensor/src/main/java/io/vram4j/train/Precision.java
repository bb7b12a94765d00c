package io.vram4j.train;

import java.util.Locale;

/**
 * Mixed precision of training: the {@code train} command's {@code --amp}.
 *
 * <p>{@link #toString()} is the command-line spelling ({@code off}, {@code bf16}, {@code fp16}), which
 * descriptions and JSON summaries use. Immutable and thread-safe.
 */
public enum Precision {
    /** Everything in float32. */
    OFF,
    /** Autocast to bfloat16 ({@code torch.autocast(dtype=torch.bfloat16)}). */
    BF16,
    /** Autocast to float16 with a dynamic {@code GradScaler}, which skips steps with inf/NaN gradients. */
    FP16;

    /**
     * Reads the command-line spelling, in any case; {@code none}, {@code fp32} and {@code float32} mean
     * {@link #OFF}.
     *
     * @param name {@code off}, {@code bf16} or {@code fp16}
     * @return the precision
     * @throws IllegalArgumentException naming {@code --amp} and the accepted names for anything else
     * @throws NullPointerException if {@code name} is null
     */
    public static Precision parse(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        return switch (n) {
            case "off", "none", "fp32", "float32" -> OFF;
            case "bf16" -> BF16;
            case "fp16" -> FP16;
            default -> throw new IllegalArgumentException("--amp: unknown precision '" + n + "'; expected bf16 or fp16");
        };
    }

    /** @return the command-line spelling, e.g. {@code bf16} */
    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
