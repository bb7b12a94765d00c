package io.vram4j.memory.viz;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/** Snapshots recorded from vram4j's own allocator on the sim device, for timeline tests and the browser check. */
final class SyntheticSnapshots {
    private static final String[] SITES = {"embed", "attention.qkv", "attention.softmax", "mlp.up", "mlp.act", "mlp.down",
            "layernorm", "loss", "grad_accumulate", "optimizer.step"};

    private SyntheticSnapshots() {
    }

    /**
     * A training-like recording: parameters first, then iterations that allocate activations and free them in
     * reverse, with temporaries; every {@code alloc} gets a two-frame stack naming one of ten sites.
     *
     * @param minEntries stop after the trace has at least this many entries
     * @param seed       random seed
     */
    static MemorySnapshot training(int minEntries, long seed) {
        Random r = new Random(seed);
        DeviceBackend device = Devices.open("sim:80GiB");
        try {
            CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            alloc.recordMemoryHistory("all", "all", "none", minEntries + 2_000);
            for (int i = 0; i < 60; i++) {
                alloc.malloc((1L + r.nextInt(16)) << 20); // parameters, never freed
            }
            List<Long> acts = new ArrayList<>();
            int entries = 120;
            while (entries < minEntries) {
                for (int i = 0; i < 40; i++) {
                    long size = r.nextInt(4) == 0 ? 512L + r.nextInt(200_000) : (1L + r.nextInt(64)) << 19;
                    acts.add(alloc.malloc(size));
                    if (r.nextInt(3) == 0) {
                        alloc.free(alloc.malloc(256 + r.nextInt(1 << 20)));
                        entries += 3;
                    }
                    entries++;
                }
                while (!acts.isEmpty()) {
                    alloc.free(acts.remove(acts.size() - 1));
                    entries += 2;
                }
                if (r.nextInt(50) == 0) {
                    alloc.emptyCache();
                }
            }
            return withSites(alloc.snapshot());
        } finally {
            device.close();
        }
    }

    /** Gives each {@code alloc} entry a stack: a site chosen from its size, under a common caller. */
    static MemorySnapshot withSites(MemorySnapshot s) {
        List<List<TraceEntry>> traces = new ArrayList<>();
        for (List<TraceEntry> t : s.deviceTraces()) {
            List<TraceEntry> out = new ArrayList<>(t.size());
            for (TraceEntry e : t) {
                if (e.action() == TraceAction.ALLOC) {
                    int site = (int) (Long.hashCode(e.size() >>> 9) & 0x7fffffff) % SITES.length;
                    List<Frame> frames = List.of(new Frame(SITES[site], "model.py", 10 + 7 * site),
                            new Frame("train_step", "train.py", 88));
                    out.add(new TraceEntry(e.action(), e.addr(), e.size(), e.stream(), e.timeUs(), e.deviceFree(), frames,
                            e.compileContext(), e.userMetadata()));
                } else {
                    out.add(e);
                }
            }
            traces.add(out);
        }
        return new MemorySnapshot(s.segments(), traces, s.allocatorSettings(), s.externalAnnotations());
    }
}
