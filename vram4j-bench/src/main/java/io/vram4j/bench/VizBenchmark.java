package io.vram4j.bench;

import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.memory.viz.MemoryTimeline;
import io.vram4j.memory.viz.TimelinePage;
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
 * What {@code vram4j viz} costs on the JVM for the real PyTorch snapshots in {@code shared/data/snapshots}
 * ({@code -p dir=...}; default {@code ../shared/data/snapshots}): reading the pickle, computing the timeline model
 * (initial state, stacking, state ops, headline, the second pass to the allocated peak) and writing the page.
 * The page's own load and render time in a browser is measured by the core module's headless Chromium test.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED"})
public class VizBenchmark {
    @Param({"../shared/data/snapshots"})
    public String dir;

    @Param({"decomfl-opt-zo-finetune_from-empty.pickle", "cs336-medium-ctx512_train-step_steady-state.pickle"})
    public String file;

    private Path path;
    private MemorySnapshot snapshot;
    private MemoryTimeline timeline;

    @Setup(Level.Trial)
    public void load() throws IOException {
        path = Path.of(dir, file);
        if (!Files.exists(path)) {
            throw new IllegalStateException(path + " not found; pass -p dir=<shared/data/snapshots>");
        }
        snapshot = SnapshotReader.read(path);
        timeline = MemoryTimeline.of(snapshot, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES);
    }

    /** Reading the pickle. */
    @Benchmark
    public MemorySnapshot read() throws IOException {
        return SnapshotReader.read(path);
    }

    /** The timeline model from a read snapshot. */
    @Benchmark
    public MemoryTimeline model() {
        return MemoryTimeline.of(snapshot, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES);
    }

    /** The HTML page (as a string) from a model. */
    @Benchmark
    public int page() {
        return TimelinePage.render(timeline, file).length();
    }
}
