package io.vram4j.optim;

import io.vram4j.tensor.Tensor;

/**
 * Stochastic gradient descent with momentum and weight decay, with PyTorch's semantics
 * ({@code dampening = 0}): {@code d = g + wd * p}; with momentum, {@code buf = d} at the first step and
 * {@code buf = momentum * buf + d} after, {@code d = buf} (or {@code d + momentum * buf} with Nesterov);
 * then {@code p -= lr * d}. The momentum buffer (one per parameter, its size) is allocated at the first step.
 *
 * <pre>{@code
 * SGD opt = new SGD(model.parameters(), 0.1f, 0.9f, 1e-4f);
 * loss.backward(); opt.step(); opt.zeroGrad(true);
 * }</pre>
 */
public final class SGD extends Optimizer {
    private final float momentum;
    private final float weightDecay;
    private final boolean nesterov;

    /** Plain SGD without momentum or weight decay */
    public SGD(Iterable<? extends Tensor> params, float lr) {
        this(params, lr, 0f, 0f, false);
    }

    /**
     * @param params the parameters
     * @param lr learning rate
     * @param momentum momentum factor (0 for none: no buffer is allocated)
     * @param weightDecay L2 penalty added to the gradient
     */
    public SGD(Iterable<? extends Tensor> params, float lr, float momentum, float weightDecay) {
        this(params, lr, momentum, weightDecay, false);
    }

    /**
     * @param nesterov use Nesterov momentum (needs {@code momentum > 0})
     */
    public SGD(Iterable<? extends Tensor> params, float lr, float momentum, float weightDecay, boolean nesterov) {
        super(params, lr);
        if (!(momentum >= 0)) {
            throw new IllegalArgumentException("Invalid momentum value: " + momentum);
        }
        if (!(weightDecay >= 0)) {
            throw new IllegalArgumentException("Invalid weight_decay value: " + weightDecay);
        }
        if (nesterov && momentum <= 0) {
            throw new IllegalArgumentException("Nesterov momentum requires a momentum");
        }
        this.momentum = momentum;
        this.weightDecay = weightDecay;
        this.nesterov = nesterov;
    }

    @Override
    protected void update(Tensor p, Tensor g) {
        boolean first = momentum != 0 && !hasState(p);
        Tensor buf = momentum != 0 ? state(p, 1)[0] : null;
        if (!hasData(p)) {
            return;
        }
        if (!p.device().hostAccessible()) {
            updateWithKernels(p, g, buf, first);
            return;
        }
        FloatData pd = new FloatData(p);
        FloatData gd = new FloatData(g);
        FloatData bd = buf == null ? null : new FloatData(buf);
        long n = p.numel();
        for (long i = 0; i < n; i++) {
            float pv = pd.get(i);
            float d = gd.get(i);
            if (weightDecay != 0) {
                d += weightDecay * pv;
            }
            if (bd != null) {
                float b = first ? d : momentum * bd.get(i) + d;
                bd.set(i, b);
                d = nesterov ? d + momentum * b : b;
            }
            pd.set(i, pv - lr * d);
        }
    }

    /**
     * The same update on device memory ({@code cuda}) as in-place tensor ops, so the device's kernels run it:
     * each step rounds exactly as the loop on host memory does ({@code axpy} is {@code y + alpha * x}).
     */
    private void updateWithKernels(Tensor p, Tensor g, Tensor buf, boolean first) {
        try (Tensor d = g.copy()) {
            if (weightDecay != 0) {
                d.addInPlace(p, weightDecay);
            }
            Tensor step = d;
            if (buf != null) {
                if (first) {
                    buf.copyFrom(d);
                } else {
                    buf.mulInPlace(momentum);
                    buf.addInPlace(d);
                }
                if (nesterov) {
                    d.addInPlace(buf, momentum);
                } else {
                    step = buf;
                }
            }
            p.addInPlace(step, -lr);
        }
    }
}
