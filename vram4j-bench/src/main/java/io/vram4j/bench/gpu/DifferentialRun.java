package io.vram4j.bench.gpu;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
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
import java.util.function.Consumer;

/**
 * vram4j's side of the differential test against PyTorch ({@code gpu/differential.py} runs PyTorch's side and
 * compares): runs the {@link OpSequence} of each seed through one caching allocator on a device and writes, every
 * {@code every} operations and at the end, one JSON line with all {@code memory_stats} counters and the segment
 * layout (each segment's size, pool and blocks as offset, size and state), as the Python side writes them from
 * {@code torch.cuda.memory_stats()} and {@code torch.cuda.memory_snapshot()}. Between seeds, like the Python side:
 * free everything, {@code empty_cache}, reset the peak and accumulated statistics.
 *
 * <p>{@link OpSequence.Kind#FREE_RECORDED}: {@link CachingAllocator#recordStream} on a side stream (made once per
 * run with {@link DeviceBackend#newStream()}, as PyTorch's side makes one {@code torch.cuda.Stream()}), then
 * {@link CachingAllocator#free} (which records the side stream's event and leaves the block
 * {@code active_pending_free}), then {@link DeviceBackend#synchronize()} so that event has completed before the next
 * allocator call, on {@code cuda} as in the counting model of {@code sim} and {@code host}, where an event completes
 * only when its stream is synchronized.
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
        run(deviceSpec, conf, seeds, ops, every, out, call -> { });
    }

    /**
     * {@link #run(String, String, int, int, int, Path)}, telling {@code trace} every call that changes the
     * allocator's state, in order: {@code malloc PTR SIZE}, {@code record PTR}, {@code free PTR}, {@code sync},
     * {@code empty_cache}, {@code reset_peak}, {@code reset_accumulated} (the test compares them with the calls
     * {@code differential.py pytorch} makes).
     */
    static void run(String deviceSpec, String conf, int seeds, int ops, int every, Path out, Consumer<String> trace)
            throws IOException {
        ObjectMapper json = new ObjectMapper();
        try (DeviceBackend device = Devices.open(deviceSpec);
             BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
            CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse(conf));
            Calls calls = new Calls(alloc, device, device.newStream(), trace);
            for (int seed = 1; seed <= seeds; seed++) {
                List<Long> live = new ArrayList<>();
                List<OpSequence.Op> sequence = OpSequence.generate(seed, ops, CAP);
                for (int i = 0; i < sequence.size(); i++) {
                    OpSequence.Op op = sequence.get(i);
                    switch (op.kind()) {
                        case MALLOC, MALLOC_TENSOR -> live.add(calls.malloc(op.size()));
                        case FREE -> calls.free(live.remove(op.index()));
                        case FREE_RECORDED -> calls.freeRecorded(live.remove(op.index()));
                        case EMPTY_CACHE -> calls.emptyCache();
                    }
                    if ((i + 1) % every == 0 || i + 1 == sequence.size()) {
                        w.write(json.writeValueAsString(checkpoint(alloc, seed, i + 1)));
                        w.newLine();
                    }
                }
                for (long p : live) {
                    calls.free(p);
                }
                calls.emptyCache();
                alloc.resetPeakMemoryStats();
                trace.accept("reset_peak");
                alloc.resetAccumulatedMemoryStats();
                trace.accept("reset_accumulated");
            }
            alloc.close();
        }
    }

    /** The allocator calls of the operations, each told to the trace after it returned. */
    private record Calls(CachingAllocator alloc, DeviceBackend device, Stream side, Consumer<String> trace) {
        long malloc(long size) {
            long p = alloc.malloc(size);
            trace.accept("malloc " + p + " " + size);
            return p;
        }

        void free(long p) {
            alloc.free(p);
            trace.accept("free " + p);
        }

        /**
         * record_stream on the side stream, then free: the allocator records an event on the side stream and
         * keeps the block active_pending_free; the device synchronization completes that event, so the next
         * malloc's process_events (or empty_cache) frees the block, on a GPU as on sim/host, where an event
         * completes only when its stream is synchronized.
         */
        void freeRecorded(long p) {
            alloc.recordStream(p, side);
            trace.accept("record " + p);
            free(p);
            device.synchronize();
            trace.accept("sync");
        }

        void emptyCache() {
            alloc.emptyCache();
            trace.accept("empty_cache");
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
