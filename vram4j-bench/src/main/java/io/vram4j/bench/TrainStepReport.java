package io.vram4j.bench;

import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.VerboseMode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Runs {@link TrainStepBenchmark} for ours and DJL side by side and prints a Markdown table of median step
 * times with the ratio ours/DJL and whether the target (ours within 1.5x of DJL) is met. For each
 * (hidden, batch, threads) the forks run back to back (ours, DJL, DJL with {@code OMP_WAIT_POLICY=PASSIVE}),
 * so that a change of load on a shared machine hits both sides alike. The ratio is taken against the faster
 * of the two DJL settings.
 *
 * <p>Arguments are JMH's own ({@code -wi}, {@code -i}, {@code -f}, {@code -v}...), plus {@code -p hidden=},
 * {@code -p batch=}, {@code -p threads=} lists to choose the rows (defaults: 1024,512 / 128,512 / 1,2):
 * <pre>
 * java -cp vram4j-bench/target/benchmarks.jar io.vram4j.bench.TrainStepReport
 * java -cp vram4j-bench/target/benchmarks.jar io.vram4j.bench.TrainStepReport -p hidden=1024 -p batch=128 -i 3
 * </pre>
 * On a shared machine, {@code -Dtrainstep.rounds=N} repeats the whole set N times, interleaved, and reports
 * the median of the N medians. Needs the {@code -Pdjl} build. Exit status 2 for bad arguments.
 */
public final class TrainStepReport {
    /** Ours may take at most this many times DJL's median step time (issue 4). */
    static final double TARGET = 1.5;

    private TrainStepReport() {
    }

    /**
     * @param args JMH options
     * @throws RunnerException if JMH fails
     */
    public static void main(String[] args) throws RunnerException {
        CommandLineOptions cli;
        try {
            cli = new CommandLineOptions(args);
        } catch (CommandLineOptionException e) {
            System.err.println("TrainStepReport: " + e.getMessage());
            System.exit(2);
            return;
        }
        List<String> hiddens = param(cli, "hidden", List.of("1024", "512"));
        List<String> batches = param(cli, "batch", List.of("128", "512"));
        List<String> threads = param(cli, "threads", List.of("1", "2"));
        String started = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        String loadBefore = loadAverage();
        int rounds = Integer.getInteger("trainstep.rounds", 1);
        if (rounds < 1) {
            System.err.println("TrainStepReport: -Dtrainstep.rounds must be at least 1, got " + rounds);
            System.exit(2);
            return;
        }
        // per (hidden, batch, threads): for ours, DJL, DJL passive, the {p50, p10} of each round
        Map<String, double[][][]> medians = new LinkedHashMap<>();
        for (int round = 0; round < rounds; round++) {
            for (String h : hiddens) {
                for (String b : batches) {
                    for (String t : threads) {
                        double[][][] m = medians.computeIfAbsent(h + " " + b + " " + t, k -> new double[3][2][rounds]);
                        put(m[0], round, run(cli, h, b, t, "vram4j", "default"));
                        put(m[1], round, run(cli, h, b, t, "djl", "default"));
                        put(m[2], round, run(cli, h, b, t, "djl", "passive"));
                    }
                }
            }
        }
        List<Row> rows = new ArrayList<>();
        medians.forEach((key, m) -> {
            String[] f = key.split(" ");
            rows.add(new Row(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Integer.parseInt(f[2]),
                    new Times(middle(m[0][0]), middle(m[0][1])), new Times(middle(m[1][0]), middle(m[1][1])),
                    new Times(middle(m[2][0]), middle(m[2][1]))));
        });
        System.out.println();
        System.out.println("Training step, median ms (JMH SampleTime p0.50" + (rounds > 1 ? ", median of " + rounds
                + " interleaved rounds" : "") + "); started " + started + ", load average "
                + loadBefore + " before, " + loadAverage() + " after");
        System.out.println("machine: " + machine());
        System.out.println();
        System.out.print(table(rows));
    }

    /**
     * One engine's step times in ms.
     *
     * @param p50 the median step
     * @param p10 the 10th percentile: the steps least disturbed by other processes on a shared machine
     */
    record Times(double p50, double p10) {

        @Override
        public String toString() {
            return ms(p50) + " (" + ms(p10) + ")";
        }
    }

    /** One line of the table. */
    record Row(int hidden, int batch, int threads, Times ours, Times djl, Times djlPassive) {
        /** @return ours / the faster DJL setting, at the given percentile (50 or 10) */
        double ratio(int percentile) {
            double o = percentile == 50 ? ours.p50() : ours.p10();
            double d = best(percentile == 50 ? djl.p50() : djl.p10(), percentile == 50 ? djlPassive.p50() : djlPassive.p10());
            return o / d;
        }

        private static double best(double a, double b) {
            return Double.isNaN(a) ? b : Double.isNaN(b) ? a : Math.min(a, b);
        }
    }

    /**
     * @param rows measured rows
     * @return the Markdown table
     */
    static String table(List<Row> rows) {
        StringBuilder sb = new StringBuilder();
        sb.append("| MLP | batch | threads | vram4j ms | DJL ms | DJL ms, OMP passive | ours / best DJL, median (p10) | within 1.5x |\n");
        sb.append("|---|---|---|---|---|---|---|---|\n");
        for (Row r : rows) {
            double ratio = r.ratio(50);
            sb.append(String.format(Locale.ROOT, "| 784-%d-%d-10 | %d | %d | %s | %s | %s | %s (%s) | %s |%n", r.hidden(),
                    r.hidden(), r.batch(), r.threads(), r.ours(), r.djl(), r.djlPassive(), times(ratio),
                    times(r.ratio(10)), Double.isNaN(ratio) ? "n/a" : ratio <= TARGET ? "yes" : "no"));
        }
        sb.append("\nCells: median (10th percentile) of single steps. The ratio compares ours with the faster DJL setting.\n");
        return sb.toString();
    }

    private static String times(double ratio) {
        return Double.isNaN(ratio) ? "n/a" : String.format(Locale.ROOT, "%.2fx", ratio);
    }

    private static String ms(double v) {
        return Double.isNaN(v) ? "failed" : String.format(Locale.ROOT, "%.1f", v);
    }

    private static List<String> param(CommandLineOptions cli, String name, List<String> fallback) {
        return cli.getParameter(name).hasValue() ? new ArrayList<>(cli.getParameter(name).get()) : fallback;
    }

    private static Collection<RunResult> run(CommandLineOptions cli, String hidden, String batch, String threads,
                                             String engine, String ompWait) throws RunnerException {
        ChainedOptionsBuilder b = new OptionsBuilder().parent(cli)
                .include(TrainStepBenchmark.class.getName() + ".trainStep")
                .param("hidden", hidden).param("batch", batch).param("threads", threads)
                .param("engine", engine).param("ompWait", ompWait);
        if (!cli.verbosity().hasValue()) {
            b.verbosity(VerboseMode.SILENT);
        }
        System.err.printf(Locale.ROOT, "running %s (ompWait %s) hidden %s batch %s threads %s%n", engine, ompWait,
                hidden, batch, threads);
        // JMH holds /tmp/jmh.lock for a whole run: while another benchmark holds it, wait for it (both sides
        // are then measured without that load) rather than fail
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(15);
        while (true) {
            try {
                return new Runner(b.build()).run();
            } catch (RunnerException e) {
                if (!String.valueOf(e.getMessage()).contains("JMH lock") || System.nanoTime() > deadline) {
                    throw e;
                }
                System.err.println("waiting for another JMH run to finish (" + e.getMessage().lines().findFirst().orElse("") + ")");
                try {
                    Thread.sleep(5000);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /** @return {p50, p10} of the single-step samples, NaN if the run failed */
    private static double[] percentiles(Collection<RunResult> results) {
        for (RunResult r : results) {
            var st = r.getPrimaryResult().getStatistics();
            return new double[] {st.getPercentile(50), st.getPercentile(10)};
        }
        return new double[] {Double.NaN, Double.NaN};
    }

    private static void put(double[][] into, int round, Collection<RunResult> results) {
        double[] p = percentiles(results);
        into[0][round] = p[0];
        into[1][round] = p[1];
    }

    /** @return the median of the values (the mean of the middle two for an even count), NaN if any is NaN */
    static double middle(double[] values) {
        double[] v = values.clone();
        java.util.Arrays.sort(v);
        if (Double.isNaN(v[v.length - 1])) {
            return Double.NaN;
        }
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    private static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }

    private static String machine() {
        String cpu = "unknown CPU";
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    cpu = line.substring(line.indexOf(':') + 1).trim();
                    break;
                }
            }
        } catch (IOException e) {
            // keep "unknown CPU"
        }
        return cpu + ", " + Runtime.getRuntime().availableProcessors() + " CPUs, " + System.getProperty("os.name") + " "
                + System.getProperty("os.version") + ", JDK " + Runtime.version();
    }
}
