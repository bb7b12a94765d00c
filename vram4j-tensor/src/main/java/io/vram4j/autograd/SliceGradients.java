package io.vram4j.autograd;

import io.vram4j.tensor.BackwardOps;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import io.vram4j.tensor.internal.ExecutionContext;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The gradients of {@link Prim#NARROW} nodes held back until the input they slice is ready, as PyTorch's
 * {@code SplitBackward} holds a split's gradients for one {@code cat}. The Transformer splits q, k and v off one
 * projection by three narrows; their rule ({@link BackwardOps#narrowBackward}) would zero-fill a tensor of the whole
 * projection for each and the engine would add the three. When the held slices tile the input along one dimension
 * and nothing else sent it a gradient, they are copied into one new tensor instead
 * ({@link BackwardOps#splitBackward}); in any other case each is widened by the rule and summed as before. Used by
 * one backward pass on its thread; not thread-safe.
 */
final class SliceGradients {
    /** A held gradient: the narrow node it came through and the gradient of that node's output (owned). */
    private record Part(Node node, Tensor grad) {
        int dim() {
            return node.ints[0];
        }

        int start() {
            return node.ints[1];
        }
    }

    /** Held parts by the node of the sliced input, in the order they came (a reproducible order of frees). */
    private final Map<Node, List<Part>> held = new LinkedHashMap<>();

    /**
     * Takes the gradient of a narrow node's output when the narrowed input has a node (not a leaf) that wants it in
     * the node's own dtype.
     *
     * @param grad the gradient of {@code node}'s output, owned; taken over when this returns true
     * @return whether it was taken (the caller then treats the node as done without running its rule)
     */
    boolean hold(Node node, Tensor grad) {
        if (node.prim != Prim.NARROW || node.next[0] == null || !node.needsGrad(0)
                || grad.dtype() != node.dtypes[0]) {
            return false;
        }
        held.computeIfAbsent(node.next[0], n -> new ArrayList<>()).add(new Part(node, grad));
        return true;
    }

    /**
     * @param input a node about to run
     * @param others the sum of the other gradients of its output (owned), or null
     * @param scope the engine's scope, from which a new gradient is detached
     * @return the whole gradient of its output (owned): {@code others} when no slices were held for it
     */
    Tensor merge(Node input, Tensor others, MemoryScope scope) {
        List<Part> parts = held.remove(input);
        if (parts == null) {
            return others;
        }
        parts.sort(Comparator.comparingInt(Part::start));
        Part first = parts.get(0);
        int[] shape = first.node.shapes[0];
        try (ExecutionContext.Region r = ExecutionContext.enterBackward(first.node.module,
                first.node.prim.backwardName())) {
            if (others == null && tiles(parts, shape)) {
                return scope.detach(BackwardOps.splitBackward(parts.stream().map(Part::grad).toList(), shape,
                        first.dim()));
            }
            Tensor sum = others;
            for (Part p : parts) {
                Tensor whole = scope.detach(BackwardOps.narrowBackward(p.grad, shape, p.dim(), p.start()));
                sum = sum == null ? whole : Engine.addGradients(sum, whole, scope);
            }
            return sum;
        } finally {
            for (Part p : parts) {
                p.grad.close();
            }
        }
    }

    /**
     * @param parts sorted by start; their gradients share a dtype (the input's: {@link #hold})
     * @return whether the parts slice one dimension of {@code shape} into disjoint ranges covering all of it
     */
    private static boolean tiles(List<Part> parts, int[] shape) {
        int dim = parts.get(0).dim();
        int at = 0;
        for (Part p : parts) {
            if (p.dim() != dim || p.start() != at || !Arrays.equals(p.node.shapes[0], shape)) {
                return false;
            }
            at += p.grad.shape()[dim];
        }
        return at == shape[dim];
    }

    /** Frees every gradient still held (a backward pass that failed). */
    void closeAll() {
        for (List<Part> parts : held.values()) {
            for (Part p : parts) {
                p.grad.close();
            }
        }
        held.clear();
    }
}
