package io.vram4j.tensor;

import io.vram4j.autograd.Autograd;
import io.vram4j.autograd.Node;
import io.vram4j.autograd.Prim;

/** Attaches a graph node to an op's output when recording is on and an input requires grad. */
final class Recorder {
    private static final int[] NO_INTS = new int[0];
    private static final Tensor[] NONE = new Tensor[0];

    private Recorder() {
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
        Tensor[] saved = new Tensor[save.length];
        for (int i = 0; i < save.length; i++) {
            saved[i] = save[i] == null ? null : save[i].share();
        }
        out.gradFn = Node.create(prim, inputs, saved, ints, scalar);
        out.requiresGrad = true;
    }
}
