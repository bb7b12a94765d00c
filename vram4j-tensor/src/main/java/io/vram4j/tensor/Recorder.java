package io.vram4j.tensor;

import io.vram4j.autograd.Autograd;
import io.vram4j.autograd.Node;
import io.vram4j.autograd.Prim;
import io.vram4j.autograd.SavedTensorsHooks;

/**
 * Attaches a graph node to an op's output when recording is on and an input requires grad. Saved tensors go
 * through this thread's {@link SavedTensorsHooks} when a block is open (activation checkpointing).
 */
final class Recorder {
    private static final int[] NO_INTS = new int[0];
    private static final Tensor[] NONE = new Tensor[0];

    private Recorder() {
    }

    /** Counts {@code t} as saved for backward in its storage (the activations of the memory profile). */
    static Tensor markSaved(Tensor t) {
        t.savedForBackward = true;
        t.storage.info.savedRefs++;
        return t;
    }

    static boolean shouldRecord(Tensor... inputs) {
        if (!Autograd.isGradEnabled()) {
            return false;
        }
        for (Tensor t : inputs) {
            if (t != null && t.requiresGrad) {
                return true;
            }
        }
        return false;
    }

    static void record(Prim prim, Tensor out, Tensor[] inputs) {
        record(prim, out, inputs, NONE, NO_INTS, 0f);
    }

    static void record(Prim prim, Tensor out, Tensor[] inputs, Tensor[] save) {
        record(prim, out, inputs, save, NO_INTS, 0f);
    }

    /**
     * @param save tensors the rule needs (null entries allowed); each is shared (its storage retained) by the node
     */
    static void record(Prim prim, Tensor out, Tensor[] inputs, Tensor[] save, int[] ints, float scalar) {
        if (!out.dtype.isFloatingPoint() || !shouldRecord(inputs)) {
            return;
        }
        SavedTensorsHooks.Hooks hooks = SavedTensorsHooks.current();
        if (hooks != null && save.length > 0) {
            Object[] packed = new Object[save.length];
            try {
                for (int i = 0; i < save.length; i++) {
                    packed[i] = save[i] == null ? null : hooks.pack(save[i]);
                }
            } catch (RuntimeException | Error e) {
                for (Object o : packed) {
                    if (o != null) {
                        hooks.release(o);
                    }
                }
                throw e;
            }
            out.gradFn = Node.create(prim, inputs, packed, hooks, ints, scalar);
            out.requiresGrad = true;
            return;
        }
        Tensor[] saved = new Tensor[save.length];
        for (int i = 0; i < save.length; i++) {
            saved[i] = save[i] == null ? null : markSaved(save[i].share());
        }
        out.gradFn = Node.create(prim, inputs, saved, ints, scalar);
        out.requiresGrad = true;
    }
}
