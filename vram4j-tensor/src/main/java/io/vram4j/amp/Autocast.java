package io.vram4j.amp;

import io.vram4j.autograd.Autograd;
import io.vram4j.tensor.internal.AutocastHook;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Tensor;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * Mixed precision region, as {@code torch.autocast(device_type, dtype, enabled, cache_enabled)}: while open on
 * a thread, ops listed in {@link CastPolicy}'s table run in the dtype their policy gives: matrix products and
 * linear layers in the autocast dtype (float16 or bfloat16), softmax, log-softmax, layer norm, losses, sums,
 * means, exp and log in float32; other ops on their inputs as they are. Parameters stay float32 (master
 * weights): the casts are recorded by autograd ({@code CastBackward}), so their gradients come back in
 * float32.
 *
 * <h2>Rules (from {@code torch/amp/autocast_mode.py} and {@code aten/src/ATen/autocast_mode.cpp})</h2>
 * <ul>
 *   <li>Regions nest; an inner region with {@code enabled = false} runs ops in their input dtypes, and
 *       closing it restores the outer state.</li>
 *   <li>Weight cast cache: the low-precision copy of a float32 leaf tensor that requires grad is made once
 *       and reused until the outermost region closes (PyTorch's {@code cached_casts}, cleared when the
 *       nesting depth returns to 0). Unlike PyTorch the cache is keyed by dtype and grad mode too, so a copy
 *       made under {@link io.vram4j.autograd.NoGrad} (without a graph) is never reused for training.</li>
 *   <li>Backward runs with autocast suspended: backward ops use the dtypes of their forward ops.</li>
 *   <li>Autocast applies to every device of the thread (PyTorch has one state per device type).</li>
 * </ul>
 *
 * <pre>{@code
 * try (Autocast ac = Autocast.enable(DType.BFLOAT16)) {
 *     Tensor logits = model.forward(x);               // bfloat16 (linear layers)
 *     try (Autocast off = Autocast.disable()) { ... }  // float32 region
 *     loss = Functional.crossEntropy(logits, y);       // float32
 * }
 * loss.backward();                                     // float32 gradients on float32 parameters
 * }</pre>
 *
 * <p>Per thread: a region must be closed by the thread that opened it, innermost first.
 */
public final class Autocast implements AutoCloseable {
    /** The autocast dtype when none was given ({@code torch.get_autocast_dtype("cuda")}). */
    public static final DType DEFAULT_DTYPE = DType.FLOAT16;

    private static final ThreadLocal<Context> CONTEXT = ThreadLocal.withInitial(Context::new);

    /**
     * A thread's autocast settings (what activation checkpointing captures and restores).
     *
     * @param enabled whether ops are autocast
     * @param dtype the low-precision dtype, {@link DType#FLOAT16} or {@link DType#BFLOAT16}
     * @param cacheEnabled whether weight casts are cached
     */
    public record State(boolean enabled, DType dtype, boolean cacheEnabled) {
        /** @throws IllegalArgumentException for a dtype other than float16 or bfloat16 */
        public State {
            checkDType(dtype);
        }
    }

    private final Context ctx;
    private final State previous;
    private final AutocastHook.Interceptor previousInterceptor;
    private boolean closed;

    private Autocast(State next) {
        ctx = CONTEXT.get();
        previous = ctx.state;
        ctx.state = next;
        ctx.nesting++;
        previousInterceptor = AutocastHook.install(next.enabled() ? ctx.interceptor : null);
    }

    /**
     * Opens an enabled region.
     *
     * @param dtype {@link DType#FLOAT16} or {@link DType#BFLOAT16}
     * @return the region
     * @throws IllegalArgumentException for another dtype
     */
    public static Autocast enable(DType dtype) {
        return enter(dtype, true);
    }

    /** @return a region in which autocast is off (ops run in their input dtypes), keeping the current dtype */
    public static Autocast disable() {
        return enter(dtype(), false);
    }

    /**
     * @param dtype {@link DType#FLOAT16} or {@link DType#BFLOAT16}
     * @param enabled whether ops autocast inside the region
     * @return the region (weight casts cached)
     */
    public static Autocast enter(DType dtype, boolean enabled) {
        return enter(new State(enabled, dtype, true));
    }

    /**
     * @param state settings for the region, e.g. from {@link #state()}
     * @return the region
     */
    public static Autocast enter(State state) {
        return new Autocast(state);
    }

    /** @return this thread's current settings */
    public static State state() {
        return CONTEXT.get().state;
    }

    /** @return whether autocast is enabled on this thread ({@code torch.is_autocast_enabled()}) */
    public static boolean isEnabled() {
        return CONTEXT.get().state.enabled();
    }

    /** @return this thread's autocast dtype ({@code torch.get_autocast_dtype}) */
    public static DType dtype() {
        return CONTEXT.get().state.dtype();
    }

    /** @return how many weight casts this thread's cache holds */
    public static int cachedCasts() {
        return CONTEXT.get().cacheSize();
    }

    /**
     * Restores the settings of the enclosing region; leaving the outermost region clears the weight cast
     * cache (closing the cached copies). Idempotent.
     *
     * @throws IllegalStateException when called from another thread or out of order
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (CONTEXT.get() != ctx) {
            throw new IllegalStateException("an autocast region must be closed by the thread that opened it");
        }
        closed = true;
        ctx.state = previous;
        AutocastHook.install(previousInterceptor);
        if (--ctx.nesting == 0) {
            ctx.clearCache();
        }
    }

    static void checkDType(DType dtype) {
        if (dtype != DType.FLOAT16 && dtype != DType.BFLOAT16) {
            throw new IllegalArgumentException("autocast dtype must be float16 or bfloat16, got "
                    + dtype);
        }
    }

    /** Per-thread settings, nesting depth and weight cast cache. */
    private static final class Context {
        State state = new State(false, DEFAULT_DTYPE, true);
        int nesting;
        // weight -> cast copy; one map per (dtype, grad mode)
        // insertion-ordered (tensors compare by identity): the cache is freed in the same order on every run and
        // device, so a dry run on sim reuses blocks exactly as the real run
        final Map<DType, Map<Tensor, Tensor>> withGrad = new java.util.EnumMap<>(DType.class);
        final Map<DType, Map<Tensor, Tensor>> withoutGrad = new java.util.EnumMap<>(DType.class);
        final AutocastHook.Interceptor interceptor = this::cast;

        Tensor[] cast(String op, Tensor[] inputs) {
            CastPolicy policy = CastPolicy.of(op);
            if (policy == null || !state.enabled()) {
                return inputs;
            }
            DType low = state.dtype();
            DType target = switch (policy) {
                case LOWER_PRECISION_FP -> low;
                case FP32 -> DType.FLOAT32;
                case FP32_SET_OPT_DTYPE -> inputs.length > 0 && eligible(inputs[0]) ? DType.FLOAT32 : null;
                case PROMOTE -> {
                    DType to = low;
                    for (Tensor t : inputs) {
                        if (eligible(t)) {
                            to = to == t.dtype() ? to : DType.FLOAT32;
                        }
                    }
                    yield to;
                }
            };
            if (target == null) {
                return inputs;
            }
            Tensor[] out = inputs;
            try {
                for (int i = 0; i < inputs.length; i++) {
                    Tensor t = inputs[i];
                    if (!eligible(t) || t.dtype() == target) {
                        continue;
                    }
                    if (out == inputs) {
                        out = inputs.clone();
                    }
                    out[i] = policy == CastPolicy.LOWER_PRECISION_FP ? cachedCast(t, target) : t.to(target);
                }
            } catch (RuntimeException | Error e) {
                if (out != inputs) {
                    for (int i = 0; i < out.length; i++) {
                        if (out[i] != inputs[i] && out[i] != null) {
                            out[i].close();
                        }
                    }
                }
                throw e;
            }
            return out;
        }

        private static boolean eligible(Tensor t) {
            return t != null && t.dtype().isFloatingPoint();
        }

        /** PyTorch's {@code cached_cast}: caches low-precision copies of float32 leaves that require grad. */
        private Tensor cachedCast(Tensor t, DType target) {
            boolean cacheable = state.cacheEnabled() && t.dtype() == DType.FLOAT32 && t.isLeaf() && t.requiresGrad();
            if (!cacheable) {
                return t.to(target);
            }
            Map<Tensor, Tensor> cache = (Autograd.isGradEnabled() ? withGrad : withoutGrad)
                    .computeIfAbsent(target, d -> new java.util.LinkedHashMap<>());
            Tensor c = cache.get(t);
            if (c == null || c.isClosed()) {
                c = io.vram4j.tensor.MemoryScope.detachFromAny(t.to(target));
                cache.put(t, c);
            }
            return c.view(c.shape());
        }

        int cacheSize() {
            int n = 0;
            for (Map<Tensor, Tensor> m : withGrad.values()) {
                n += m.size();
            }
            for (Map<Tensor, Tensor> m : withoutGrad.values()) {
                n += m.size();
            }
            return n;
        }

        void clearCache() {
            ArrayList<Tensor> all = new ArrayList<>();
            withGrad.values().forEach(m -> all.addAll(m.values()));
            withoutGrad.values().forEach(m -> all.addAll(m.values()));
            withGrad.clear();
            withoutGrad.clear();
            for (Tensor t : all) {
                t.close();
            }
        }
    }
}
