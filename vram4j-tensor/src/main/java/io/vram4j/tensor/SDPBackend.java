package io.vram4j.tensor;

/**
 * The implementations of {@link Functional#scaledDotProductAttention}, named as PyTorch's
 * {@code torch.nn.attention.SDPBackend} members (the two vram4j has). {@link SdpaKernel} restricts the choice for a
 * block of code, as {@code torch.nn.attention.sdpa_kernel}.
 */
public enum SDPBackend {
    /**
     * The unfused formulation: {@code q k^T}, scale, causal mask, softmax, product with {@code v}, each an op of its
     * own; the softmax output ({@code [..., T, T]}) is saved for backward. Takes every input.
     */
    MATH,
    /**
     * One fused kernel forward and one backward (FlashAttention's online softmax; see
     * {@link io.vram4j.compute.Kernels#attentionForward}): saves q, k, v, the output and float32 per-row
     * log-sum-exps, never the {@code T x T} probabilities. Takes q, k and v of one shape {@code [..., T, d]} and one
     * floating-point dtype. The default where it applies, as PyTorch prefers its flash backend.
     */
    FLASH_ATTENTION;

    /**
     * @param name {@code math} or {@code flash} (case-insensitive), or a member's name
     * @return the backend
     * @throws IllegalArgumentException naming the accepted values
     */
    public static SDPBackend parse(String name) {
        String n = name.trim().toLowerCase(java.util.Locale.ROOT);
        return switch (n) {
            case "math" -> MATH;
            case "flash", "flash_attention" -> FLASH_ATTENTION;
            default -> throw new IllegalArgumentException("attention backend '" + name
                    + "' is not one of flash, math");
        };
    }
}
