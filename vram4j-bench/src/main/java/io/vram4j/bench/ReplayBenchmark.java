package io.vram4j.bench;

import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.ReplayReport;
import io.vram4j.replay.Replayer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Trace events replayed per second on one core, for the real PyTorch snapshots in
 * {@code shared/data/snapshots} (the path is given by {@code -p dir=...}; default {@code ../shared/data/snapshots}).
 * One operation is one whole {@link Replayer#replay}: the trace analysis, the rebuilt initial state, the replay
 * and the re-run to the moment of peak allocation, and the final-state comparison. Events per second quoted
 * from it (trace entries / time per operation) therefore understate the per-event speed by more than 2x.
 * Sample-time mode, so the median and tail are visible on a shared machine.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 5, time = 1)
@Measurement(iterations = 10, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
public class ReplayBenchmark {
    @Param({"../shared/data/snapshots"})
    public String dir;

    @Param({"decomfl-opt-zo-finetune_from-empty.pickle", "cs336-medium-ctx512_train-step_steady-state.pickle"})
    public String file;

    @Param({"exact", "own-addresses"})
    public String mode;

    private MemorySnapshot snapshot;
    private ReplayOptions options;

    @Setup(Level.Trial)
    public void load() throws IOException {
        Path p = Path.of(dir, file);
        if (!Files.exists(p)) {
            throw new IllegalStateException(p + " not found; pass -p dir=<shared/data/snapshots>");
        }
        snapshot = SnapshotReader.read(p);
        options = mode.equals("exact") ? ReplayOptions.EXACT : new ReplayOptions(null, 0, false, false);
    }

    /** @return the report (so the work is not eliminated) */
    @Benchmark
    public ReplayReport replay() {
        return Replayer.replay(snapshot, options).get(0);
    }
}
