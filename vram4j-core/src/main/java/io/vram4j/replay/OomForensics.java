package io.vram4j.replay;

import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.ArrayList;

import java.util.List;

/**
 * Why an allocation ran out of memory, with figures, and what would have avoided it, each counterfactual found
 * by what-if replays. Stateless and thread-safe.
 */
public final class OomForensics {
    private OomForensics() {
    }

    /** The cause classes, in the order they are tested. */
    public enum Cause {
        /** Live allocations alone, plus the request, exceed the device: no cache policy helps. */
        CAPACITY,
        /** Enough bytes are free in cached blocks of the request's pool and stream (or with the device's free
         *  bytes), but no block or mappable range is large enough. */
        FRAGMENTATION,
        /** The bytes needed are free, but in blocks of other streams or of the other pool, or pending on events. */
        CACHE_HELD_ELSEWHERE,
        /** Live allocations exceed the device, and the growth of sites whose live bytes kept growing over the
         *  trace is at least the shortfall: without that growth the request would have fitted. */
        GROWTH_LEAK
    }

    /** Points of the trace at which each site's live bytes are sampled. */
    static final int SAMPLES = 8;

    /**
     * An allocation site whose live bytes kept growing up to the failure.
     *
     * @param site the innermost Python frame of its allocations ({@code name (file:line)}), else the innermost frame
     * @param liveBytes its live bytes at {@link #SAMPLES} evenly spaced entries from the first to the failing one
     * @param growth live bytes at the failure minus at the first entry
     */
    public record GrowthSite(String site, List<Long> liveBytes, long growth) {
    }

    /**
     * Everything said about one failure.
     *
     * @param event the failure
     * @param diagnosis its cause
     * @param growthSites sites whose live bytes kept growing, largest growth first (at most 5)
     * @param counterfactuals what would have avoided it
     */
    public record Explanation(OomEvent event, Diagnosis diagnosis, List<GrowthSite> growthSites,
                              Counterfactuals counterfactuals) {
    }

    /**
     * @param snapshot the snapshot replayed
     * @param device its device index
     * @param event a failure of that device's replay
     * @param conf the settings of that replay, or null for the recorded ones
     * @return the diagnosis (growth/leak when the growing sites' growth covers a capacity shortfall), the growing
     *     sites and the counterfactuals
     */
    public static Explanation explain(MemorySnapshot snapshot, int device, OomEvent event, String conf) {
        OomState s = event.state();
        List<GrowthSite> growing = event.entry() < 0 ? List.of() : growthSites(snapshot.deviceTraces().get(device), event.entry());
        Diagnosis d = diagnose(s);
        long shortfall = d.shortfall();
        long growth = growing.stream().mapToLong(GrowthSite::growth).sum();
        if (d.cause() == Cause.CAPACITY && !growing.isEmpty() && growth >= shortfall) {
            d = new Diagnosis(Cause.GROWTH_LEAK, growing.size() + " allocation site(s) grew by " + bytes(growth)
                    + " over the trace, more than the " + bytes(shortfall) + " missing: " + d.reason(), shortfall);
        }
        return new Explanation(event, d, growing, counterfactuals(snapshot, device, s.capacity(), conf));
    }

    /**
     * The sites whose live bytes (allocations made in the trace and not yet freed) never fell and rose at least
     * {@code SAMPLES / 2} times between {@link #SAMPLES} evenly spaced entries up to {@code upTo}.
     *
     * @param trace a recorded trace
     * @param upTo the failing entry's index
     * @return at most 5, largest growth first
     */
    static List<GrowthSite> growthSites(List<TraceEntry> trace, int upTo) {
        java.util.Map<Long, Object[]> live = new java.util.HashMap<>(); // addr -> {site, bytes}
        java.util.Map<String, Long> bySite = new java.util.HashMap<>();
        List<java.util.Map<String, Long>> samples = new ArrayList<>();
        int next = 0;
        for (int i = 0; i <= upTo && i < trace.size(); i++) {
            TraceEntry e = trace.get(i);
            if (e.action() == TraceAction.ALLOC) {
                String site = site(e.frames());
                live.put(e.addr(), new Object[] {site, e.size()});
                bySite.merge(site, e.size(), Long::sum);
            } else if (e.action() == TraceAction.FREE_COMPLETED) {
                Object[] a = live.remove(e.addr());
                if (a != null) {
                    bySite.merge((String) a[0], -(Long) a[1], Long::sum);
                }
            }
            while (next < SAMPLES && i >= (long) upTo * next / (SAMPLES - 1)) {
                samples.add(new java.util.HashMap<>(bySite));
                next++;
            }
        }
        List<GrowthSite> out = new ArrayList<>();
        for (String site : bySite.keySet()) {
            List<Long> series = new ArrayList<>();
            for (java.util.Map<String, Long> m : samples) {
                series.add(m.getOrDefault(site, 0L));
            }
            int rises = 0;
            boolean falls = false;
            for (int k = 1; k < series.size(); k++) {
                rises += series.get(k) > series.get(k - 1) ? 1 : 0;
                falls |= series.get(k) < series.get(k - 1);
            }
            if (!falls && rises >= SAMPLES / 2) {
                out.add(new GrowthSite(site, series, series.get(series.size() - 1) - series.get(0)));
            }
        }
        out.sort(java.util.Comparator.comparingLong(GrowthSite::growth).reversed());
        return out.subList(0, Math.min(5, out.size()));
    }

    private static String site(List<Frame> frames) {
        for (Frame f : frames) {
            if (f.filename().endsWith(".py")) {
                return f.name() + " (" + f.filename() + ":" + f.line() + ")";
            }
        }
        return frames.isEmpty() ? "(no frames recorded)"
                : frames.get(0).name() + " (" + frames.get(0).filename() + ":" + frames.get(0).line() + ")";
    }

    /**
     * @param cause the cause class
     * @param reason one sentence with the figures behind it
     * @param shortfall for {@link Cause#CAPACITY} and {@link Cause#GROWTH_LEAK}: the bytes the device lacks even
     *     with every cached block released; else 0
     */
    public record Diagnosis(Cause cause, String reason, long shortfall) {
    }

    /**
     * What would have avoided an out-of-memory failure, each found by replays of the whole trace.
     *
     * @param capacity the capacity the failure happened at (bytes)
     * @param smallestFittingCapacity the smallest capacity above {@code capacity} (to 2 MiB) on which the replay runs
     *     out of memory nowhere, under the same settings ({@link Sweep#smallestFittingCapacity}; bytes)
     * @param peakReduction how much smaller the peak would have to be: smallestFittingCapacity − capacity (bytes)
     * @param settingsThatFit the sweep's settings ({@link Sweep#SETTINGS}, plus the recorded ones) that run out of
     *     memory nowhere at {@code capacity}; empty when none does
     */
    public record Counterfactuals(long capacity, long smallestFittingCapacity, long peakReduction,
                                  List<String> settingsThatFit) {
    }

    /**
     * Classifies a failure from the memory at that moment.
     *
     * @param s the state after the retry sequence
     * @return the cause with its figures
     */
    public static Diagnosis diagnose(OomState s) {
        long need = s.request();
        long segment = io.vram4j.alloc.SizeRules.allocationSize(need);
        OomState.PoolFree own = s.own();
        long elsewhere = s.cachedFree() - own.freeBytes() + s.pendingFree();
        if (s.allocated() + need > s.capacity()) {
            return new Diagnosis(Cause.CAPACITY, "live allocations (" + bytes(s.allocated()) + ") plus the request ("
                    + bytes(need) + ") exceed the capacity (" + bytes(s.capacity()) + ") by "
                    + bytes(s.allocated() + need - s.capacity()), s.allocated() + need - s.capacity());
        }
        if (own.freeBytes() >= need) {
            return new Diagnosis(Cause.FRAGMENTATION, bytes(own.freeBytes()) + " is free in " + own.freeBlocks()
                    + " cached blocks of the request's pool and stream, more than the request (" + bytes(need)
                    + "), but the largest free block is " + bytes(own.largestFreeBlock()) + " and the device has "
                    + bytes(s.deviceFree()) + " free for the " + bytes(segment) + " segment it needs", 0);
        }
        if (elsewhere > 0 && elsewhere + own.freeBytes() + s.deviceFree() >= need) {
            return new Diagnosis(Cause.CACHE_HELD_ELSEWHERE, bytes(elsewhere) + " is cached for other streams or the"
                    + " other pool, or pending on events (" + bytes(s.pendingFree()) + "); the request's own pool and"
                    + " stream have " + bytes(own.freeBytes()) + " free and the device " + bytes(s.deviceFree()), 0);
        }
        if (s.allocated() + segment > s.capacity()) {
            return new Diagnosis(Cause.CAPACITY, "live allocations (" + bytes(s.allocated()) + ") plus the "
                    + bytes(segment) + " segment the request (" + bytes(need) + ") needs exceed the capacity ("
                    + bytes(s.capacity()) + ") by " + bytes(s.allocated() + segment - s.capacity()),
                    s.allocated() + segment - s.capacity());
        }
        return new Diagnosis(Cause.FRAGMENTATION, bytes(own.freeBytes()) + " free in cached blocks of the request's"
                + " pool and stream and " + bytes(s.deviceFree()) + " free on the device would hold the " + bytes(segment)
                + " segment the request (" + bytes(need) + ") needs, but cached blocks cannot be joined with new"
                + " device memory (largest free block " + bytes(own.largestFreeBlock()) + ")", 0);
    }

    /**
     * The counterfactuals of a failure in a replay of {@code snapshot}'s trace of {@code device}.
     *
     * @param snapshot the snapshot
     * @param device the device index (with a trace)
     * @param capacity the capacity the failure happened at (bytes)
     * @param conf the settings of that replay, or null for the recorded ones
     * @return what would have fitted
     */
    public static Counterfactuals counterfactuals(MemorySnapshot snapshot, int device, long capacity, String conf) {
        long smallest = Sweep.smallestFittingCapacity(snapshot, device, conf, capacity);
        List<String> fit = Sweep.fitting(snapshot, device, capacity);
        return new Counterfactuals(capacity, smallest, Math.max(0, smallest - capacity), fit);
    }

    private static String bytes(long b) {
        return io.vram4j.memory.stats.FormatSize.formatSize(b);
    }
}
