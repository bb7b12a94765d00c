package io.vram4j.optim;

import io.vram4j.tensor.FusedOptimizers;
import io.vram4j.tensor.Tensor;

import java.util.ArrayList;
import java.util.List;

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

    /**
     * On device memory: one fused kernel call ({@code Kernels.sgdMulti}) for the parameters whose buffers this step
     * initialises and one for the others (in practice one call per step), rounding as the loop on host memory does.
     */
    @Override
    protected boolean updateGroup(List<Tensor> ps, List<Tensor> gs) {
        if (!onDeviceMemory(ps)) {
            return false;
        }
        boolean[] first = new boolean[ps.size()];
        for (int i = 0; i < first.length; i++) {
            first[i] = momentum != 0 && !hasState(ps.get(i));
        }
        for (boolean f : new boolean[] {true, false}) {
            List<Tensor> p = new ArrayList<>();
            List<Tensor> g = new ArrayList<>();
            List<Tensor> b = momentum != 0 ? new ArrayList<>() : null;
            for (int i = 0; i < first.length; i++) {
                if (first[i] == f) {
                    p.add(ps.get(i));
                    g.add(gs.get(i));
                    if (b != null) {
                        b.add(state(ps.get(i), 1)[0]);
                    }
                }
            }
            FusedOptimizers.sgd(p, g, b, lr, momentum, weightDecay, nesterov, f);
        }
        return true;
    }

    @Override
    protected void update(Tensor p, Tensor g) {
        boolean first = momentum != 0 && !hasState(p);
        Tensor buf = momentum != 0 ? state(p, 1)[0] : null;
        if (!hasData(p)) {
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
}
