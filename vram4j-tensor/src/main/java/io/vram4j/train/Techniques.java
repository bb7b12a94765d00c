package io.vram4j.train;

import io.vram4j.optim.Optimizer;
import io.vram4j.tensor.Tensor;

/**
 * The mixed-precision part of a training step, chosen by {@link TrainOptions#amp()}: the autocast region
 * around the forward pass, the backward pass (through a loss scaler for fp16) and the optimizer step (skipped
 * by the scaler when gradients overflowed).
 */
abstract class Techniques {
    /**
     * @param skippedSteps optimizer steps skipped because a gradient held inf or NaN
     * @param scale the loss scale now
     */
    record ScalerStats(long skippedSteps, double scale) {
    }

    static Techniques of(TrainOptions options, Optimizer optimizer) {
        if (!options.amp().equals("off")) {
            throw new UnsupportedOperationException("--amp " + options.amp() + " is not available yet");
        }
        return new Plain(optimizer);
    }

    /** @return a region (closed after the forward pass and loss) in which ops run in the chosen precision */
    abstract AutoCloseable autocast();

    /** Back-propagates {@code loss}. */
    abstract void backward(Tensor loss);

    /** Steps the optimizer (unless the scaler skips it). */
    abstract void step();

    /** @return the scaler's statistics, or null without a scaler */
    ScalerStats scalerStats() {
        return null;
    }

    /** float32 throughout. */
    private static final class Plain extends Techniques {
        private final Optimizer optimizer;

        Plain(Optimizer optimizer) {
            this.optimizer = optimizer;
        }

        @Override
        AutoCloseable autocast() {
            return () -> { };
        }

        @Override
        void backward(Tensor loss) {
            loss.backward();
        }

        @Override
        void step() {
            optimizer.step();
        }
    }
}
