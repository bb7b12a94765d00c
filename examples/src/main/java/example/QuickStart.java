package example;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.SnapshotWriter;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/** The README's library quick start, as it stands there. */
public class QuickStart {
    public static void main(String[] args) throws IOException {
        try (DeviceBackend device = Devices.open("host:4GiB")) {          // or "sim:80GiB", "sim:H100-80GB"
            CachingAllocator alloc = CachingAllocator.create(device);      // settings from VRAM4J_ALLOC_CONF
            alloc.recordMemoryHistory(100_000);                            // trace with Java stack frames

            long ptr = alloc.malloc(3 << 20);                              // 3 MiB: large pool, 20 MiB segment
            MemorySegment bytes = alloc.segment(ptr);                      // real off-heap memory on "host"
            bytes.fill((byte) 1);
            alloc.free(ptr);                                               // cached for reuse, not returned

            System.out.println(alloc.memoryAllocated() + " / " + alloc.memoryReserved());
            System.out.print(alloc.memorySummary());                       // PyTorch's memory_summary table
            SnapshotWriter.write(alloc.snapshot(), Path.of("snap.pickle")); // open in pytorch.org/memory_viz
            alloc.emptyCache();
            alloc.close();                                                 // throws if allocations are still live
        }
    }
}
