package io.vram4j.tensor.internal;

/**
 * What the current thread is doing, for memory attribution: the forward pass of a module (by its dotted
 * path, e.g. {@code h.3.attn}), the backward of a graph node recorded inside a module, or a named phase such
 * as the optimizer step. {@code nn.Module.call} enters modules, the autograd engine enters node backwards and
 * optimizers enter their step; the {@link io.vram4j.tensor.MemoryProfiler} and the {@link io.vram4j.tensor.LiveTensors} report read it. Per
 * thread; regions nest and must be closed innermost first (try-with-resources).
 */
public final class ExecutionContext {
    private static final ThreadLocal<Frame> CURRENT = new ThreadLocal<>();

    /**
     * @param kind {@code forward}, {@code backward} or a phase name
     * @param module the module's dotted path ({@code ""} for the root model), or null
     * @param detail e.g. the backward node's name, or null
     * @param parent the enclosing frame, or null
     */
    private record Frame(String kind, String module, String detail, Frame parent) implements Captured {
        @Override
        public String describe() {
            StringBuilder sb = new StringBuilder(kind);
            if (module != null) {
                sb.append(' ').append(module.isEmpty() ? "(model)" : module);
            }
            if (detail != null) {
                sb.append(" (").append(detail).append(')');
            }
            return sb.toString();
        }
    }

    /** A region as {@link #capture()} found it, described later (text is made only for the reports that show it). */
    public interface Captured {
        /** @return as {@link ExecutionContext#describe()} said when the region was captured */
        String describe();
    }

    /** An open region; closing it restores the enclosing one. */
    public static final class Region implements AutoCloseable {
        private final Frame previous;
        private boolean closed;

        private Region(Frame previous) {
            this.previous = previous;
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                CURRENT.set(previous);
            }
        }
    }

    private ExecutionContext() {
    }

    private static Region push(String kind, String module, String detail) {
        Frame f = CURRENT.get();
        CURRENT.set(new Frame(kind, module, detail, f));
        return new Region(f);
    }

    /**
     * @param modulePath the module's dotted path; {@code ""} for a root model
     * @return a region during which ops belong to this module's forward pass
     */
    public static Region enterForward(String modulePath) {
        return push("forward", modulePath, null);
    }

    /**
     * @param modulePath the module whose forward recorded the node, or null when unknown
     * @param nodeName e.g. {@code MatmulBackward}
     * @return a region during which ops belong to that node's backward rule
     */
    public static Region enterBackward(String modulePath, String nodeName) {
        return push("backward", modulePath, nodeName);
    }

    /**
     * @param phase e.g. {@code optimizer.step}
     * @return a region during which ops belong to that phase
     */
    public static Region enterPhase(String phase) {
        return push(phase, null, null);
    }

    /** @return the innermost module path of the current forward region, or null outside any */
    public static String currentModule() {
        Frame f = CURRENT.get();
        return f != null && f.kind().equals("forward") ? f.module() : null;
    }

    /**
     * @return e.g. {@code "forward h.3.attn"}, {@code "backward h.3.attn (SoftmaxBackward)"},
     *     {@code "optimizer.step"}, or {@code ""} outside any region
     */
    public static String describe() {
        Frame f = CURRENT.get();
        return f == null ? "" : f.describe();
    }

    /** @return the current region, to describe later (cheap: one read of a thread-local), or null outside any */
    public static Captured capture() {
        return CURRENT.get();
    }
}
