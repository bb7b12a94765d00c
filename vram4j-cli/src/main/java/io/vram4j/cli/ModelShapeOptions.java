package io.vram4j.cli;

import io.vram4j.tensor.SDPBackend;
import io.vram4j.train.TrainOptions;
import picocli.CommandLine.Option;

/**
 * The model's shape, shared by {@code train} and {@code find-batch-size} (a picocli mixin): {@code --hidden} and
 * {@code --layers} (each model's default when absent), {@code --heads}, {@code --block-size} and {@code --attention}
 * (transformer).
 */
final class ModelShapeOptions {
    @Option(names = "--hidden", paramLabel = "N", description = "mlp: width of each hidden layer (default: " + TrainOptions.DEFAULT_HIDDEN
            + "); transformer: model width (default: " + TrainOptions.LM_HIDDEN + ")")
    Integer hidden;

    @Option(names = "--layers", paramLabel = "N", description = "mlp: hidden layers (default: " + TrainOptions.DEFAULT_LAYERS
            + "); transformer: blocks (default: " + TrainOptions.LM_LAYERS + ")")
    Integer layers;

    @Option(names = "--heads", paramLabel = "N", defaultValue = "" + TrainOptions.LM_HEADS, description = "transformer: attention heads (default: ${DEFAULT-VALUE})")
    int heads;

    @Option(names = "--block-size", paramLabel = "N", defaultValue = "" + TrainOptions.LM_BLOCK_SIZE, description = "transformer: context length in characters (default: ${DEFAULT-VALUE})")
    int blockSize;

    @Option(names = "--attention", paramLabel = "BACKEND", defaultValue = "flash", description = "transformer: attention "
            + "backend, flash (one fused kernel, FlashAttention's method: the T x T probabilities are never stored) or math "
            + "(the unfused ops, probabilities saved for backward), as torch.nn.attention.sdpa_kernel (default: ${DEFAULT-VALUE})")
    String attention;

    /**
     * @param modelDefaults the chosen model's defaults
     * @return a builder from {@code modelDefaults} with this shape
     * @throws IllegalArgumentException naming {@code --attention} for an unknown backend
     */
    TrainOptions.Builder apply(TrainOptions modelDefaults) {
        return modelDefaults.toBuilder().hidden(hidden != null ? hidden : modelDefaults.hidden())
                .layers(layers != null ? layers : modelDefaults.layers()).heads(heads).blockSize(blockSize)
                .attention(attentionBackend());
    }

    /** @throws IllegalArgumentException naming {@code --attention} and the accepted values */
    private SDPBackend attentionBackend() {
        try {
            return SDPBackend.parse(attention);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--attention: " + e.getMessage(), e);
        }
    }
}
