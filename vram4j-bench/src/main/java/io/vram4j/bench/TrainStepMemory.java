package io.vram4j.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Peak memory of a training step, ours vs DJL, measured the two ways that apply to both, each engine in its
 * own JVM (so neither sees the other's memory):
 * <ul>
 *   <li>the process's resident set as Linux reports it: the peak ({@code VmHWM}, reset by writing 5 to
 *       {@code /proc/self/clear_refs}) above the resident set just before, for the first step (which also
 *       creates gradients and optimizer state) and for a steady-state step; the JVM heap is fixed and
 *       pre-touched ({@code -Xms=-Xmx}, {@code -XX:+AlwaysPreTouch}) so that it does not move the figures;</li>
 *   <li>what the engine reports itself: ours, the caching allocator's allocated and reserved bytes and their
 *       peaks (PyTorch's {@code memory_stats} names); DJL, the bytes of the parameter and gradient arrays it
 *       holds. PyTorch's CPU allocator keeps no statistics, and DJL has no CPU memory API, so DJL cannot
 *       report the peak of a step, nor its activations.</li>
 * </ul>
 * Usage (needs the {@code -Pdjl} build for the DJL rows):
 * <pre>
 * java -cp vram4j-bench/target/benchmarks.jar io.vram4j.bench.TrainStepMemory [hidden batch steps]
 * </pre>
 * defaults 1024 128 20; one intra-op thread on both sides. With {@code --child ENGINE} it measures one engine in
 * this JVM and prints one {@code RESULT} line (what the parent runs). Linux only.
 */
public final class TrainStepMemory {
    private static final String RESULT = "RESULT\t";

    private TrainStepMemory() {
    }

    /**
     * @param args {@code [hidden batch steps]} or {@code --child ENGINE hidden batch steps}
     * @throws Exception if a child JVM cannot be started or read
     */
    public static void main(String[] args) throws Exception {
        List<String> a = List.of(args);
        boolean child = !a.isEmpty() && a.get(0).equals("--child");
        List<String> nums = child ? a.subList(2, a.size()) : a;
        int[] v;
        try {
            v = numbers(nums);
        } catch (IllegalArgumentException e) {
            System.err.println("TrainStepMemory: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (child) {
            measure(a.get(1), v[0], v[1], v[2]);
            return;
        }
        Map<String, Map<String, Long>> results = new LinkedHashMap<>();
        for (String engine : List.of("vram4j", "djl")) {
            results.put(engine, runChild(engine, v));
        }
        System.out.printf(Locale.ROOT, "Training step memory: MLP 784-%d-%d-10, batch %d, SGD, %d steps, 1 thread%n%n",
                v[0], v[0], v[1], v[2]);
        System.out.print(table(results));
    }

    private static int[] numbers(List<String> args) {
        int[] v = {1024, 128, 20};
        String[] names = {"hidden", "batch", "steps"};
        if (args.size() > 3) {
            throw new IllegalArgumentException("expected [hidden batch steps], got " + args);
        }
        for (int i = 0; i < args.size(); i++) {
            try {
                v[i] = Integer.parseInt(args.get(i));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(names[i] + ": expected a positive integer, got '" + args.get(i) + "'");
            }
            if (v[i] < (i == 2 ? 2 : 1)) {
                throw new IllegalArgumentException(names[i] + ": must be at least " + (i == 2 ? 2 : 1) + ", got " + v[i]);
            }
        }
        return v;
    }

    /** Runs one engine in this JVM and prints its figures as one tab-separated RESULT line. */
    private static void measure(String engine, int hidden, int batch, int steps) throws IOException {
        StepBatches batches = new StepBatches(batch, 8);
        Map<String, Long> out = new LinkedHashMap<>();
        try (StepEngine e = StepEngine.open(engine, new StepEngine.Config(hidden, batch, 1, 0.1f, 0f))) {
            long baseline = status("VmRSS");
            out.put("rss after model built", baseline);
            resetPeakRss();
            e.resetPeaks();
            e.step(batches.next());
            out.put("first step: peak rss above before", status("VmHWM") - baseline);
            put(out, "first step: ", e.reportedMemory());
            for (int i = 2; i < steps; i++) {
                e.step(batches.next());
            }
            long before = status("VmRSS");
            resetPeakRss();
            e.resetPeaks();
            e.step(batches.next());
            out.put("steady step: peak rss above before", status("VmHWM") - before);
            put(out, "steady step: ", e.reportedMemory());
            out.put("rss growth since model built", status("VmRSS") - baseline);
        }
        StringBuilder sb = new StringBuilder(RESULT);
        out.forEach((k, x) -> sb.append(k).append('=').append(x).append('\t'));
        System.out.println(sb.toString().stripTrailing());
    }

    private static void put(Map<String, Long> out, String prefix, Map<String, Long> reported) {
        reported.forEach((k, x) -> out.put(prefix + k, x));
    }

    private static Map<String, Long> runChild(String engine, int[] v) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-Dai.djl.offline=true", "-Xms512m", "-Xmx512m",
                "-XX:+AlwaysPreTouch", "-cp", System.getProperty("java.class.path"), TrainStepMemory.class.getName(),
                "--child", engine, Integer.toString(v[0]), Integer.toString(v[1]), Integer.toString(v[2])));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        Map<String, Long> result = null;
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.startsWith(RESULT)) {
                    result = new LinkedHashMap<>();
                    for (String kv : line.substring(RESULT.length()).split("\t")) {
                        int eq = kv.indexOf('=');
                        result.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
                    }
                }
            }
        }
        int rc = p.waitFor();
        if (rc != 0 || result == null) {
            System.err.println("TrainStepMemory: the " + engine + " run failed (exit " + rc + ")");
            return Map.of();
        }
        return result;
    }

    /** @return a Markdown table: one row per figure, one column per engine, "not reported" where absent */
    static String table(Map<String, Map<String, Long>> results) {
        List<String> keys = new ArrayList<>();
        results.values().forEach(m -> m.keySet().forEach(k -> {
            if (!keys.contains(k)) {
                keys.add(k);
            }
        }));
        keys.sort(java.util.Comparator.comparingInt(TrainStepMemory::section));
        StringBuilder sb = new StringBuilder("| figure |");
        results.keySet().forEach(e -> sb.append(' ').append(e).append(" |"));
        sb.append("\n|---|").append("---|".repeat(results.size())).append('\n');
        for (String k : keys) {
            sb.append("| ").append(k).append(" |");
            for (Map<String, Long> m : results.values()) {
                Long x = m.get(k);
                sb.append(' ').append(x == null ? "not reported" : mib(x)).append(" |");
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    /** Orders the rows: before training, first step, steady step, after. */
    private static int section(String key) {
        return key.startsWith("first step") ? 1 : key.startsWith("steady step") ? 2 : key.startsWith("rss growth") ? 3 : 0;
    }

    private static String mib(long bytes) {
        return String.format(Locale.ROOT, "%.2f MiB", bytes / (1024.0 * 1024.0));
    }

    /** @return a {@code /proc/self/status} field in bytes (the file gives kB) */
    private static long status(String field) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith(field + ":")) {
                String[] f = line.substring(field.length() + 1).trim().split("\\s+");
                return Long.parseLong(f[0]) * 1024;
            }
        }
        throw new IOException("/proc/self/status has no " + field);
    }

    /** Resets VmHWM to the current resident set (Linux 4.0+). */
    private static void resetPeakRss() throws IOException {
        Files.writeString(Path.of("/proc/self/clear_refs"), "5");
    }
}
