package io.vram4j.train;

import io.vram4j.amp.GradScaler;
import io.vram4j.optim.Optimizer;
import io.vram4j.tensor.Tensor;

/**
 * Gradient accumulation over {@code N} micro-batches, the PyTorch recipe: each micro-batch's loss is divided
 * by {@code N} before backward ({@code loss = loss / accumulation_steps}), gradients add up in the parameters'
 * {@code grad}, and every {@code N}-th call steps the optimizer (through the {@link GradScaler} when one is
 * given: {@code scaler.step(opt); scaler.update()}) and clears the gradients ({@code zero_grad()}, set to
 * none). With a mean-reduced loss and equal micro-batches the step equals one step on the whole batch, up to
 * float32 summation order.
 *
 * <pre>{@code
 * GradientAccumulation acc = new GradientAccumulation(opt, 4);
 * for (Tensor[] mb : microBatches) {
 *     try (MemoryScope s = MemoryScope.open()) {
 *         acc.backward(Functional.crossEntropy(model.forward(mb[0]), mb[1]));   // steps every 4th call
 *     }
 * }
 * }</pre>
 *
 * <p>Not thread-safe.
 */
public final class GradientAccumulation {
    private final Optimizer optimizer;
    private final int steps;
    private final GradScaler scaler;
    private int pending;
    private long optimizerSteps;

    /**
     * @param optimizer the optimizer to step
     * @param steps micro-batches per optimizer step, at least 1
     */
    public GradientAccumulation(Optimizer optimizer, int steps) {
        this(optimizer, steps, null);
    }

    /**
     * @param optimizer the optimizer to step
     * @param steps micro-batches per optimizer step, at least 1
     * @param scaler a gradient scaler for float16 training, or null
     */
    public GradientAccumulation(Optimizer optimizer, int steps, GradScaler scaler) {
        if (steps < 1) {
            throw new IllegalArgumentException("accumulation steps must be at least 1, got " + steps);
        }
        this.optimizer = java.util.Objects.requireNonNull(optimizer, "optimizer");
        this.steps = steps;
        this.scaler = scaler;
    }

    /**
     * Back-propagates {@code loss / N} (scaled by the scaler, if any) and, on every {@code N}-th call, steps
     * the optimizer and clears the gradients.
     *
     * @param loss a scalar micro-batch loss (not closed)
     * @return true when this call stepped the optimizer (or a scaler skipped the step for inf/NaN gradients)
     */
    public boolean backward(Tensor loss) {
        try (Tensor divided = steps == 1 ? loss.view(loss.shape()) : loss.div(steps);
             Tensor scaled = scaler == null ? divided.view(divided.shape()) : scaler.scale(divided)) {
            scaled.backward();
        }
        if (++pending < steps) {
            return false;
        }
        step();
        return true;
    }

    /** Steps now with the gradients accumulated so far (e.g. at the end of an epoch), then clears them. */
    public void step() {
        if (scaler == null) {
            optimizer.step();
        } else {
            scaler.step(optimizer);
            scaler.update();
        }
        optimizer.zeroGrad(true);
        pending = 0;
        optimizerSteps++;
    }

    /** @return micro-batches per optimizer step */
    public int accumulationSteps() {
        return steps;
    }

    /** @return micro-batches back-propagated since the last optimizer step */
    public int pending() {
        return pending;
    }

    /** @return optimizer steps taken (including steps a scaler skipped) */
    public long optimizerSteps() {
        return optimizerSteps;
    }
}
