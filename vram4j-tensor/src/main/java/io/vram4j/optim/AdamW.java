package io.vram4j.optim;

import io.vram4j.tensor.FusedOptimizers;
import io.vram4j.tensor.Tensor;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Adam with decoupled weight decay, exactly as {@code torch.optim.AdamW} (amsgrad off): per step {@code t},
 * {@code p *= 1 - lr * wd}; {@code m = b1 m + (1 - b1) g}; {@code v = b2 v + (1 - b2) g²};
 * {@code p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)}. Two state tensors per parameter
 * (its size and dtype) are allocated at its first step.
 *
 * <pre>{@code
 * AdamW opt = new AdamW(model.parameters(), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f);
 * }</pre>
 */
public final class AdamW extends Optimizer {
    private final float beta1;
    private final float beta2;
    private final float eps;
    private final float weightDecay;
    private final Map<Tensor, int[]> steps = new IdentityHashMap<>();

    /** AdamW with PyTorch's defaults: betas (0.9, 0.999), eps 1e-8, weight decay 0.01 */
    public AdamW(Iterable<? extends Tensor> params, float lr) {
        this(params, lr, 0.9f, 0.999f, 1e-8f, 0.01f);
    }

    /**
     * @param params the parameters
     * @param lr learning rate
     * @param beta1 first-moment decay in [0, 1)
     * @param beta2 second-moment decay in [0, 1)
     * @param eps added to the denominator
     * @param weightDecay decoupled decay factor
     */
    public AdamW(Iterable<? extends Tensor> params, float lr, float beta1, float beta2, float eps, float weightDecay) {
        super(params, lr);
        if (!(beta1 >= 0 && beta1 < 1)) {
            throw new IllegalArgumentException("Invalid beta parameter at index 0: " + beta1);
        }
        if (!(beta2 >= 0 && beta2 < 1)) {
            throw new IllegalArgumentException("Invalid beta parameter at index 1: " + beta2);
        }
        if (!(eps >= 0)) {
            throw new IllegalArgumentException("Invalid epsilon value: " + eps);
        }
        if (!(weightDecay >= 0)) {
            throw new IllegalArgumentException("Invalid weight_decay value: " + weightDecay);
        }
        this.beta1 = beta1;
        this.beta2 = beta2;
        this.eps = eps;
        this.weightDecay = weightDecay;
    }

    /** @return the number of steps taken for {@code p} */
    public int stepCount(Tensor p) {
        int[] s = steps.get(p);
        return s == null ? 0 : s[0];
    }

    /**
     * On device memory: one fused kernel call ({@code Kernels.adamwMulti}) for the parameters at the same step
     * count (in practice one call per step), with the bias corrections computed as {@link #update} computes them.
     */
    @Override
    protected boolean updateGroup(List<Tensor> ps, List<Tensor> gs) {
        if (!onDeviceMemory(ps)) {
            return false;
        }
        Map<Integer, List<Integer>> byStep = new TreeMap<>();
        for (int i = 0; i < ps.size(); i++) {
            Tensor p = ps.get(i);
            state(p, 2);
            int t = ++steps.computeIfAbsent(p, k -> new int[1])[0];
            byStep.computeIfAbsent(t, k -> new ArrayList<>()).add(i);
        }
        for (Map.Entry<Integer, List<Integer>> e : byStep.entrySet()) {
            List<Tensor> p = new ArrayList<>();
            List<Tensor> g = new ArrayList<>();
            List<Tensor> m = new ArrayList<>();
            List<Tensor> v = new ArrayList<>();
            for (int i : e.getValue()) {
                Tensor[] st = state(ps.get(i), 2);
                p.add(ps.get(i));
                g.add(gs.get(i));
                m.add(st[0]);
                v.add(st[1]);
            }
            Corrections c = corrections(e.getKey());
            FusedOptimizers.adamw(p, g, m, v, beta1, beta2, eps, c.decay(), c.stepSize(), c.bc2Sqrt());
        }
        return true;
    }

    /** The step's factors: {@code 1 - lr * wd}, {@code lr / (1 - beta1^t)}, {@code sqrt(1 - beta2^t)}. */
    private record Corrections(float decay, float stepSize, float bc2Sqrt) {
    }

    private Corrections corrections(int t) {
        double bc1 = 1 - Math.pow(beta1, t);
        double bc2 = 1 - Math.pow(beta2, t);
        return new Corrections(1 - lr * weightDecay, (float) (lr / bc1), (float) Math.sqrt(bc2));
    }

    @Override
    protected void update(Tensor p, Tensor g) {
        Tensor[] st = state(p, 2);
        int t = ++steps.computeIfAbsent(p, k -> new int[1])[0];
        if (!hasData(p)) {
            return;
        }
        Corrections c = corrections(t);
        float stepSize = c.stepSize();
        float bc2Sqrt = c.bc2Sqrt();
        float decay = c.decay();
        FloatData pd = new FloatData(p);
        FloatData gd = new FloatData(g);
        FloatData md = new FloatData(st[0]);
        FloatData vd = new FloatData(st[1]);
        long n = p.numel();
        for (long i = 0; i < n; i++) {
            float gv = gd.get(i);
            float m = md.get(i);
            m += (gv - m) * (1 - beta1);
            float v = beta2 * vd.get(i) + (1 - beta2) * gv * gv;
            md.set(i, m);
            vd.set(i, v);
            float denom = (float) Math.sqrt(v) / bc2Sqrt + eps;
            pd.set(i, pd.get(i) * decay - stepSize * m / denom);
        }
    }

    @Override
    public void close() {
        super.close();
        steps.clear();
    }
}
