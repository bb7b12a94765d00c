/**
 * vram4j's tensor runtime: tensors whose every byte comes from the caching allocator, compute kernels, autograd,
 * modules, optimizers, mixed precision, data sets and training.
 *
 * <p>The engine's hooks ({@code io.vram4j.tensor.internal}: execution context, autocast hook) are not exported.
 * The Vector API ({@code jdk.incubator.vector}) is optional: with {@code --add-modules jdk.incubator.vector} the
 * vector kernels are used, else the scalar ones.
 */
module io.vram4j.tensor {
    requires transitive io.vram4j.core;
    requires com.fasterxml.jackson.core;
    requires com.fasterxml.jackson.databind;
    requires static jdk.incubator.vector;

    exports io.vram4j.amp;
    exports io.vram4j.autograd;
    exports io.vram4j.compute;
    exports io.vram4j.data;
    exports io.vram4j.nn;
    exports io.vram4j.optim;
    exports io.vram4j.tensor;
    exports io.vram4j.train;
}
