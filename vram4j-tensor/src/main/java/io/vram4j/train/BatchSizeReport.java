package io.vram4j.train;

import io.vram4j.memory.stats.FormatSize;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Prints batch-size searches ({@link BatchSizeFinder}) as lines and a table, and turns them into JSON-ready maps
 * (byte counts in bytes, times in seconds). Stateless and thread-safe; each method flushes what it printed.
 */
public final class BatchSizeReport {
    private BatchSizeReport() {
    }

    /**
     * Prints the searches as a table: technique, largest batch, peaks, ratio to the first (the baseline), tries, time.
     *
     * @param results the searches
     * @param out where the table goes
     */
    public static void table(List<BatchSizeFinder.Result> results, PrintWriter out) {
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

    /**
     * One line per try, as it ends: setting, batch, fits or not (and in which phase it ran out), peaks, time.
     *
     * @param technique the setting in words
     * @param a the try
     * @param out where the line goes
     */
    public static void tryLine(String technique, BatchSizeFinder.Attempt a, PrintWriter out) {
        out.printf(Locale.ROOT, "  %s: batch %,d %s, peak reserved %s, peak allocated: training %s, evaluation %s, %.0f ms%n", technique,
                a.batchSize(), a.fits() ? "fits" : "out of memory in " + a.failedIn(), FormatSize.formatSize(a.peakReserved()),
                FormatSize.formatSize(a.phases().trainingAllocated()),
                a.phases().evaluationBatch() == 0 ? "-" : FormatSize.formatSize(a.phases().evaluationAllocated()), a.seconds() * 1e3);
        out.flush();
    }

    /**
     * Says which searches stopped at their upper bound, where a larger batch may fit.
     *
     * @param results the searches
     * @param bound the upper bound in words
     * @param out where the lines go
     */
    public static void upperBounds(List<BatchSizeFinder.Result> results, String bound, PrintWriter out) {
        for (BatchSizeFinder.Result r : results) {
            if (r.hitUpperBound()) {
                out.printf(Locale.ROOT, "%s: the search stopped at its upper bound (%s), which fits; a larger batch may fit too%n",
                        r.technique(), bound);
            }
        }
        out.flush();
    }

    /**
     * @param results the searches
     * @return one JSON-ready map per search, with its tries
     */
    public static List<Map<String, Object>> json(List<BatchSizeFinder.Result> results) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (BatchSizeFinder.Result r : results) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("technique", r.technique());
            m.put("checkpoint_segments", r.options().checkpoint());
            m.put("amp", r.options().amp().toString());
            m.put("largest_batch", r.largest());
            m.put("peak_allocated_bytes", r.peakAllocated());
            m.put("peak_reserved_bytes", r.peakReserved());
            m.put("seconds", r.seconds());
            m.put("upper_bound", r.upperBound());
            m.put("hit_upper_bound", r.hitUpperBound());
            List<Map<String, Object>> tries = new ArrayList<>();
            for (BatchSizeFinder.Attempt a : r.attempts()) {
                Map<String, Object> t = new LinkedHashMap<>();
                t.put("batch_size", a.batchSize());
                t.put("fits", a.fits());
                if (!a.fits()) {
                    t.put("out_of_memory_in", a.failedIn());
                }
                t.put("peak_allocated_bytes", a.peakAllocated());
                t.put("peak_reserved_bytes", a.peakReserved());
                t.put("peaks", peaks(a.phases()));
                t.put("seconds", a.seconds());
                tries.add(t);
            }
            m.put("tries", tries);
            out.add(m);
        }
        return out;
    }

    /**
     * @param p the peaks of training and evaluation
     * @return the two phases' peaks as JSON-ready bytes
     */
    public static Map<String, Object> peaks(PhasePeaks p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("training_peak_allocated_bytes", p.trainingAllocated());
        m.put("training_peak_reserved_bytes", p.trainingReserved());
        m.put("evaluation_batch", p.evaluationBatch());
        m.put("evaluation_peak_allocated_bytes", p.evaluationAllocated());
        m.put("evaluation_peak_reserved_bytes", p.evaluationReserved());
        return m;
    }
}
