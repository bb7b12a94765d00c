package io.vram4j.train;

import io.vram4j.amp.Autocast;
import io.vram4j.amp.GradScaler;
import io.vram4j.optim.Optimizer;
import io.vram4j.tensor.DType;

/**
 * The mixed-precision settings of a training step, from {@link TrainOptions#amp()}: the {@link Autocast}
 * region around the forward pass and loss ({@code bf16}: bfloat16, {@code fp16}: float16) and, for float16, a
 * {@link GradScaler} with PyTorch's defaults (initial scale 65536, growth 2.0 every 2000 clean steps, backoff
 * 0.5) that the {@link GradientAccumulation} or {@link MicroBatcher} scale the loss with and that skips
 * optimizer steps with inf/NaN gradients.
 *
 * @param autocastDtype the autocast dtype, or null for float32 throughout
 * @param scaler the loss scaler, or null
 */
record Techniques(DType autocastDtype, GradScaler scaler) {
    /**
     * @param skippedSteps optimizer steps skipped because a gradient held inf or NaN
     * @param scale the loss scale now
     */
    record ScalerStats(long skippedSteps, double scale) {
    }

    static Techniques of(TrainOptions options, Optimizer optimizer) {
        return switch (options.amp()) {
            case BF16 -> new Techniques(DType.BFLOAT16, null);
            case FP16 -> new Techniques(DType.FLOAT16, new GradScaler());
            case OFF -> new Techniques(null, null);
        };
    }

    /** @return the autocast region for the forward pass (a disabled one-op region without mixed precision) */
    AutoCloseable autocast() {
        return autocastDtype == null ? () -> { } : Autocast.enable(autocastDtype);
    }

    /** @return the scaler's statistics, or null without a scaler */
    ScalerStats scalerStats() {
        return scaler == null ? null : new ScalerStats(scaler.skippedSteps(), scaler.getScale());
    }
}
