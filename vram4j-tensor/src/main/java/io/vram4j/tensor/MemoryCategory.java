package io.vram4j.tensor;

/**
 * What a tensor storage holds, for the {@link MemoryProfiler}'s split of memory (the categories of PyTorch's
 * memory profiler, {@code torch.profiler._memory_profiler.Category}, reduced to the ones a training step needs).
 * A storage's category is decided when asked, in this order: a parameter's data, a gradient set on a leaf, an
 * optimizer's state, a tensor some autograd node saved for backward, anything else.
 */
public enum MemoryCategory {
    /** Data of a {@code Parameter}. */
    PARAMETERS,
    /** A leaf's {@code .grad}. */
    GRADIENTS,
    /** Buffers an optimizer keeps across steps (momentum, Adam moments). */
    OPTIMIZER_STATE,
    /** Tensors saved by autograd for backward (the activations). */
    ACTIVATIONS,
    /** Everything else: inputs, outputs not saved, gradients flowing through backward, scratch results. */
    TEMPORARIES;

    /** @return e.g. {@code "optimizer state"} */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ');
    }
}
