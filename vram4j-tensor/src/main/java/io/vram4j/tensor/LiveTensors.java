package io.vram4j.tensor;

import io.vram4j.tensor.internal.ExecutionContext;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.memory.stats.FormatSize;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The registry of live tensor storages, for finding what holds memory: every storage is listed from its
 * allocation until its block goes back to the allocator (a leaked storage stays listed), with the shape and
 * dtype of the tensor that allocated it, its size, device, allocation site (the first stack frame outside the
 * tensor runtime, e.g. {@code Linear.forward(Linear.java:63)}), the module whose forward was running
 * ({@link ExecutionContext}) and its current {@link MemoryCategory}. Sites are captured only while
 * {@linkplain #captureSites(boolean) switched on}. {@link #report} groups them by site, largest
 * first, as a text table; {@link #bySite()} returns the groups.
 *
 * <pre>{@code
 * LiveTensors.captureSites(true);
 * ... train a step, keep some tensors ...
 * System.out.print(LiveTensors.report(10));
 * }</pre>
 *
 * <p>Capturing sites walks the stack on every allocation (slow; meant for debugging); without it the registry
 * costs one set insertion per allocation. The registry is process-wide and thread-safe; views share their
 * storage and are listed once.
 */
public final class LiveTensors {
    private static volatile boolean captureSites;
    private static final Set<StorageInfo> LIVE = ConcurrentHashMap.newKeySet();
    private static final StackWalker WALKER = StackWalker.getInstance();
    private static final List<String> INTERNAL = List.of("io.vram4j.tensor.", "io.vram4j.autograd.", "io.vram4j.compute.",
            "io.vram4j.amp.", "io.vram4j.alloc.", "io.vram4j.optim.FloatData");

    private LiveTensors() {
    }

    /**
     * Switches capturing allocation sites on or off for storages allocated from now on.
     *
     * @param on whether to walk the stack at each allocation
     */
    public static void captureSites(boolean on) {
        captureSites = on;
    }

    /** @return true while allocation sites are captured */
    public static boolean capturingSites() {
        return captureSites;
    }

    static void added(StorageInfo s) {
        s.context = ExecutionContext.capture();
        if (captureSites) {
            s.site = WALKER.walk(frames -> frames.filter(f -> INTERNAL.stream().noneMatch(f.getClassName()::startsWith))
                    .findFirst().map(f -> simpleName(f.getClassName()) + "." + f.getMethodName() + "(" + f.getFileName() + ":"
                            + f.getLineNumber() + ")").orElse("(unknown)"));
        }
        LIVE.add(s);
    }

    static void removed(StorageInfo s) {
        LIVE.remove(s);
    }

    private static String simpleName(String className) {
        return className.substring(className.lastIndexOf('.') + 1);
    }

    /** Storages of the live-tensor registry, for the {@link MemoryProfiler}. */
    static Set<StorageInfo> storages() {
        return LIVE;
    }

    /**
     * Marks {@code t}'s storage as optimizer state (for the memory profile); optimizers call it for the buffers
     * they keep across steps.
     *
     * @param t a tensor
     * @return {@code t}
     */
    public static Tensor markOptimizerState(Tensor t) {
        StorageInfo s = t.storage().info;
        if (s.role == StorageInfo.ROLE_NONE) {
            s.role = StorageInfo.ROLE_OPTIMIZER_STATE;
        }
        return t;
    }

    /**
     * Counts {@code t}'s storage as saved for backward ({@link MemoryCategory#ACTIVATIONS}) until {@code t} is
     * closed; for tensors kept for backward outside autograd nodes, such as a checkpointed region's inputs.
     *
     * @param t a handle that is closed when backward no longer needs it
     * @return {@code t}
     */
    public static Tensor markSavedForBackward(Tensor t) {
        if (!t.savedForBackward) {
            Recorder.markSaved(t);
        }
        return t;
    }

    /**
     * One live storage.
     *
     * @param shape the allocating tensor's shape
     * @param dtype its element type
     * @param bytes the storage's size (numel × element size; the allocator's block may be rounded up)
     * @param device the device, e.g. {@code host:1GiB}
     * @param site the allocation site, or {@code "(not captured)"}
     * @param context what was running when it was allocated, e.g. {@code forward h.0.attn} (see
     *     {@link ExecutionContext#describe()}), or {@code ""}
     * @param category what it holds now
     */
    public record Entry(int[] shape, DType dtype, long bytes, String device, String site, String context,
                        MemoryCategory category) {
        /** @return e.g. {@code [32, 64, 128] float32} */
        public String describe() {
            return Shapes.str(shape) + " " + dtype.toString().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * The live storages allocated at one site.
     *
     * @param site the allocation site
     * @param count how many storages
     * @param bytes their total size
     * @param entries the storages, largest first
     */
    public record Group(String site, int count, long bytes, List<Entry> entries) {
    }

    /** @return every live storage, largest first */
    public static List<Entry> entries() {
        return entries(null);
    }

    /**
     * @param alloc only storages of this allocator; null for all
     * @return the live storages, largest first
     */
    public static List<Entry> entries(CachingAllocator alloc) {
        List<Entry> out = new ArrayList<>();
        for (StorageInfo s : LIVE) {
            if (alloc != null && s.device.allocator() != alloc) {
                continue;
            }
            out.add(new Entry(s.shape.clone(), s.dtype, s.bytes, s.device.description(),
                    s.site == null ? "(not captured)" : s.site, s.context == null ? "" : s.context.describe(), s.category()));
        }
        out.sort(Comparator.comparingLong(Entry::bytes).reversed());
        return out;
    }

    /** @return the live storages grouped by allocation site, the largest total first */
    public static List<Group> bySite() {
        return bySite(null);
    }

    /**
     * @param alloc only storages of this allocator; null for all
     * @return the live storages grouped by allocation site, the largest total first
     */
    public static List<Group> bySite(CachingAllocator alloc) {
        Map<String, List<Entry>> groups = new LinkedHashMap<>();
        for (Entry e : entries(alloc)) {
            groups.computeIfAbsent(e.site(), k -> new ArrayList<>()).add(e);
        }
        List<Group> out = new ArrayList<>();
        groups.forEach((site, list) -> out.add(new Group(site, list.size(), list.stream().mapToLong(Entry::bytes).sum(),
                List.copyOf(list))));
        out.sort(Comparator.comparingLong(Group::bytes).reversed());
        return out;
    }

    /**
     * @param maxGroups sites to show (the rest are summed in one line)
     * @return a table: per site the total, the count and the largest tensors (shape, dtype, bytes, device,
     *     category, context)
     */
    public static String report(int maxGroups) {
        return report(null, maxGroups);
    }

    /**
     * @param alloc only storages of this allocator; null for all
     * @param maxGroups sites to show
     * @return the table of {@link #report(int)}
     */
    public static String report(CachingAllocator alloc, int maxGroups) {
        List<Group> groups = bySite(alloc);
        StringBuilder sb = new StringBuilder();
        long total = groups.stream().mapToLong(Group::bytes).sum();
        int count = groups.stream().mapToInt(Group::count).sum();
        sb.append(String.format(Locale.ROOT, "live tensors: %,d storages, %s%n", count, FormatSize.formatSize(total)));
        int shown = 0;
        for (Group g : groups) {
            if (shown++ == maxGroups) {
                long restBytes = groups.subList(maxGroups, groups.size()).stream().mapToLong(Group::bytes).sum();
                int restCount = groups.subList(maxGroups, groups.size()).stream().mapToInt(Group::count).sum();
                sb.append(String.format(Locale.ROOT, "  ... %d more sites: %,d storages, %s%n", groups.size() - maxGroups,
                        restCount, FormatSize.formatSize(restBytes)));
                break;
            }
            sb.append(String.format(Locale.ROOT, "  %10s  %5d x  %s%n", FormatSize.formatSize(g.bytes()), g.count(), g.site()));
            for (int i = 0; i < Math.min(3, g.entries().size()); i++) {
                Entry e = g.entries().get(i);
                sb.append(String.format(Locale.ROOT, "      %10s  %-28s %-16s %-12s %s%n", FormatSize.formatSize(e.bytes()),
                        e.describe(), e.category().label(), e.device(), e.context()));
            }
            if (g.entries().size() > 3) {
                sb.append(String.format(Locale.ROOT, "      ... %d more%n", g.entries().size() - 3));
            }
        }
        return sb.toString();
    }
}
