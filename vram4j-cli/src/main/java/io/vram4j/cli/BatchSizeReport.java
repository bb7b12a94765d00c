package io.vram4j.cli;

import io.vram4j.memory.stats.FormatSize;
import io.vram4j.train.BatchSizeFinder;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Prints batch-size searches as a table and as JSON-ready maps. */
final class BatchSizeReport {
    private BatchSizeReport() {
    }

    static void table(List<BatchSizeFinder.Result> results, PrintWriter out) {
        int w = Math.max(9, results.stream().mapToInt(r -> r.technique().length()).max().orElse(9));
        String fmt = "%-" + w + "s  %13s  %14s  %13s  %10s  %5s  %8s%n";
        out.printf(Locale.ROOT, fmt, "technique", "largest batch", "peak allocated", "peak reserved", "vs baseline", "tries", "time");
        int base = results.isEmpty() ? 0 : results.getFirst().largest();
        for (BatchSizeFinder.Result r : results) {
            out.printf(Locale.ROOT, fmt, r.technique(), String.format(Locale.ROOT, "%,d", r.largest()),
                    FormatSize.formatSize(r.peakAllocated()), FormatSize.formatSize(r.peakReserved()),
                    base == 0 ? "-" : String.format(Locale.ROOT, "%.2fx", (double) r.largest() / base), r.attempts().size(),
                    String.format(Locale.ROOT, "%.2f s", r.seconds()));
        }
        out.flush();
    }

    static List<Map<String, Object>> json(List<BatchSizeFinder.Result> results) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (BatchSizeFinder.Result r : results) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("technique", r.technique());
            m.put("checkpoint_segments", r.options().checkpoint());
            m.put("amp", r.options().amp());
            m.put("largest_batch", r.largest());
            m.put("peak_allocated_bytes", r.peakAllocated());
            m.put("peak_reserved_bytes", r.peakReserved());
            m.put("seconds", r.seconds());
            List<Map<String, Object>> tries = new ArrayList<>();
            for (BatchSizeFinder.Attempt a : r.attempts()) {
                tries.add(Map.of("batch_size", a.batchSize(), "fits", a.fits(), "peak_allocated_bytes", a.peakAllocated(),
                        "peak_reserved_bytes", a.peakReserved(), "seconds", a.seconds()));
            }
            m.put("tries", tries);
            out.add(m);
        }
        return out;
    }
}
