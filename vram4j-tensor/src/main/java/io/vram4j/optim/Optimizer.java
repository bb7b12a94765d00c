package io.vram4j.optim;

import io.vram4j.autograd.NoGrad;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.internal.ExecutionContext;
import io.vram4j.tensor.LiveTensors;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Updates parameters from their gradients (as {@code torch.optim.Optimizer}). State tensors (momentum, Adam
 * moments) are allocated lazily at the first step of each parameter, from the parameter's device allocator,
 * and belong to no memory scope; {@link #close()} frees them. Updates are fused per parameter (no
 * temporaries, as {@code fused=True} in PyTorch) and skipped on devices without storage, where only the state
 * is allocated. Parameters without a gradient are skipped.
 *
 * <p>Not thread-safe.
 */
public abstract class Optimizer implements AutoCloseable {
    /** The parameters, in the order given. */
    protected final List<Tensor> params;
    private final Map<Tensor, Tensor[]> state = new IdentityHashMap<>();
    /** The learning rate. */
    protected float lr;

    /**
     * @param params the parameters (floating-point leaves)
     * @param lr the learning rate, at least 0
     */
    protected Optimizer(Iterable<? extends Tensor> params, float lr) {
        if (!(lr >= 0)) {
            throw new IllegalArgumentException("Invalid learning rate: " + lr);
        }
        this.params = new ArrayList<>();
        for (Tensor p : params) {
            if (!p.dtype().isFloatingPoint()) {
                throw new IllegalArgumentException("can only optimize floating-point tensors, got " + p.dtype());
            }
            this.params.add(p);
        }
        this.lr = lr;
    }

    /**
     * @return the parameters, in the order given (read-only); for gradient tools such as
     *     {@code io.vram4j.amp.GradScaler}, which unscales their gradients (PyTorch's {@code param_groups})
     */
    public final List<Tensor> parameters() {
        return java.util.Collections.unmodifiableList(params);
    }

    /** Applies one update to every parameter that has a gradient. */
    public final void step() {
        try (NoGrad ng = NoGrad.enter(); ExecutionContext.Region r = ExecutionContext.enterPhase("optimizer.step")) {
            List<Tensor> ps = new ArrayList<>();
            List<Tensor> gs = new ArrayList<>();
            for (Tensor p : params) {
                Tensor g = p.grad();
                if (g != null) {
                    ps.add(p);
                    gs.add(g);
                }
            }
            if (!updateGroup(ps, gs)) {
                for (int i = 0; i < ps.size(); i++) {
                    update(ps.get(i), gs.get(i));
                }
            }
        }
    }

    /**
     * Updates every parameter that has a gradient at once, when the optimizer can (a fused kernel on device memory).
     *
     * @param ps the parameters with a gradient, in order
     * @param gs their gradients
     * @return false to have {@link #update} called for each instead (the default)
     */
    protected boolean updateGroup(List<Tensor> ps, List<Tensor> gs) {
        return false;
    }

    /** @return true when the parameters are on a device's own memory with data ({@code cuda}): fused kernels apply */
    static boolean onDeviceMemory(List<Tensor> ps) {
        return !ps.isEmpty() && hasData(ps.get(0)) && !ps.get(0).device().hostAccessible();
    }

    /**
     * Updates one parameter.
     *
     * @param p the parameter
     * @param g its gradient (same shape)
     */
    protected abstract void update(Tensor p, Tensor g);

    /**
     * @param p a parameter
     * @param count how many state tensors it needs
     * @return its state tensors, created as zeros (same shape and dtype as {@code p}) on first use
     */
    protected final Tensor[] state(Tensor p, int count) {
        Tensor[] s = state.get(p);
        if (s == null) {
            s = new Tensor[count];
            Device d = p.device();
            for (int i = 0; i < count; i++) {
                s[i] = MemoryScope.detachFromAny(d.zeros(p.dtype(), p.shape()));
                LiveTensors.markOptimizerState(s[i]);
            }
            state.put(p, s);
        }
        return s;
    }

    /** @return true when {@code p}'s state has been created */
    protected final boolean hasState(Tensor p) {
        return state.containsKey(p);
    }

    /** @return bytes held by optimizer state */
    public long stateBytes() {
        long n = 0;
        for (Tensor[] s : state.values()) { // order does not matter for a sum
            for (Tensor t : s) {
                n += t.nbytes();
            }
        }
        return n;
    }

    /**
     * Clears gradients.
     *
     * @param setToNone close them, returning their memory to the allocator (PyTorch's default), instead of
     *     filling them with zeros
     */
    public void zeroGrad(boolean setToNone) {
        for (Tensor p : params) {
            if (setToNone) {
                p.setGrad(null);
            } else if (p.grad() != null) {
                p.grad().zero();
            }
        }
    }

    /** Same as {@code zeroGrad(true)}. */
    public void zeroGrad() {
        zeroGrad(true);
    }

    /** @return the learning rate */
    public float lr() {
        return lr;
    }

    /** @param lr the learning rate from the next step on */
    public void setLr(float lr) {
        this.lr = lr;
    }

    /** Frees the optimizer state. Idempotent. */
    @Override
    public void close() {
        for (Tensor p : params) {
            Tensor[] s = state.remove(p);
            if (s != null) {
                for (Tensor t : s) {
                    t.close();
                }
            }
        }
    }

    /** Fused loops read and write elements through this, for float32 and 16-bit types alike. */
    static boolean hasData(Tensor p) {
        return p.device().hasStorage();
    }

    static boolean isF32(Tensor... ts) {
        for (Tensor t : ts) {
            if (t.dtype() != DType.FLOAT32) {
                return false;
            }
        }
        return true;
    }
}
