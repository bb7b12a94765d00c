package io.vram4j.cli;

import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.replay.OomEvent;
import io.vram4j.replay.OomForensics;
import io.vram4j.replay.OomReportWriter;
import io.vram4j.replay.PreTraceOutOfMemoryException;
import io.vram4j.replay.ReplayException;
import io.vram4j.replay.ReplayReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code vram4j explain-oom FILE}: why each out-of-memory event of a snapshot happened (capacity, fragmentation,
 * cache held elsewhere), with figures, and what would have avoided it, found by replays.
 */
@Command(name = "explain-oom", mixinStandardHelpOptions = true,
        description = {"Explain the out-of-memory events of a memory snapshot: the cause with its figures, then",
                "the smallest capacity that fits, the settings that fit, and how much smaller the peak must be.",
                "With --conf / --capacity: the first out-of-memory failure that what-if predicts."})
final class ExplainOomCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "snapshot pickle (torch.cuda.memory._dump_snapshot) or JSON")
    Path file;

    @Option(names = "--conf", paramLabel = "STRING", description = "what-if allocator settings (PYTORCH_CUDA_ALLOC_CONF format)")
    String conf;

    @Option(names = "--capacity", paramLabel = "SIZE|PRESET", description = "what-if device capacity, e.g. 40GiB or A100-40GB")
    String capacity;

    @Option(names = "--json", description = "print the report as JSON")
    boolean json;

    @Override
    public Integer call() throws IOException {
        long cap = capacity == null ? 0 : ReplayCommand.parseCapacity(capacity);
        ReplayCommand.checkConf(conf);
        MemorySnapshot snapshot = ReplayCommand.read(file);
        if (!snapshot.hasTraces()) {
            throw new UserException(file + " has no trace: explain-oom needs the memory history"
                    + " (torch.cuda.memory._record_memory_history) to find and replay out-of-memory events");
        }
        List<ReplayReport> reports;
        try {
            reports = OomReportWriter.events(snapshot, conf, cap);
        } catch (PreTraceOutOfMemoryException e) {
            System.out.println(e.getMessage());
            return 0;
        } catch (ReplayException e) {
            throw new UserException(file + ": " + e.getMessage());
        }
        if (!json) {
            for (ReplayReport r : reports) {
                System.out.print(OomReportWriter.text(snapshot, r, conf));
            }
            return 0;
        }
        List<Map<String, Object>> list = new ArrayList<>();
        for (ReplayReport r : reports) {
            for (OomEvent e : OomReportWriter.eventsOf(r)) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("device", r.device());
                m.put("entry", e.entry());
                m.put("recorded", e.recorded());
                m.put("failed_in_replay", e.failedInReplay());
                m.put("requested_bytes", e.requestedBytes());
                m.put("frames", e.frames());
                OomForensics.Explanation x = OomForensics.explain(snapshot, r.device(), e, conf);
                m.put("cause", x.diagnosis().cause().name().toLowerCase());
                m.put("reason", x.diagnosis().reason());
                m.put("state", e.state());
                m.put("growth_sites", x.growthSites());
                m.put("counterfactuals", x.counterfactuals());
                list.add(m);
            }
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("file", file.toString());
        root.put("events", list);
        System.out.println(ReplayCommand.mapper().writeValueAsString(root));
        return 0;
    }
}
