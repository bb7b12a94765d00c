package io.vram4j.alloc;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Captures the caller's Java stack for memory history, skipping vram4j's own allocator, device and memory
 * frames (and the JDK's) so the first frame is the code that asked for memory. At most {@link #MAX_FRAMES} frames are kept.
 * Thread-safe.
 */
final class StackCapture {
    static final int MAX_FRAMES = 24;
    private static final StackWalker WALKER = StackWalker.getInstance(Set.of(), MAX_FRAMES + 16);
    private static final String[] SKIPPED = {"io.vram4j.alloc.", "io.vram4j.device.", "io.vram4j.memory.",
            "io.vram4j.tensor.Storage", "java.", "jdk.", "sun."};

    /** One captured frame, as PyTorch's {name, filename, line}. */
    record JavaFrame(String name, String filename, int line) {
    }

    private StackCapture() {
    }

    static List<JavaFrame> capture() {
        return WALKER.walk(s -> s.filter(f -> !skipped(f.getClassName()))
                .limit(MAX_FRAMES)
                .map(StackCapture::frame)
                .collect(Collectors.toList()));
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
