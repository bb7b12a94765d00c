package io.vram4j.bench;

import io.vram4j.bench.peers.DlMix;
import io.vram4j.bench.peers.HitMix;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * vram4j's caching allocator on the {@code host} device against the peers of
 * {@code shared/research/peer-figures.md}, side by side in one run: ns per free + alloc pair.
 * <ul>
 *   <li>{@code dlMix1} / {@code dlMix2}: the "DL mix" ({@link DlMix}) with 1 and 2 threads sharing one allocator
 *       (the time is per operation of one thread).</li>
 *   <li>{@code hit4KiB} / {@code hit1MiB}: allocate and free the same size again and again (a cache hit for
 *       every caching allocator).</li>
 *   <li>{@code hitMix1} / {@code hitMix2}: cache hits over mixed sizes ({@link HitMix}, 512 B to 2 MiB), with 1
 *       and 2 threads sharing one allocator; also in throughput mode ({@code hitMixThroughput1/2}, pairs per
 *       microsecond summed over the threads).</li>
 * </ul>
 * Mode is sample time over batches of {@value #BATCH} pairs, so the percentiles (p50, p90, p99) are of the
 * per-pair mean within a batch; the batch keeps the cost of reading the clock below 2% of a 90 ns pair.
 *
 * <p>Run: {@code java -jar vram4j-bench/target/benchmarks.jar AllocatorBenchmark}; one peer:
 * {@code -p impl=nettyPooled}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xms1g", "-Xmx1g",
        "-XX:MaxDirectMemorySize=12g"})
public class AllocatorBenchmark {
    /** Pairs per benchmark invocation. */
    static final int BATCH = 16;

    /** The allocator under test (see {@link Peer#create}). */
    @Param({"vram4j", "libc", "nettyPooled", "nettyAdaptive", "treeMapCache", "arenaConfined", "arenaShared"})
    public String impl;

    Peer peer;
    /** Every thread's live buffers, freed before the peer closes (JMH may tear the shared state down first). */
    final List<DlMix> mixes = new CopyOnWriteArrayList<>();
    /** Every thread's live buffers of the hit mix, likewise. */
    final List<HitMix> hitMixes = new CopyOnWriteArrayList<>();

    @Setup(Level.Trial)
    public void open() {
        peer = Peer.create(impl);
    }

    @TearDown(Level.Trial)
    public void close() {
        for (DlMix m : mixes) {
            m.close();
        }
        for (HitMix m : hitMixes) {
            m.close();
        }
        peer.close();
    }

    /** One thread's 64 live buffers of the DL mix. */
    @State(Scope.Thread)
    public static class Mix {
        DlMix mix;

        @Setup(Level.Trial)
        public void setup(AllocatorBenchmark b, ThreadParams tp) {
            mix = new DlMix(b.peer.slots(DlMix.LIVE), 42 + tp.getThreadIndex());
            b.mixes.add(mix);
        }

        @TearDown(Level.Trial)
        public void teardown() {
            mix.close();
        }
    }

    /** One thread's {@link HitMix#LIVE} live buffers of the hit mix. */
    @State(Scope.Thread)
    public static class Hits {
        HitMix mix;

        @Setup(Level.Trial)
        public void setup(AllocatorBenchmark b) {
            mix = new HitMix(b.peer.slots(HitMix.LIVE));
            b.hitMixes.add(mix);
        }

        @TearDown(Level.Trial)
        public void teardown() {
            mix.close();
        }
    }

    /** One thread's single slot for the hit workloads. */
    @State(Scope.Thread)
    public static class Hit {
        SlotAllocator slots;

        @Setup(Level.Trial)
        public void setup(AllocatorBenchmark b) {
            slots = b.peer.slots(1);
        }
    }

    @Benchmark
    @Threads(1)
    @OperationsPerInvocation(BATCH)
    public void dlMix1(Mix m) {
        m.mix.run(BATCH);
    }

    @Benchmark
    @Threads(2)
    @OperationsPerInvocation(BATCH)
    public void dlMix2(Mix m) {
        m.mix.run(BATCH);
    }

    @Benchmark
    @Threads(1)
    @OperationsPerInvocation(BATCH)
    public void hit4KiB(Hit h) {
        hit(h.slots, 4096);
    }

    @Benchmark
    @Threads(1)
    @OperationsPerInvocation(BATCH)
    public void hit1MiB(Hit h) {
        hit(h.slots, 1 << 20);
    }

    static void hit(SlotAllocator s, long size) {
        for (int k = 0; k < BATCH; k++) {
            s.alloc(0, size);
            s.free(0);
        }
    }

    @Benchmark
    @Threads(1)
    @OperationsPerInvocation(BATCH)
    public void hitMix1(Hits h) {
        h.mix.run(BATCH);
    }

    @Benchmark
    @Threads(2)
    @OperationsPerInvocation(BATCH)
    public void hitMix2(Hits h) {
        h.mix.run(BATCH);
    }

    @Benchmark
    @Threads(1)
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    @OperationsPerInvocation(BATCH)
    public void hitMixThroughput1(Hits h) {
        h.mix.run(BATCH);
    }

    @Benchmark
    @Threads(2)
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.MICROSECONDS)
    @OperationsPerInvocation(BATCH)
    public void hitMixThroughput2(Hits h) {
        h.mix.run(BATCH);
    }
}
