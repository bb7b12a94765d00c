package io.vram4j.memory.viz;

import io.vram4j.memory.snapshot.Frame;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Interns the recorded stacks of a trace and names each one's allocation site: the innermost frame that belongs
 * to the user's code, that is, not to PyTorch itself ({@code /torch/} files) nor to vram4j's tensor runtime and
 * allocator ({@code io/vram4j/tensor/}, {@code autograd}, {@code compute}, {@code alloc}, {@code device},
 * {@code memory}; {@code nn}, {@code optim} and {@code train} count as the user's), not a C++ frame without a
 * source ({@code ??}) and not the interpreter's {@code <...>} pseudo-files. When every frame is internal, the
 * innermost frame is the site. Not thread-safe.
 */
final class StackTable {
    final List<List<Frame>> stacks = new ArrayList<>();
    final List<Integer> stackSite = new ArrayList<>();
    final List<String> sites = new ArrayList<>();
    private final Map<List<Frame>, Integer> stackIds = new HashMap<>();
    private final Map<String, Integer> siteIds = new HashMap<>();

    /** @return the stack's index, or -1 for an empty stack */
    int intern(List<Frame> frames) {
        if (frames.isEmpty()) {
            return -1;
        }
        Integer id = stackIds.get(frames);
        if (id != null) {
            return id;
        }
        int newId = stacks.size();
        stacks.add(frames);
        stackIds.put(frames, newId);
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

    static String siteLabel(List<Frame> frames) {
        Frame site = frames.get(0);
        for (Frame f : frames) {
            if (!isInternal(f)) {
                site = f;
                break;
            }
        }
        String file = site.filename();
        int slash = Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\'));
        return site.name() + " (" + file.substring(slash + 1) + ":" + site.line() + ")";
    }

    /** vram4j's own runtime, the counterpart of PyTorch's internals in a Java stack (nn, optim, train stay). */
    private static final String[] VRAM4J_INTERNAL = {"io/vram4j/tensor/", "io/vram4j/autograd/", "io/vram4j/compute/",
            "io/vram4j/alloc/", "io/vram4j/device/", "io/vram4j/memory/"};

    static boolean isInternal(Frame f) {
        String file = f.filename().replace('\\', '/');
        if (file.equals("??") || file.isEmpty() || file.startsWith("<") || file.contains("/torch/") || file.startsWith("torch/")) {
            return true;
        }
        for (String prefix : VRAM4J_INTERNAL) {
            if (file.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }
}
