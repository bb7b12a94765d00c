package io.vram4j.train;

import io.vram4j.autograd.Autograd;
import io.vram4j.autograd.SavedTensorsHooks;
import io.vram4j.nn.Module;
import io.vram4j.nn.Sequential;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * Activation checkpointing, as PyTorch's {@code torch.utils.checkpoint.checkpoint(fn, *args,
 * use_reentrant=False)} and {@code checkpoint_sequential}: the region runs forward without keeping the
 * tensors its ops save for backward, and backward recomputes them by running the region again.
 *
 * <h2>Semantics (the non-reentrant variant, {@code torch/utils/checkpoint.py})</h2>
 * <ul>
 *   <li>The graph is the one the forward pass recorded; only the saved tensors are dropped (through
 *       {@link SavedTensorsHooks}) and recomputed, so the gradients are the un-checkpointed ones bit for bit
 *       when the region is deterministic.</li>
 *   <li>Random ops: the state of every {@link Generator} the region draws from is remembered before its
 *       first draw and restored for the recomputation, then put back ({@code preserve_rng_state=True},
 *       {@code torch.random.fork_rng}), so dropout replays the same mask.</li>
 *   <li>The recomputation runs with grad enabled and the {@linkplain io.vram4j.amp.Autocast autocast} state
 *       of the forward pass, wherever backward is called.</li>
 *   <li>Inputs that do not require grad are fine: parameters used inside the region still get their
 *       gradients (unlike the reentrant variant); such inputs get none.</li>
 *   <li>Under {@link io.vram4j.autograd.NoGrad} the function simply runs (nothing is recorded, nothing to
 *       recompute).</li>
 *   <li>Checkpoints nest: an inner checkpoint's inputs are saved through the outer one and recomputed by it.</li>
 *   <li>Early stop (on by default, {@link #setEarlyStop}): the recomputation ends as soon as the last saved
 *       tensor exists again, so trailing ops that save nothing are not rerun. The region's code sees this as
 *       an exception it must not swallow.</li>
 *   <li>A recomputation that saves a different number of tensors, or tensors of another shape or dtype,
 *       throws {@link CheckpointError} (PyTorch's {@code determinism_check="default"}).</li>
 * </ul>
 *
 * <h2>Memory</h2>
 * The region's inputs are kept until its recomputation; everything created inside is freed as soon as the
 * region's code closes it. During backward the region's saved tensors exist once more, one region at a time.
 *
 * <pre>{@code
 * Tensor h = Checkpoint.checkpoint(block, x);                      // a module
 * Tensor y = Checkpoint.checkpoint(in -> f(in[0], in[1]), a, b);   // a function of several tensors
 * Tensor z = Checkpoint.checkpointSequential(layers, 4, x);         // 4 segments, the last not checkpointed
 * }</pre>
 *
 * <p>The function must not close its inputs and must return a new tensor (as {@link Module#forward} does);
 * it is called again during backward, on the thread that runs backward. Not thread-safe per call: a region
 * must be recomputed on one thread at a time.
 */
public final class Checkpoint {
    private static final ThreadLocal<Boolean> EARLY_STOP = ThreadLocal.withInitial(() -> Boolean.TRUE);

    private Checkpoint() {
    }

    /** A block that sets whether recomputations stop early; closing it restores the previous setting. */
    public static final class EarlyStop implements AutoCloseable {
        private final boolean previous;
        private boolean closed;

        private EarlyStop(boolean enable) {
            previous = EARLY_STOP.get();
            EARLY_STOP.set(enable);
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                EARLY_STOP.set(previous);
            }
        }
    }

    /**
     * Sets, for checkpoints taken on this thread until the block closes, whether their recomputation stops as
     * soon as every tensor the forward saved has been recomputed (as
     * {@code torch.utils.checkpoint.set_checkpoint_early_stop}; on by default). With early stop off, the whole
     * region reruns and a recomputation that saves more tensors than the forward is reported as an error.
     *
     * @param enable the setting
     * @return the block
     */
    public static EarlyStop setEarlyStop(boolean enable) {
        return new EarlyStop(enable);
    }

    /** @return whether checkpoints taken now on this thread stop their recomputation early */
    public static boolean isEarlyStop() {
        return EARLY_STOP.get();
    }

    /**
     * Checkpoints {@code fn(inputs)}, preserving generator states.
     *
     * @param fn the region: a deterministic function of its inputs (and of generator states)
     * @param inputs its inputs (entries may be null); not closed
     * @return {@code fn(inputs)}, owned by the caller
     */
    public static Tensor checkpoint(Function<Tensor[], Tensor> fn, Tensor... inputs) {
        return checkpoint(fn, true, inputs);
    }

    /**
     * Checkpoints {@code fn(inputs)}.
     *
     * @param fn the region
     * @param preserveRngState whether to replay the generators' draws in the recomputation (PyTorch's
     *     {@code preserve_rng_state}); false only when the region draws nothing that matters
     * @param inputs its inputs (entries may be null); not closed
     * @return {@code fn(inputs)}, owned by the caller
     */
    public static Tensor checkpoint(Function<Tensor[], Tensor> fn, boolean preserveRngState, Tensor... inputs) {
        Objects.requireNonNull(fn, "fn");
        if (!Autograd.isGradEnabled()) {
            return fn.apply(inputs);
        }
        CheckpointFrame frame = new CheckpointFrame(fn, inputs, EARLY_STOP.get());
        Tensor out;
        try (Generator.Observation obs = preserveRngState ? Generator.observe(frame::beforeDraw) : null;
             SavedTensorsHooks h = SavedTensorsHooks.push(frame.forwardHooks())) {
            out = fn.apply(inputs);
        } finally {
            frame.forwardDone();
        }
        return out;
    }

    /**
     * Checkpoints {@code module.forward(input)}.
     *
     * @param module a single-input module
     * @param input its input; not closed
     * @return the output, owned by the caller
     */
    public static Tensor checkpoint(Module module, Tensor input) {
        Objects.requireNonNull(module, "module");
        return checkpoint(in -> module.forward(in[0]), input);
    }

    /**
     * Runs {@code seq}'s layers in {@code segments} segments, checkpointing all but the last (as
     * {@code torch.utils.checkpoint.checkpoint_sequential}).
     *
     * @see #checkpointSequential(List, int, Tensor)
     */
    public static Tensor checkpointSequential(Sequential seq, int segments, Tensor input) {
        return checkpointSequential(seq.layers(), segments, input);
    }

    /**
     * Runs {@code functions} in order, split into {@code segments} segments of {@code n / segments} modules;
     * every segment but the last is checkpointed, the last one (which gets the remaining modules) runs
     * normally, exactly as PyTorch's {@code checkpoint_sequential}. Intermediate outputs are closed once used.
     *
     * @param functions single-input modules
     * @param segments from 1 to the number of modules; one segment checkpoints nothing, {@code n} segments
     *     checkpoint every module but the last
     * @param input the first module's input; not closed
     * @return the last module's output, owned by the caller
     * @throws IllegalArgumentException when {@code segments} is out of that range
     */
    public static Tensor checkpointSequential(List<? extends Module> functions, int segments, Tensor input) {
        if (segments < 1) {
            throw new IllegalArgumentException("checkpointSequential: segments must be at least 1, got " + segments);
        }
        int n = functions.size();
        if (segments > Math.max(n, 1)) {
            // PyTorch fails here too (a zero range step): a segment needs at least one module
            throw new IllegalArgumentException("checkpointSequential: " + segments + " segments for " + n
                    + " modules; segments must be between 1 and the number of modules");
        }
        int segmentSize = n / segments;
        int end = -1;
        Tensor cur = input;
        for (int start = 0; start < segmentSize * (segments - 1); start += segmentSize) {
            end = start + segmentSize - 1;
            int s = start;
            int e = end;
            Tensor next = checkpoint(in -> runRange(functions, s, e, in[0]), cur);
            if (cur != input) {
                cur.close();
            }
            cur = next;
        }
        Tensor out = runRange(functions, end + 1, n - 1, cur);
        if (cur != input) {
            cur.close();
        }
        return out;
    }

    /** Applies modules {@code start..end} (inclusive), closing intermediates; never closes {@code x}. */
    private static Tensor runRange(List<? extends Module> functions, int start, int end, Tensor x) {
        Tensor cur = x;
        for (int j = start; j <= end; j++) {
            Tensor next = functions.get(j).forward(cur);
            if (cur != x) {
                cur.close();
            }
            cur = next;
        }
        return cur == x ? x.view(x.shape()) : cur;
    }
}
