package io.vram4j.bench;

import io.vram4j.data.Batch;

/**
 * One framework's MLP training step, as {@link TrainStepBenchmark} and {@link TrainStepMemory} drive it: the
 * model is built by {@link #open}, each {@link #step} is forward, cross-entropy, backward and an SGD update on
 * one batch, with the loss read back to Java (so the step is complete when it returns).
 *
 * <p>The DJL implementation lives in {@code src/djl/java} and is compiled only with {@code -Pdjl}; it is
 * reached by name, so this module builds without DJL.
 */
interface StepEngine extends AutoCloseable {
    /**
     * The MLP and optimizer both engines run.
     *
     * @param hidden   width of the two hidden layers (784-hidden-hidden-10, ReLU)
     * @param batch    samples per step
     * @param threads  compute threads (ours: {@code vram4j.compute.threads}; PyTorch: intra-op threads)
     * @param lr       SGD learning rate
     * @param momentum SGD momentum (0: plain SGD)
     */
    record Config(int hidden, int batch, int threads, float lr, float momentum) {
        static final int FEATURES = 784;
        static final int CLASSES = 10;
    }

    /** @return the engine and its settings in words */
    String description();

    /**
     * One training step.
     *
     * @param batch {@code [batch, 784]} float32 samples and their labels
     * @return the batch's mean loss
     */
    double step(Batch batch);

    /**
     * The memory the engine itself can report, in bytes, by name (insertion order). Ours: the caching
     * allocator's {@code memory_allocated}, {@code max_memory_allocated}, {@code memory_reserved} and
     * {@code max_memory_reserved}; DJL: the bytes of the parameter and gradient arrays it holds (PyTorch's
     * CPU allocator keeps no statistics that DJL exposes).
     *
     * @return name to bytes
     */
    java.util.Map<String, Long> reportedMemory();

    /** Starts a new peak window for {@link #reportedMemory()} where the engine keeps peaks (ours); else nothing. */
    void resetPeaks();

    /** Frees the model, optimizer state and the engine's per-run buffers. */
    @Override
    void close();

    /**
     * Opens an engine by name.
     *
     * @param name   {@code vram4j} or {@code djl}
     * @param config the model and threads
     * @return the engine, with its model built
     * @throws IllegalArgumentException for an unknown name
     * @throws IllegalStateException if {@code djl} is asked for in a build without {@code -Pdjl}
     */
    static StepEngine open(String name, Config config) {
        return switch (name) {
            case "vram4j" -> new Vram4jStep(config);
            case "djl" -> {
                try {
                    Class<?> c = Class.forName("io.vram4j.bench.DjlStep");
                    yield (StepEngine) c.getDeclaredConstructor(Config.class).newInstance(config);
                } catch (ClassNotFoundException e) {
                    throw new IllegalStateException("engine djl is not in this build; build vram4j-bench with -Pdjl", e);
                } catch (java.lang.reflect.InvocationTargetException e) {
                    if (e.getCause() instanceof RuntimeException r) {
                        throw r;
                    }
                    throw new IllegalStateException("cannot start DJL: " + e.getCause(), e.getCause());
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException("cannot start DJL: " + e, e);
                }
            }
            default -> throw new IllegalArgumentException("unknown engine '" + name + "'; expected vram4j or djl");
        };
    }
}
