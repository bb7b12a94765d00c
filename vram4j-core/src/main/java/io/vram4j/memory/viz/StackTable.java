package io.vram4j.memory.viz;

import io.vram4j.memory.snapshot.Frame;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Interns the recorded stacks of a trace and names each one's allocation site: the innermost frame that belongs
 * to the user's code, that is, not to PyTorch itself ({@code /torch/} files) nor to vram4j's tensor runtime and
 * allocator ({@code io/vram4j/tensor/}, {@code autograd}, {@code compute}, {@code alloc}, {@code device},
 * {@code memory}; {@code nn}, {@code optim} and {@code train} count as the user's), not a C/C++ frame ({@code ??}
 * or a {@code .cpp}, {@code .h}, {@code .cu} file) and not the interpreter's {@code <...>} pseudo-files: the frames
 * PyTorch's {@code memory_viz} users look for, and the ones the page shows by default ({@link #isInternal} hides the
 * rest). When every frame is internal (the backward pass runs on the autograd engine's C++ thread), the site is, in
 * this order: the autograd node whose {@code apply} is on the stack ({@code BmmBackward0 (autograd)},
 * {@code AccumulateGrad (autograd)}); the outermost ATen operator the engine called
 * ({@code aten::to_dtype (autograd engine)} for a cast in {@code validate_outputs}), or the outermost ATen operator
 * of a stack outside the engine ({@code aten::exp}); else the innermost frame outside the allocator and stack
 * capture. Not thread-safe.
 */
final class StackTable {
    final List<List<Frame>> stacks = new ArrayList<>();
    final List<Integer> stackSite = new ArrayList<>();
    final List<String> sites = new ArrayList<>();
    private final Map<List<Frame>, Integer> stackIds = new HashMap<>();
    /** The same by identity: a snapshot reader shares equal stacks, so most lookups never hash 100 frames. */
    private final Map<List<Frame>, Integer> stackIdsByIdentity = new IdentityHashMap<>();
    private final Map<String, Integer> siteIds = new HashMap<>();

    /** @return the stack's index, or -1 for an empty stack */
    int intern(List<Frame> frames) {
        if (frames.isEmpty()) {
            return -1;
        }
        Integer id = stackIdsByIdentity.get(frames);
        if (id != null) {
            return id;
        }
        id = stackIds.get(frames);
        if (id != null) {
            stackIdsByIdentity.put(frames, id);
            return id;
        }
        int newId = stacks.size();
        stacks.add(frames);
        stackIds.put(frames, newId);
        stackIdsByIdentity.put(frames, newId);
        String label = siteLabel(frames);
        Integer site = siteIds.get(label);
        if (site == null) {
            site = sites.size();
            sites.add(label);
            siteIds.put(label, site);
        }
        stackSite.add(site);
        return newId;
    }

    /** An autograd node's {@code apply} in a C++ stack: the backward formula (or gradient accumulation) that allocated. */
    private static final Pattern BACKWARD = Pattern.compile("([A-Za-z0-9_]+Backward[0-9]*)::apply\\b");
    private static final Pattern AUTOGRAD_NODE = Pattern.compile("^torch::autograd::(?:[A-Za-z0-9_]+::)*([A-Za-z0-9_]+)::apply\\(");
    /** An ATen operator's entry point: {@code at::_ops::NAME::call(...)}. */
    private static final Pattern ATEN_OP = Pattern.compile("^at::_ops::([A-Za-z0-9_]+)::call\\(");
    private static final String ENGINE = "torch::autograd::Engine::evaluate_function";
    /** The frames of the allocator and of stack capture itself, at the top of every PyTorch C++ stack. */
    private static final String[] CAPTURE = {"torch::unwind::", "torch::CapturedTraceback::", "torch::cuda::",
            "c10::cuda::CUDACachingAllocator::", "at::detail::empty"};

    static String siteLabel(List<Frame> frames) {
        for (Frame f : frames) {
            if (!isInternal(f)) {
                return label(f);
            }
        }
        // no user frame (e.g. the backward pass runs on the autograd engine's C++ thread)
        for (Frame f : frames) {
            Matcher m = BACKWARD.matcher(f.name());
            if (m.find()) {
                return m.group(1) + " (autograd)";
            }
            m = AUTOGRAD_NODE.matcher(f.name());
            if (m.find() && !m.group(1).equals("Node")) {
                return m.group(1) + " (autograd)";
            }
        }
        String op = null;
        boolean engine = false;
        for (Frame f : frames) { // innermost first: the last operator before the engine is the one it called
            if (f.name().startsWith(ENGINE)) {
                engine = true;
                break;
            }
            Matcher m = ATEN_OP.matcher(f.name());
            if (m.find()) {
                op = m.group(1);
            }
        }
        if (op != null) {
            return "aten::" + op + (engine ? " (autograd engine)" : "");
        }
        for (Frame f : frames) {
            if (!isCapture(f)) {
                return label(f);
            }
        }
        return label(frames.get(0));
    }

    private static boolean isCapture(Frame f) {
        for (String prefix : CAPTURE) {
            if (f.name().startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    private static String label(Frame site) {
        String name = site.name();
        int paren = name.indexOf('(', name.startsWith("at::(anonymous") || name.contains("::(anonymous") ? name.indexOf(')') + 1 : 0);
        if (paren > 0 && !site.filename().endsWith(".py")) {
            name = name.substring(0, paren); // a C++ signature: keep the qualified name
        }
        String file = site.filename();
        int slash = Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\'));
        return name + " (" + file.substring(slash + 1) + ":" + site.line() + ")";
    }

    /** vram4j's own runtime, the counterpart of PyTorch's internals in a Java stack (nn, optim, train stay). */
    private static final String[] VRAM4J_INTERNAL = {"io/vram4j/tensor/", "io/vram4j/autograd/", "io/vram4j/compute/",
            "io/vram4j/alloc/", "io/vram4j/device/", "io/vram4j/memory/"};

    private static final String[] NATIVE = {".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".cu", ".cuh"};

    /**
     * A frame of PyTorch or vram4j themselves, or of native code, that the page hides by default.
     *
     * @param f the frame
     * @return true for C/C++ frames ({@code ??}, no file, {@code .cpp}, {@code .h}, {@code .cu}, ...), the
     *     interpreter's {@code <...>} pseudo-files, PyTorch's Python files ({@code /torch/}) and vram4j's runtime
     */
    static boolean isInternal(Frame f) {
        String file = f.filename().replace('\\', '/');
        if (file.equals("??") || file.isEmpty() || file.startsWith("<") || file.contains("/torch/") || file.startsWith("torch/")) {
            return true;
        }
        for (String ext : NATIVE) {
            if (file.endsWith(ext)) {
                return true; // PyTorch's C++ frames: memory_snapshot.cpp, CUDACachingAllocator.cpp, RegisterCUDA_0.cpp
            }
        }
        for (String prefix : VRAM4J_INTERNAL) {
            if (file.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }
}
