package io.vram4j.bench;

import io.vram4j.bench.peers.DlMix;
import io.vram4j.bench.peers.Peer;
import io.vram4j.bench.peers.SlotAllocator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * What memory-history recording costs on the allocator's hot path: the hit (4 KiB) and DL-mix (1 thread)
 * workloads of {@link AllocatorBenchmark}, with {@code recordMemoryHistory("all", CONTEXT, STACKS, 100000)}
 * for context {@code alloc} / {@code all} and stacks {@code java} / {@code none}, against recording off.
 * ns per free + alloc pair (each pair writes 3 trace entries: alloc, free_requested, free_completed).
 *
 * <p>Run: {@code java -jar vram4j-bench/target/benchmarks.jar RecordingCostBenchmark}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xms1g", "-Xmx1g"})
public class RecordingCostBenchmark {
    /** {@code off} or {@code CONTEXT/STACKS}. */
    @Param({"off", "alloc/none", "all/none", "alloc/java", "all/java"})
    public String recording;

    Peer peer;
    /** Every thread's live buffers, freed before the peer closes (JMH may tear the shared state down first). */
    final List<DlMix> mixes = new CopyOnWriteArrayList<>();

    @Setup(Level.Trial)
    public void open() {
        peer = Peer.create(recording.equals("off") ? "vram4j" : "vram4j/" + recording);
    }

    @TearDown(Level.Trial)
    public void close() {
        for (DlMix m : mixes) {
            m.close();
        }
        peer.close();
    }

    /** The DL mix's 64 live buffers. */
    @State(Scope.Thread)
    public static class Mix {
        DlMix mix;

        @Setup(Level.Trial)
        public void setup(RecordingCostBenchmark b) {
            mix = new DlMix(b.peer.slots(DlMix.LIVE), 42);
            b.mixes.add(mix);
        }

        @TearDown(Level.Trial)
        public void teardown() {
            mix.close();
        }
    }

    /** One slot for the hit workload. */
    @State(Scope.Thread)
    public static class Hit {
        SlotAllocator slots;

        @Setup(Level.Trial)
        public void setup(RecordingCostBenchmark b) {
            slots = b.peer.slots(1);
        }
    }

    @Benchmark
    @OperationsPerInvocation(AllocatorBenchmark.BATCH)
    public void dlMix1(Mix m) {
        m.mix.run(AllocatorBenchmark.BATCH);
    }

    @Benchmark
    @OperationsPerInvocation(AllocatorBenchmark.BATCH)
    public void hit4KiB(Hit h) {
        AllocatorBenchmark.hit(h.slots, 4096);
    }
}
