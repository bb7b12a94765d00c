package io.vram4j.replay;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.OutOfMemoryObserver;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Leaves the evidence of an out-of-memory failure, as PyTorch users do with {@code _dump_snapshot} in an observer:
 * the allocator's snapshot (with its {@code oom} trace entry when memory history is recorded) as
 * {@code oom-N.pickle} and the forensics report ({@link OomReportWriter}, what {@code vram4j explain-oom} prints)
 * as {@code oom-N.txt} in a directory, N counting the failures from 1. Without a recorded history the report says
 * so and explains the state at the failure only.
 *
 * <p>Thread-safe: concurrent failures write files of their own numbers. An {@link UncheckedIOException} from
 * writing propagates out of the failed {@code malloc} (see {@link OutOfMemoryObserver}).
 */
public final class OomEvidenceObserver implements OutOfMemoryObserver {
    private final CachingAllocator allocator;
    private final Path directory;
    private final AtomicInteger count = new AtomicInteger();

    private OomEvidenceObserver(CachingAllocator allocator, Path directory) {
        this.allocator = allocator;
        this.directory = directory;
    }

    /**
     * Attaches an observer that writes the evidence of each failure of {@code allocator} into {@code directory}.
     *
     * @param allocator the allocator
     * @param directory where to write (created when missing)
     * @return the observer attached
     */
    public static OomEvidenceObserver attach(CachingAllocator allocator, Path directory) {
        OomEvidenceObserver o = new OomEvidenceObserver(allocator, directory);
        allocator.attachOutOfMemoryObserver(o);
        return o;
    }

    /** @return how many failures were written so far */
    public int written() {
        return count.get();
    }

    @Override
    public void onOutOfMemory(int device, long allocationBytes, long deviceAllowed, long deviceFree) {
        int n = count.incrementAndGet();
        MemorySnapshot snapshot = allocator.snapshot();
        try {
            Files.createDirectories(directory);
            SnapshotWriter.write(snapshot, directory.resolve("oom-" + n + ".pickle"));
            StringBuilder text = new StringBuilder();
            if (snapshot.hasTraces()) {
                for (ReplayReport r : OomReportWriter.events(snapshot, null, 0)) {
                    text.append(OomReportWriter.text(snapshot, r, null));
                }
            } else {
                OomState s = OomState.of(allocator.segments(), deviceAllowed, allocationBytes, 0); // request unknown: its segment
                OomForensics.Diagnosis d = OomForensics.diagnose(s);
                text.append("device ").append(device).append(": no memory history recorded (recordMemoryHistory),"
                        + " so no trace to replay; at the failure:\n  cause: ").append(d.cause()).append(": ")
                        .append(d.reason()).append('\n');
            }
            Files.writeString(directory.resolve("oom-" + n + ".txt"), text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
