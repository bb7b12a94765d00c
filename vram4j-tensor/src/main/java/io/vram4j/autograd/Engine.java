package io.vram4j.autograd;

import io.vram4j.tensor.internal.AutocastHook;
import io.vram4j.tensor.internal.ExecutionContext;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Runs a backward pass: collects the nodes reachable from the root, counts for each how many consumers
 * will send it a gradient, then processes nodes once all their consumers are done (Kahn's topological
 * order). Each node's incoming gradients are summed (in place when the first buffer is not shared), its rule from {@link GradientRules} produces its input
 * gradients, and (unless the graph is retained) its saved tensors are released at once, so activation memory
 * drops while backward proceeds. Leaf gradients are added into {@link Tensor#grad()}: the first one is
 * taken over without a copy when nothing else shares its storage (as PyTorch's {@code AccumulateGrad}).
 * Rules run with recording disabled, inside a memory scope that closes their temporaries. The gradients of narrows
 * are held for the node of the input they slice and, when they tile it, copied into one tensor
 * ({@link SliceGradients}, PyTorch's {@code SplitBackward}).
 */
final class Engine {
    private Engine() {
    }

    static void backward(Tensor root, Tensor gradient, boolean retainGraph) {
        if (!root.requiresGrad()) {
            throw new IllegalStateException("element 0 of tensors does not require grad and does not have a grad_fn");
        }
        // insertion order (nodes compare by identity): gradients still pending when a rule fails are freed in a
        // reproducible order, so that two runs of the same job free the same blocks in the same order
        Map<Node, Tensor> pending = new LinkedHashMap<>();
        SliceGradients slices = new SliceGradients();
        // backward ops run in the dtypes of their forward ops: autocast is suspended (as in PyTorch, where the
        // autocast state does not reach the autograd engine's threads)
        AutocastHook.Interceptor autocast = AutocastHook.install(null);
        try (NoGrad ng = NoGrad.enter(); MemoryScope scope = MemoryScope.open()) {
            Tensor g;
            if (gradient == null) {
                if (root.numel() != 1) {
                    throw new IllegalStateException("grad can be implicitly created only for scalar outputs, not shape "
                            + Arrays.toString(root.shape()));
                }
                g = root.device().full(root.dtype(), 1f, root.shape());
            } else {
                if (!Arrays.equals(gradient.shape(), root.shape())) {
                    throw new IllegalArgumentException("gradient shape " + Arrays.toString(gradient.shape())
                            + " does not match the tensor's shape " + Arrays.toString(root.shape()));
                }
                g = gradient.dtype() == root.dtype() ? gradient.detach() : gradient.to(root.dtype());
            }
            scope.detach(g);
            Node rootNode = root.gradFn();
            if (rootNode == null) {
                accumulate(root, g);
                return;
            }
            Map<Node, Integer> deps = countDependencies(rootNode);
            pending.put(rootNode, g);
            ArrayDeque<Node> ready = new ArrayDeque<>();
            ready.add(rootNode);
            while (!ready.isEmpty()) {
                Node node = ready.poll();
                Tensor gout = slices.merge(node, pending.remove(node), scope);
                Tensor[] gin;
                if (gout != null && slices.hold(node, gout)) {
                    gin = new Tensor[node.next.length];   // a narrow's gradient, held for its input's node
                } else {
                    gin = gout == null ? new Tensor[node.next.length] : apply(node, gout);
                }
                if (!retainGraph) {
                    node.freeSaved();
                }
                for (int i = 0; i < node.next.length; i++) {
                    Tensor gi = gin[i];
                    if (gi != null && node.dtypes[i] != null && gi.dtype() != node.dtypes[i]) {
                        Tensor c = scope.detach(gi.to(node.dtypes[i]));
                        gi.close();
                        gi = c;
                    }
                    Node nx = node.next[i];
                    if (nx != null) {
                        if (gi != null) {
                            Tensor old = pending.get(nx);
                            pending.put(nx, old == null ? gi : addGradients(old, gi, scope));
                        }
                        int left = deps.merge(nx, -1, Integer::sum);
                        if (left == 0) {
                            ready.add(nx);
                        }
                    } else if (gi != null) {
                        Tensor leaf = node.leaves[i];
                        if (leaf != null) {
                            accumulate(leaf, gi);
                        } else {
                            gi.close();
                        }
                    }
                }
            }
        } finally {
            AutocastHook.install(autocast);
            for (Tensor t : pending.values()) {
                t.close();
            }
            slices.closeAll();
        }
    }

    /**
     * @return {@code old + g}, both owned and given up: in place into {@code old} when nothing else shares its
     *     storage and dtype and shape agree, else a new tensor detached from {@code scope}
     */
    static Tensor addGradients(Tensor old, Tensor g, MemoryScope scope) {
        if (exclusive(old) && old.dtype() == g.dtype() && Arrays.equals(old.shape(), g.shape())) {
            old.addInPlace(g);
            g.close();
            return old;
        }
        Tensor sum = scope.detach(old.add(g));
        old.close();
        g.close();
        return sum;
    }

    private static Tensor[] apply(Node node, Tensor gout) {
        if (node.savedReleased()) {
            gout.close();
            node.saved(0); // throws the "backward through the graph a second time" error
        }
        Tensor[] gin;
        try (ExecutionContext.Region r = ExecutionContext.enterBackward(node.module, node.prim.backwardName());
             MemoryScope s = MemoryScope.open()) {
            gin = GradientRules.apply(node, gout);
            for (int i = 0; i < gin.length; i++) {
                if (gin[i] != null) {
                    if (!node.needsGrad(i)) {
                        gin[i] = null;
                    } else {
                        s.detach(gin[i]);
                    }
                }
            }
        } finally {
            gout.close();
        }
        return gin;
    }

    private static Map<Node, Integer> countDependencies(Node root) {
        Map<Node, Integer> deps = new IdentityHashMap<>();
        ArrayDeque<Node> stack = new ArrayDeque<>();
        deps.put(root, 0);
        stack.push(root);
        while (!stack.isEmpty()) {
            Node n = stack.pop();
            for (Node nx : n.next) {
                if (nx != null) {
                    Integer c = deps.get(nx);
                    if (c == null) {
                        stack.push(nx);
                    }
                    deps.put(nx, c == null ? 1 : c + 1);
                }
            }
        }
        return deps;
    }

    /** True when {@code t} is the only handle over its whole, contiguous storage (safe to update in place). */
    private static boolean exclusive(Tensor t) {
        return t.isContiguous() && t.storage().refCount() == 1 && t.storageOffset() == 0
                && t.storage().byteSize() == t.nbytes();
    }

    /** Adds {@code g} (owned, no scope) into the leaf's gradient. */
    private static void accumulate(Tensor leaf, Tensor g) {
        if (leaf.isClosed()) {
            g.close();
            return;
        }
        Tensor cur = leaf.grad();
        if (cur == null) {
            if (exclusive(g)) {
                leaf.setGrad(g);
            } else {
                Tensor c = g.copy();
                g.close();
                leaf.setGrad(c);
            }
        } else {
            try {
                cur.addInPlace(g);
            } finally {
                g.close();
            }
        }
    }
}
