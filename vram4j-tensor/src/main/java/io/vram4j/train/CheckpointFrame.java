package io.vram4j.train;

import io.vram4j.amp.Autocast;
import io.vram4j.autograd.EnableGrad;
import io.vram4j.autograd.SavedTensorsHooks;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * One checkpointed call (PyTorch's {@code _CheckpointFrame}): remembers how to recompute the region and
 * hands the recomputed tensors to the nodes that saved placeholders during the forward pass.
 *
 * <p>Forward: every tensor an op in the region saves is packed as a {@link Holder} (its index in save
 * order, its shape and dtype), so nothing is retained. The region's inputs are kept (packed through the
 * enclosing hooks when this call is itself inside a checkpointed region, so nesting works as in PyTorch).
 * Backward: the first unpack reruns the function with grad enabled, the generators' pre-forward states and
 * the forward's autocast state, collecting the tensors saved in the same order; each one goes to the node
 * that unpacks its holder. With early stop (PyTorch's default) the rerun is abandoned, by an exception
 * thrown through the region's code, as soon as the last saved tensor exists again. The frame frees its inputs after recomputing, and any tensor nobody unpacked once
 * every holder is released.
 */
final class CheckpointFrame {
    private final Function<Tensor[], Tensor> fn;
    private final Autocast.State autocast;
    private final Map<Generator, Long> rngStates = new IdentityHashMap<>();
    // inputs: either held directly (no enclosing hooks) or packed through the enclosing hooks
    private final Tensor[] heldInputs;
    private final Object[] packedInputs;
    private final SavedTensorsHooks.Hooks inputHooks;
    private final boolean[] inputRequiresGrad;
    private boolean inputsReleased;

    private int packed;
    private int[][] shapes = new int[8][];
    private DType[] dtypes = new DType[8];
    /** Holders whose node already released them: their recomputed tensor is not kept. */
    private boolean[] released = new boolean[8];
    private int liveHolders;
    private Tensor[] recomputed;

    /** A placeholder a node keeps instead of a saved tensor. */
    record Holder(CheckpointFrame frame, int index) {
    }

    /** Thrown through the region's code once every saved tensor is recomputed (early stop). */
    private static final class StopRecomputation extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StopRecomputation() {
            super("checkpoint recomputation stopped early", null, false, false);
        }
    }

    private final boolean earlyStop;

    CheckpointFrame(Function<Tensor[], Tensor> fn, Tensor[] inputs, boolean earlyStop) {
        this.fn = fn;
        this.earlyStop = earlyStop;
        this.autocast = Autocast.state();
        int n = inputs.length;
        this.inputRequiresGrad = new boolean[n];
        this.inputHooks = SavedTensorsHooks.current();
        this.heldInputs = inputHooks == null ? new Tensor[n] : null;
        this.packedInputs = inputHooks == null ? null : new Object[n];
        for (int i = 0; i < n; i++) {
            Tensor t = inputs[i];
            if (t == null) {
                continue;
            }
            inputRequiresGrad[i] = t.requiresGrad();
            if (inputHooks == null) {
                heldInputs[i] = MemoryScope.detachFromAny(t.detach());
            } else {
                packedInputs[i] = inputHooks.pack(t);
            }
        }
    }

    /** Records the generator's state before the region's first draw from it. */
    void beforeDraw(Generator g) {
        rngStates.putIfAbsent(g, g.state());
    }

    /** Hooks active while the region runs forward. */
    SavedTensorsHooks.Hooks forwardHooks() {
        return new SavedTensorsHooks.Hooks() {
            @Override
            public Object pack(Tensor t) {
                int i = packed++;
                if (i == shapes.length) {
                    shapes = Arrays.copyOf(shapes, i * 2);
                    dtypes = Arrays.copyOf(dtypes, i * 2);
                    released = Arrays.copyOf(released, i * 2);
                }
                shapes[i] = t.shape();
                dtypes[i] = t.dtype();
                liveHolders++;
                return new Holder(CheckpointFrame.this, i);
            }

            @Override
            public Tensor unpack(Object p) {
                return take(((Holder) p).index());
            }

            @Override
            public void release(Object p) {
                releaseHolder(((Holder) p).index());
            }
        };
    }

    /** Called once the forward pass of the region ended: a region that saved nothing needs no inputs. */
    void forwardDone() {
        if (liveHolders == 0) {
            releaseInputs();
        }
    }

    private Tensor take(int index) {
        if (recomputed == null) {
            recompute();
        }
        Tensor t = recomputed[index];
        if (t == null) {
            throw new CheckpointError("torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                    + "unpacked once (saved tensor " + index + " of the checkpointed region)");
        }
        recomputed[index] = null;
        return t;
    }

    private void releaseHolder(int index) {
        liveHolders--;
        released[index] = true;
        if (recomputed != null && recomputed[index] != null) {
            recomputed[index].close();
            recomputed[index] = null;
        }
        if (liveHolders == 0) {
            releaseInputs();
        }
    }

    private void recompute() {
        if (inputsReleased) {
            throw new IllegalStateException("the checkpointed region's inputs were already released");
        }
        Tensor[] args = unpackInputs();
        Tensor[] out = new Tensor[packed];
        int[] count = {0};
        SavedTensorsHooks.Hooks collect = new SavedTensorsHooks.Hooks() {
            @Override
            public Object pack(Tensor t) {
                int i = count[0]++;
                if (i >= packed) {
                    throw new CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation "
                            + "than during the original forward pass (" + packed + ").");
                }
                if (!Arrays.equals(shapes[i], t.shape()) || dtypes[i] != t.dtype()) {
                    throw new CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                            + "different metadata than during the forward pass.\ntensor at position " + i
                            + ":\nsaved metadata: {'shape': " + Arrays.toString(shapes[i]) + ", 'dtype': " + dtypes[i]
                            + "}\nrecomputed metadata: {'shape': " + Arrays.toString(t.shape()) + ", 'dtype': "
                            + t.dtype() + "}");
                }
                if (!released[i]) {
                    out[i] = MemoryScope.detachFromAny(t.detach());
                }
                if (earlyStop && i + 1 == packed) {
                    throw new StopRecomputation();
                }
                return i;
            }

            @Override
            public Tensor unpack(Object p) {
                throw new IllegalStateException("tensors saved during a checkpoint recomputation are not unpacked");
            }
        };
        Map<Generator, Long> current = new IdentityHashMap<>();
        rngStates.forEach((g, s) -> {
            current.put(g, g.state());
            g.setState(s);
        });
        boolean ok = false;
        try (EnableGrad eg = EnableGrad.enter();
             Autocast ac = Autocast.enter(autocast);
             SavedTensorsHooks h = SavedTensorsHooks.push(collect);
             MemoryScope scope = MemoryScope.open()) {
            try {
                fn.apply(args);
            } catch (StopRecomputation stop) {
                // every tensor the forward saved exists again: the rest of the region is not needed
            }
            if (count[0] != packed) {
                throw new CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the "
                        + "original forward and recomputation.\nNumber of tensors saved during forward: " + packed
                        + "\nNumber of tensors saved during recomputation: " + count[0]);
            }
            ok = true;
        } finally {
            current.forEach(Generator::setState);
            for (Tensor a : args) {
                if (a != null) {
                    a.close();
                }
            }
            if (!ok) {
                for (Tensor t : out) {
                    if (t != null) {
                        t.close();
                    }
                }
            }
        }
        recomputed = out;
        releaseInputs();
    }

    private Tensor[] unpackInputs() {
        int n = inputRequiresGrad.length;
        Tensor[] args = new Tensor[n];
        try {
            for (int i = 0; i < n; i++) {
                Tensor src;
                if (heldInputs != null) {
                    src = heldInputs[i];
                    if (src == null) {
                        continue;
                    }
                    args[i] = MemoryScope.detachFromAny(src.detach());
                } else {
                    if (packedInputs[i] == null) {
                        continue;
                    }
                    Tensor u = inputHooks.unpack(packedInputs[i]);
                    args[i] = MemoryScope.detachFromAny(u.detach());
                    u.close();
                }
                if (inputRequiresGrad[i]) {
                    args[i].requiresGrad(true);
                }
            }
        } catch (RuntimeException | Error e) {
            for (Tensor a : args) {
                if (a != null) {
                    a.close();
                }
            }
            throw e;
        }
        return args;
    }

    private void releaseInputs() {
        if (inputsReleased) {
            return;
        }
        inputsReleased = true;
        int n = inputRequiresGrad.length;
        for (int i = 0; i < n; i++) {
            if (heldInputs != null && heldInputs[i] != null) {
                heldInputs[i].close();
                heldInputs[i] = null;
            } else if (packedInputs != null && packedInputs[i] != null) {
                inputHooks.release(packedInputs[i]);
                packedInputs[i] = null;
            }
        }
    }
}
