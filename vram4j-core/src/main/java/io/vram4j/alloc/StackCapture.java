package io.vram4j.alloc;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Set;

/**
 * Captures the caller's Java stack for memory history, skipping vram4j's own allocator, device and memory
 * frames (and the JDK's) so the first frame is the code that asked for memory. At most {@link #MAX_FRAMES}
 * frames are kept. Thread-safe.
 *
 * <p>Capturing is on the allocator's hot path when recording is on, so it does the least it can there: the
 * walk stops after {@link #MAX_FRAMES} kept frames, whether a class is skipped is decided once per class
 * ({@link ClassValue}), and frames stay raw {@link StackWalker.StackFrame}s until a snapshot reads them
 * ({@link Stack#frames()}), because turning a frame into a file name and line number costs more than the
 * walk.
 */
final class StackCapture {
    static final int MAX_FRAMES = 24;
    private static final StackWalker WALKER = StackWalker.getInstance(Set.of(StackWalker.Option.RETAIN_CLASS_REFERENCE),
            MAX_FRAMES + 16);
    private static final String[] SKIPPED = {"io.vram4j.alloc.", "io.vram4j.device.", "io.vram4j.memory.",
            "io.vram4j.tensor.Storage", "java.", "jdk.", "sun."};
    private static final ClassValue<Boolean> SKIP = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            return skipped(type.getName());
        }
    };

    /** One captured frame, as PyTorch's {name, filename, line}. */
    record JavaFrame(String name, String filename, int line) {
    }

    /** A captured stack; its frames are resolved to names, files and lines on first read, then kept. */
    static final class Stack {
        private final StackWalker.StackFrame[] raw;
        private volatile List<JavaFrame> resolved;

        private Stack(StackWalker.StackFrame[] raw) {
            this.raw = raw;
        }

        /** @return the kept frames, innermost first (immutable) */
        List<JavaFrame> frames() {
            List<JavaFrame> r = resolved;
            if (r == null) {
                List<JavaFrame> out = new ArrayList<>(raw.length);
                for (StackWalker.StackFrame f : raw) {
                    out.add(frame(f));
                }
                r = Collections.unmodifiableList(out);
                resolved = r;
            }
            return r;
        }
    }

    private StackCapture() {
    }

    /** @return the caller's stack (vram4j's and the JDK's frames left out) */
    static Stack capture() {
        return new Stack(WALKER.walk(StackCapture::keep));
    }

    private static StackWalker.StackFrame[] keep(java.util.stream.Stream<StackWalker.StackFrame> frames) {
        StackWalker.StackFrame[] out = new StackWalker.StackFrame[MAX_FRAMES];
        int n = 0;
        Iterator<StackWalker.StackFrame> it = frames.iterator();
        while (n < MAX_FRAMES && it.hasNext()) {
            StackWalker.StackFrame f = it.next();
            if (!SKIP.get(f.getDeclaringClass())) {
                out[n++] = f;
            }
        }
        return n == MAX_FRAMES ? out : Arrays.copyOf(out, n);
    }

    private static boolean skipped(String className) {
        if (className.contains("Test")) {
            return false; // vram4j's own test classes are callers, not infrastructure
        }
        for (String prefix : SKIPPED) {
            if (className.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    private static JavaFrame frame(StackWalker.StackFrame f) {
        String cls = f.getClassName();
        int dot = cls.lastIndexOf('.');
        String simple = cls.substring(dot + 1);
        String pkgPath = dot < 0 ? "" : cls.substring(0, dot).replace('.', '/') + "/";
        String file = f.getFileName() == null ? simple + ".java" : f.getFileName();
        return new JavaFrame(simple + "." + f.getMethodName(), pkgPath + file, Math.max(0, f.getLineNumber()));
    }
}
