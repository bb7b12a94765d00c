package io.vram4j.amp;

import io.vram4j.autograd.NoGrad;
import io.vram4j.optim.Optimizer;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Tensor;

import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Dynamic loss scaling for float16 training, as {@code torch.amp.GradScaler} ({@code torch/amp/grad_scaler.py}):
 * the loss is multiplied by a scale before backward so small float16 gradients do not flush to zero, the
 * gradients are divided by it before the optimizer step, and steps whose gradients hold inf or NaN are
 * skipped while the scale backs off.
 *
 * <h2>Rules</h2>
 * <ul>
 *   <li>Defaults: {@code init_scale = 2^16 = 65536}, {@code growth_factor = 2.0}, {@code backoff_factor = 0.5},
 *       {@code growth_interval = 2000}.</li>
 *   <li>{@link #unscale(Optimizer)} multiplies every gradient of the optimizer's parameters by the float32
 *       reciprocal of the scale ({@code _amp_foreach_non_finite_check_and_unscale_}; exact, the scale being a
 *       power of two) and records whether any element is inf or NaN. Once per optimizer between updates;
 *       float16 gradients are rejected ("Attempting to unscale FP16 gradients.").</li>
 *   <li>{@link #step(Optimizer)} unscales first if needed, then runs {@code optimizer.step()} only when no
 *       gradient was non-finite; a skipped step leaves the parameters and the optimizer state unchanged. The
 *       outcome is reported by {@link #lastStepSkipped()} and counted by {@link #skippedSteps()} (vram4j
 *       additions).</li>
 *   <li>{@link #update()} ({@code _amp_update_scale_}): after a step with inf/NaN the scale is multiplied by
 *       the backoff factor and the growth tracker reset; otherwise the tracker counts clean steps and, when it
 *       reaches the growth interval, the scale is multiplied by the growth factor (if the result is finite) and
 *       the tracker reset.</li>
 *   <li>A disabled scaler ({@code enabled = false}) passes everything through: {@code scale} returns the loss,
 *       {@code step} just steps, {@link #stateDict()} is empty.</li>
 * </ul>
 *
 * <pre>{@code
 * GradScaler scaler = new GradScaler();
 * try (Autocast ac = Autocast.enable(DType.FLOAT16)) { loss = lossOf(model, batch); }
 * try (Tensor scaled = scaler.scale(loss)) { scaled.backward(); }
 * scaler.step(optimizer);      // skipped when a gradient is inf/NaN
 * scaler.update();
 * optimizer.zeroGrad();
 * }</pre>
 *
 * <p>The scale is a Java float, not a device tensor. Not thread-safe.
 */
public final class GradScaler {
    /** {@code init_scale}: 2<sup>16</sup>. */
    public static final float DEFAULT_INIT_SCALE = 65536f;
    /** {@code growth_factor}. */
    public static final float DEFAULT_GROWTH_FACTOR = 2.0f;
    /** {@code backoff_factor}. */
    public static final float DEFAULT_BACKOFF_FACTOR = 0.5f;
    /** {@code growth_interval}. */
    public static final int DEFAULT_GROWTH_INTERVAL = 2000;

    private enum Stage { READY, UNSCALED, STEPPED }

    private static final class OptState {
        Stage stage = Stage.READY;
        Boolean foundInf;
    }

    private final boolean enabled;
    private float scale;
    private float growthFactor;
    private float backoffFactor;
    private int growthInterval;
    private int growthTracker;
    private final Map<Optimizer, OptState> states = new IdentityHashMap<>();
    private boolean lastStepSkipped;
    private long skippedSteps;
    private long steps;

    /** A scaler with PyTorch's defaults. */
    public GradScaler() {
        this(DEFAULT_INIT_SCALE, DEFAULT_GROWTH_FACTOR, DEFAULT_BACKOFF_FACTOR, DEFAULT_GROWTH_INTERVAL, true);
    }

    /**
     * @param initScale the first scale, positive and finite
     * @param growthFactor greater than 1
     * @param backoffFactor in (0, 1)
     * @param growthInterval clean steps between growths, at least 1
     * @param enabled false for a pass-through scaler (e.g. bfloat16 or float32 training)
     * @throws IllegalArgumentException for values out of range (PyTorch's messages)
     */
    public GradScaler(float initScale, float growthFactor, float backoffFactor, int growthInterval, boolean enabled) {
        if (!(initScale > 0) || Float.isInfinite(initScale)) {
            throw new IllegalArgumentException("init_scale must be positive and finite, got " + initScale);
        }
        checkGrowthFactor(growthFactor);
        checkBackoffFactor(backoffFactor);
        checkGrowthInterval(growthInterval);
        this.enabled = enabled;
        this.scale = initScale;
        this.growthFactor = growthFactor;
        this.backoffFactor = backoffFactor;
        this.growthInterval = growthInterval;
    }

    private static void checkGrowthFactor(float f) {
        if (!(f > 1.0f)) {
            throw new IllegalArgumentException("The growth factor must be > 1.0, got " + f);
        }
    }

    private static void checkBackoffFactor(float f) {
        if (!(f < 1.0f) || !(f > 0f)) {
            throw new IllegalArgumentException("The backoff factor must be < 1.0 (and > 0), got " + f);
        }
    }

    private static void checkGrowthInterval(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("growth_interval must be at least 1, got " + n);
        }
    }

    /**
     * @param loss the loss (any shape)
     * @return {@code loss * scale}, a new tensor the caller owns (a new handle over {@code loss} when disabled)
     */
    public Tensor scale(Tensor loss) {
        if (!enabled) {
            return loss.view(loss.shape());
        }
        return loss.mul(scale);
    }

    /**
     * Divides the gradients of {@code optimizer}'s parameters by the scale, in place, and records whether any
     * is inf or NaN (call it before clipping gradients).
     *
     * @throws IllegalStateException when already called for this optimizer since the last {@link #update()},
     *     or after {@link #step}
     * @throws IllegalArgumentException when a gradient is float16
     */
    public void unscale(Optimizer optimizer) {
        if (!enabled) {
            return;
        }
        OptState st = states.computeIfAbsent(optimizer, o -> new OptState());
        if (st.stage == Stage.UNSCALED) {
            throw new IllegalStateException("unscale_() has already been called on this optimizer since the last update().");
        }
        if (st.stage == Stage.STEPPED) {
            throw new IllegalStateException("unscale_() is being called after step().");
        }
        float inv = (float) (1.0 / (double) scale);
        for (Tensor p : optimizer.parameters()) {
            Tensor g = p.grad();
            if (g != null && g.dtype() == DType.FLOAT16) {
                throw new IllegalArgumentException("Attempting to unscale FP16 gradients.");
            }
        }
        boolean found = false;
        try (NoGrad ng = NoGrad.enter()) {
            for (Tensor p : optimizer.parameters()) {
                Tensor g = p.grad();
                if (g == null) {
                    continue;
                }
                found |= hasNonFinite(g);
                g.mulInPlace(inv);
            }
        }
        st.foundInf = found;
        st.stage = Stage.UNSCALED;
    }

    private static boolean hasNonFinite(Tensor g) {
        if (!g.device().hasStorage()) {
            return false;
        }
        if (g.dtype() == DType.FLOAT32 && g.isContiguous() && g.device().hostAccessible()) {
            return g.device().kernels().anyNonFinite(g.numel(), g.data(), 0);
        }
        for (float v : g.toFloatArray()) {
            if (!Float.isFinite(v)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Unscales (unless {@link #unscale} was called) and steps the optimizer unless a gradient was inf or NaN.
     *
     * @return true when the optimizer stepped, false when the step was skipped
     * @throws IllegalStateException when already called for this optimizer since the last {@link #update()}
     */
    public boolean step(Optimizer optimizer) {
        if (!enabled) {
            optimizer.step();
            steps++;
            lastStepSkipped = false;
            return true;
        }
        OptState st = states.computeIfAbsent(optimizer, o -> new OptState());
        if (st.stage == Stage.STEPPED) {
            throw new IllegalStateException("step() has already been called since the last update().");
        }
        if (st.stage == Stage.READY) {
            unscale(optimizer);
        }
        boolean skip = st.foundInf;
        if (!skip) {
            optimizer.step();
        } else {
            skippedSteps++;
        }
        st.stage = Stage.STEPPED;
        steps++;
        lastStepSkipped = skip;
        return !skip;
    }

    /**
     * Updates the scale from the inf/NaN checks of every optimizer since the last update (backoff on any,
     * growth after {@code growthInterval} clean updates) and makes the optimizers ready for the next iteration.
     *
     * @throws IllegalStateException when no optimizer was unscaled or stepped since the last update
     */
    public void update() {
        if (!enabled) {
            return;
        }
        boolean any = false;
        boolean foundInf = false;
        for (OptState st : states.values()) { // identity map: order is irrelevant for an OR
            if (st.foundInf != null) {
                any = true;
                foundInf |= st.foundInf;
            }
        }
        if (!any) {
            throw new IllegalStateException("No inf checks were recorded prior to update.");
        }
        if (foundInf) {
            scale *= backoffFactor;
            growthTracker = 0;
        } else {
            int successful = growthTracker + 1;
            if (successful == growthInterval) {
                float grown = scale * growthFactor;
                if (Float.isFinite(grown)) {
                    scale = grown;
                }
                growthTracker = 0;
            } else {
                growthTracker = successful;
            }
        }
        states.clear();
    }

    /**
     * Sets the scale directly ({@code update(new_scale)}) and makes the optimizers ready for the next iteration.
     *
     * @param newScale positive and finite
     */
    public void update(float newScale) {
        if (!enabled) {
            return;
        }
        if (!(newScale > 0) || Float.isInfinite(newScale)) {
            throw new IllegalArgumentException("new_scale must be positive and finite, got " + newScale);
        }
        scale = newScale;
        states.clear();
    }

    /** @return the current scale ({@code get_scale()}), 1 when disabled */
    public float getScale() {
        return enabled ? scale : 1f;
    }

    /** @return the growth factor */
    public float getGrowthFactor() {
        return growthFactor;
    }

    /** @param f the new growth factor, greater than 1 */
    public void setGrowthFactor(float f) {
        checkGrowthFactor(f);
        growthFactor = f;
    }

    /** @return the backoff factor */
    public float getBackoffFactor() {
        return backoffFactor;
    }

    /** @param f the new backoff factor, in (0, 1) */
    public void setBackoffFactor(float f) {
        checkBackoffFactor(f);
        backoffFactor = f;
    }

    /** @return the growth interval */
    public int getGrowthInterval() {
        return growthInterval;
    }

    /** @param n the new growth interval, at least 1 */
    public void setGrowthInterval(int n) {
        checkGrowthInterval(n);
        growthInterval = n;
    }

    /** @return clean updates since the last growth or backoff ({@code _get_growth_tracker()}) */
    public int getGrowthTracker() {
        return growthTracker;
    }

    /** @return whether the scaler is enabled */
    public boolean isEnabled() {
        return enabled;
    }

    /** @return whether the last {@link #step} was skipped for inf/NaN gradients */
    public boolean lastStepSkipped() {
        return lastStepSkipped;
    }

    /** @return how many steps were skipped since this scaler was created */
    public long skippedSteps() {
        return skippedSteps;
    }

    /** @return how many times {@link #step} was called */
    public long steps() {
        return steps;
    }

    /**
     * @return PyTorch's {@code state_dict()}: {@code scale}, {@code growth_factor}, {@code backoff_factor},
     *     {@code growth_interval}, {@code _growth_tracker}; empty when disabled
     */
    public Map<String, Object> stateDict() {
        Map<String, Object> m = new LinkedHashMap<>();
        if (enabled) {
            m.put("scale", scale);
            m.put("growth_factor", growthFactor);
            m.put("backoff_factor", backoffFactor);
            m.put("growth_interval", growthInterval);
            m.put("_growth_tracker", growthTracker);
        }
        return m;
    }

    /**
     * Restores a {@link #stateDict()} (numbers of any boxed type). Ignored when disabled.
     *
     * @throws IllegalArgumentException when the dictionary is empty, lacks a key or holds a non-number or an
     *     out-of-range value
     */
    public void loadStateDict(Map<String, ?> state) {
        if (!enabled) {
            return;
        }
        if (state.isEmpty()) {
            throw new IllegalArgumentException("The source state dict is empty, possibly because it was saved from a "
                    + "disabled instance of GradScaler.");
        }
        float s = number(state, "scale").floatValue();
        float gf = number(state, "growth_factor").floatValue();
        float bf = number(state, "backoff_factor").floatValue();
        int gi = number(state, "growth_interval").intValue();
        int gt = number(state, "_growth_tracker").intValue();
        if (!(s > 0) || Float.isInfinite(s)) {
            throw new IllegalArgumentException("GradScaler state dict: 'scale' must be positive and finite, got " + s);
        }
        checkGrowthFactor(gf);
        checkBackoffFactor(bf);
        checkGrowthInterval(gi);
        if (gt < 0) {
            throw new IllegalArgumentException("GradScaler state dict: '_growth_tracker' must be >= 0, got " + gt);
        }
        scale = s;
        growthFactor = gf;
        backoffFactor = bf;
        growthInterval = gi;
        growthTracker = gt;
    }

    private static Number number(Map<String, ?> state, String key) {
        Object v = state.get(key);
        if (v == null) {
            throw new IllegalArgumentException("GradScaler state dict lacks '" + key + "' (expected scale, growth_factor, "
                    + "backoff_factor, growth_interval, _growth_tracker)");
        }
        if (!(v instanceof Number n)) {
            throw new IllegalArgumentException("GradScaler state dict: '" + key + "' must be a number, got "
                    + v.getClass().getSimpleName() + " " + v);
        }
        return n;
    }
}
