package io.vram4j.bench.gpu;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.SegmentInfo;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * vram4j's side of the differential test against PyTorch ({@code gpu/differential.py} runs PyTorch's side and
 * compares): runs the {@link OpSequence} of each seed through one caching allocator on a device and writes, every
 * {@code every} operations and at the end, one JSON line with all {@code memory_stats} counters and the segment
 * layout (each segment's size, pool and blocks as offset, size and state), as the Python side writes them from
 * {@code torch.cuda.memory_stats()} and {@code torch.cuda.memory_snapshot()}. Between seeds, like the Python side:
 * free everything, {@code empty_cache}, reset the peak and accumulated statistics.
 *
 * <p>Usage: {@code DifferentialRun DEVICE CONF SEEDS OPS EVERY OUT.jsonl}, e.g.
 * {@code cuda "expandable_segments:True" 20 2000 100 out.jsonl}.
 */
public final class DifferentialRun {
    private DifferentialRun() {
    }

    /** Most bytes live at once: 6 GiB (fits any GPU the test runs on next to PyTorch's own context). */
    public static final long CAP = 6L << 30;

    /**
     * @param args DEVICE CONF SEEDS OPS EVERY OUT
     * @throws IOException when the output cannot be written
     */
    public static void main(String[] args) throws IOException {
        if (args.length != 6) {
            System.err.println("usage: DifferentialRun DEVICE CONF SEEDS OPS EVERY OUT.jsonl");
            System.exit(2);
        }
        run(args[0], args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]), Integer.parseInt(args[4]),
                Path.of(args[5]));
    }

    /**
     * @param deviceSpec e.g. {@code "cuda"} or {@code "sim:H100-80GB"}
     * @param conf allocator settings in {@code PYTORCH_ALLOC_CONF} format
     * @param seeds seeds 1..seeds are run
     * @param ops operations per seed
     * @param every a checkpoint every this many operations (and after the last)
     * @param out the JSON-lines file written
     * @throws IOException when the output cannot be written
     */
    public static void run(String deviceSpec, String conf, int seeds, int ops, int every, Path out) throws IOException {
        ObjectMapper json = new ObjectMapper();
        try (DeviceBackend device = Devices.open(deviceSpec);
             BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
            CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse(conf));
            for (int seed = 1; seed <= seeds; seed++) {
                List<Long> live = new ArrayList<>();
                List<OpSequence.Op> sequence = OpSequence.generate(seed, ops, CAP);
                for (int i = 0; i < sequence.size(); i++) {
                    OpSequence.Op op = sequence.get(i);
                    switch (op.kind()) {
                        case MALLOC -> live.add(alloc.malloc(op.size()));
                        case FREE -> alloc.free(live.remove(op.index()));
                        case EMPTY_CACHE -> alloc.emptyCache();
                    }
                    if ((i + 1) % every == 0 || i + 1 == sequence.size()) {
                        w.write(json.writeValueAsString(checkpoint(alloc, seed, i + 1)));
                        w.newLine();
                    }
                }
                for (long p : live) {
                    alloc.free(p);
                }
                alloc.emptyCache();
                alloc.resetPeakMemoryStats();
                alloc.resetAccumulatedMemoryStats();
            }
            alloc.close();
        }
    }

    static Map<String, Object> checkpoint(CachingAllocator alloc, int seed, int step) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("seed", seed);
        c.put("step", step);
        c.put("stats", alloc.memoryStats().asMap());
        List<SegmentInfo> segments = new ArrayList<>(alloc.snapshot().segments(alloc.device().index()));
        segments.sort(Comparator.comparingLong(SegmentInfo::address));
        List<Map<String, Object>> layout = new ArrayList<>();
        for (SegmentInfo s : segments) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("total_size", s.totalSize());
            m.put("segment_type", s.segmentType());
            List<List<Object>> blocks = new ArrayList<>();
            for (BlockInfo b : s.blocks()) {
                blocks.add(List.of(b.address() - s.address(), b.size(), b.state().pytorchName()));
            }
            m.put("blocks", blocks);
            layout.add(m);
        }
        c.put("segments", layout);
        return c;
    }
}
