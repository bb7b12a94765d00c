package io.vram4j.autograd;

import io.vram4j.tensor.internal.ExecutionContext;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Tensor;

import java.util.ArrayDeque;

/**
 * A recorded op in the autograd graph (PyTorch's {@code grad_fn}): its primitive, edges to the nodes (or
 * leaves) of its inputs, and the tensors it saved for its backward rule.
 *
 * <p>Nodes are reference-counted: one reference from the tensor the op produced and one from each node that
 * consumed that tensor. When the count reaches zero (the tensors were closed) the saved tensors are released.
 * A backward pass releases each node's saved tensors right after using them, unless the graph is retained.
 * Nodes are created by the tensor runtime; user code only inspects them.
 */
public final class Node {
    final Prim prim;
    final Node[] next;
    final Tensor[] leaves;
    final int[][] shapes;
    final DType[] dtypes;
    final int[] ints;
    final float scalar;
    private final boolean hadSaved;
    Tensor[] saved;
    /** Values from {@link SavedTensorsHooks.Hooks#pack} (null without hooks); unpacked lazily into {@link #saved}. */
    private Object[] packed;
    private SavedTensorsHooks.Hooks hooks;
    private int refs = 1;
    /** The module whose forward recorded this node ({@link io.vram4j.tensor.internal.ExecutionContext}), or null. */
    final String module = io.vram4j.tensor.internal.ExecutionContext.currentModule();

    private Node(Prim prim, Tensor[] inputs, Tensor[] saved, int[] ints, float scalar) {
        this.prim = prim;
        int n = inputs.length;
        this.next = new Node[n];
        this.leaves = new Tensor[n];
        this.shapes = new int[n][];
        this.dtypes = new DType[n];
        for (int i = 0; i < n; i++) {
            Tensor t = inputs[i];
            if (t == null) {
                continue;
            }
            shapes[i] = t.shape();
            dtypes[i] = t.dtype();
            if (t.requiresGrad()) {
                Node fn = t.gradFn();
                if (fn != null) {
                    fn.refs++;
                    next[i] = fn;
                } else {
                    leaves[i] = t;
                }
            }
        }
        this.saved = saved;
        this.hadSaved = saved.length > 0;
        this.ints = ints;
        this.scalar = scalar;
    }

    /**
     * Records a node. For the tensor runtime; the caller attaches the node to the op's output.
     *
     * @param prim the primitive
     * @param inputs the op's inputs (entries may be null for absent optional inputs)
     * @param saved tensors the backward rule needs; the node takes ownership and closes them
     * @param ints integer arguments of the primitive (dimensions, shapes), or an empty array
     * @param scalar a float argument of the primitive, or 0
     * @return a node with one reference (the output's)
     */
    public static Node create(Prim prim, Tensor[] inputs, Tensor[] saved, int[] ints, float scalar) {
        return new Node(prim, inputs, saved, ints, scalar);
    }

    /**
     * Records a node whose saved tensors went through saved-tensors hooks: the node keeps {@code packed} and
     * unpacks entry {@code i} the first time its rule reads saved tensor {@code i}. For the tensor runtime.
     *
     * @param prim the primitive
     * @param inputs the op's inputs (entries may be null)
     * @param packed what {@code hooks.pack} returned for each saved tensor (null for absent ones)
     * @param hooks the hooks that packed them; {@link SavedTensorsHooks.Hooks#release} is called for each when
     *     the node releases its saved values
     * @param ints integer arguments of the primitive, or an empty array
     * @param scalar a float argument of the primitive, or 0
     * @return a node with one reference (the output's)
     */
    public static Node create(Prim prim, Tensor[] inputs, Object[] packed, SavedTensorsHooks.Hooks hooks, int[] ints,
            float scalar) {
        Node n = new Node(prim, inputs, new Tensor[packed.length], ints, scalar);
        n.packed = packed;
        n.hooks = hooks;
        return n;
    }

    /** @return the dotted path of the module whose forward recorded this node, or null when outside any */
    public String module() {
        return module;
    }

    /** @return the primitive this node records */
    public Prim prim() {
        return prim;
    }

    /** @return true when input {@code i} needs a gradient */
    boolean needsGrad(int i) {
        return next[i] != null || leaves[i] != null;
    }

    /** @return whether this node's saved tensors were already released */
    boolean savedReleased() {
        return hadSaved && saved == null;
    }

    Tensor saved(int i) {
        if (saved == null) {
            throw new IllegalStateException("Trying to backward through the graph a second time (or directly access "
                    + "saved tensors after they have already been freed). Saved intermediate values of the graph are "
                    + "freed when you call backward(). Specify retainGraph=true if you need to backward through the "
                    + "graph a second time.");
        }
        Tensor t = saved[i];
        if (t == null && packed != null && packed[i] != null) {
            t = hooks.unpack(packed[i]);
            saved[i] = t;
        }
        return t;
    }

    /** Releases the saved tensors (the node stays usable as a structure). */
    void freeSaved() {
        Tensor[] s = saved;
        Object[] p = packed;
        saved = null;
        packed = null;
        try {
            if (s != null) {
                for (Tensor t : s) {
                    if (t != null) {
                        t.close();
                    }
                }
            }
        } finally {
            if (p != null) {
                for (Object o : p) {
                    if (o != null) {
                        hooks.release(o);
                    }
                }
            }
        }
    }

    /**
     * Drops one reference; at zero frees the saved tensors and releases the input nodes. For the tensor runtime
     * (called when the output tensor is closed).
     */
    public void release() {
        ArrayDeque<Node> work = new ArrayDeque<>();
        work.push(this);
        while (!work.isEmpty()) {
            Node n = work.pop();
            if (--n.refs == 0) {
                n.freeSaved();
                for (int i = 0; i < n.next.length; i++) {
                    if (n.next[i] != null) {
                        work.push(n.next[i]);
                        n.next[i] = null;
                    }
                    n.leaves[i] = null;
                }
            }
        }
    }

    @Override
    public String toString() {
        return prim.backwardName();
    }
}
