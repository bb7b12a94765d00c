package io.vram4j.bench;

import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.ReplayReport;
import io.vram4j.replay.Replayer;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Replay speed per real snapshot, measured both in wall-clock time and in the replaying thread's CPU time,
 * so that the figure stays meaningful on a machine shared with other work (wall time there includes the
 * time other processes held the core). Prints a Markdown table.
 *
 * <p>For each file and mode ({@code exact}: recorded segment addresses; {@code own-addresses}) it runs
 * {@code warmup} whole replays, then {@code reps} measured ones, and reports medians of: one whole
 * {@link Replayer#replay} (trace analysis, rebuilt initial state, replay pass, re-run to the allocation
 * peak, final-state comparison) and the replay loop alone ({@link ReplayReport#eventsPerSecond()}).
 *
 * <p>Run: {@code java --enable-native-access=ALL-UNNAMED -cp vram4j-bench/target/benchmarks.jar
 * io.vram4j.bench.ReplaySpeed [DIR [WARMUP [REPS]]]}; DIR defaults to {@code ../shared/data/snapshots}.
 */
public final class ReplaySpeed {
    private static final List<String> FILES = List.of("decomfl-opt-zo-finetune_from-empty.pickle",
            "cs336-medium-ctx512_train-step_steady-state.pickle");

    private ReplaySpeed() {
    }

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args.length > 0 ? args[0] : "../shared/data/snapshots");
        int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 200;
        int reps = args.length > 2 ? Integer.parseInt(args[2]) : 200;
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        System.out.println("| file | mode | events | whole replay p50, wall ms | whole replay p50, CPU ms"
                + " | events/s, whole replay (CPU) | events/s, replay loop (wall, p50) |");
        System.out.println("|---|---|---|---|---|---|---|");
        for (String file : FILES) {
            Path p = dir.resolve(file);
            if (!Files.exists(p)) {
                System.err.println(p + " not found (give the snapshots folder as the first argument)");
                System.exit(2);
            }
            MemorySnapshot snapshot = SnapshotReader.read(p);
            for (String mode : List.of("exact", "own-addresses")) {
                ReplayOptions options = mode.equals("exact") ? ReplayOptions.EXACT
                        : new ReplayOptions(null, 0, false, false);
                long events = 0;
                for (int i = 0; i < warmup; i++) {
                    Replayer.replay(snapshot, options);
                }
                double[] wall = new double[reps];
                double[] cpu = new double[reps];
                double[] loop = new double[reps];
                for (int i = 0; i < reps; i++) {
                    long c0 = mx.getCurrentThreadCpuTime();
                    long w0 = System.nanoTime();
                    ReplayReport r = Replayer.replay(snapshot, options).get(0);
                    wall[i] = (System.nanoTime() - w0) / 1e6;
                    cpu[i] = (mx.getCurrentThreadCpuTime() - c0) / 1e6;
                    loop[i] = r.eventsPerSecond();
                    events = r.events();
                }
                double cpuMs = median(cpu);
                System.out.printf("| %s | %s | %,d | %.2f | %.2f | %,.0f | %,.0f |%n", file, mode, events, median(wall),
                        cpuMs, events / (cpuMs / 1e3), median(loop));
            }
        }
    }

    private static double median(double[] a) {
        double[] s = a.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
