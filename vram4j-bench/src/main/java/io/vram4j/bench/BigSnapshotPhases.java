package io.vram4j.bench;

import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.memory.viz.MemoryTimeline;
import io.vram4j.memory.viz.TimelinePage;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.Replayer;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * Where the time of {@code replay} and {@code viz} goes on a big snapshot (such as {@link BigSnapshot} writes): each
 * phase once, cold, in one JVM, as the commands run them: reading the pickle, the exact replay, the timeline model,
 * writing the page. For each phase: wall time, the main thread's CPU time, the whole process's CPU time (all
 * threads: the compilers and the collector too; all in milliseconds), the collectors' time in the phase and the heap in use after it (MiB, after a full collection that is not counted in the phase).
 * The main thread's CPU time stays meaningful on a shared machine; the wall time includes the time other processes
 * held the cores. Prints a Markdown table.
 *
 * <p>Run: {@code java -Xmx2g -XX:+UseSerialGC -XX:MaxTenuringThreshold=0 -cp vram4j-bench/target/benchmarks.jar
 * io.vram4j.bench.BigSnapshotPhases SNAPSHOT.pickle [PAGE.html]} (the launcher's options for a big input; the
 * page goes to a temporary file unless named).
 */
public final class BigSnapshotPhases {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();
    private static final com.sun.management.OperatingSystemMXBean PROCESS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private BigSnapshotPhases() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: BigSnapshotPhases SNAPSHOT.pickle [PAGE.html]");
            System.exit(2);
        }
        Path file = Path.of(args[0]);
        Path page = args.length > 1 ? Path.of(args[1]) : Files.createTempFile("vram4j-phases", ".html");
        System.out.println("| phase | wall, ms | main thread CPU, ms | process CPU, ms | GC, ms | heap in use after, MiB |");
        System.out.println("|---|---|---|---|---|---|");
        MemorySnapshot snapshot = phase("read (SnapshotReader.read)", () -> SnapshotReader.read(file));
        phase("replay (Replayer.replay, exact)", () -> Replayer.replay(snapshot, ReplayOptions.EXACT));
        MemoryTimeline timeline = phase("timeline (MemoryTimeline.of)",
                () -> MemoryTimeline.of(snapshot, 0, MemoryTimeline.DEFAULT_MAX_ENTRIES));
        phase("page (TimelinePage.write)", () -> {
            TimelinePage.write(timeline, file.getFileName().toString(), page);
            return null;
        });
        System.out.printf("%npage: %s, %,d bytes%n", page, Files.size(page));
        if (args.length < 2) {
            Files.delete(page);
        }
    }

    private static <T> T phase(String name, Callable<T> work) throws Exception {
        long gc0 = gcMillis();
        long cpu0 = THREADS.getCurrentThreadCpuTime();
        long process0 = PROCESS.getProcessCpuTime();
        long wall0 = System.nanoTime();
        T result = work.call();
        long wall = System.nanoTime() - wall0;
        long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
        long process = PROCESS.getProcessCpuTime() - process0;
        long gc = gcMillis() - gc0;
        System.gc();
        long heap = MEMORY.getHeapMemoryUsage().getUsed();
        System.out.printf("| %s | %,d | %,d | %,d | %,d | %,d |%n", name, wall / 1_000_000, cpu / 1_000_000,
                process / 1_000_000, gc, heap >> 20);
        return result;
    }

    private static long gcMillis() {
        long sum = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            sum += Math.max(0, gc.getCollectionTime());
        }
        return sum;
    }
}
