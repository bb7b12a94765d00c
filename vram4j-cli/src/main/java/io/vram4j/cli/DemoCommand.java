package io.vram4j.cli;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.stats.FormatSize;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Callable;

/**
 * {@code vram4j demo}: allocates and frees a realistic mix (the buffers of a few training steps of a
 * small MLP: parameters, activations kept for backward, gradients, optimizer state, temporaries) on the
 * host device, touching every byte, then prints {@code memory_summary}.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
        description = "Allocate and free a training-like mix on a device and print memory_summary.")
final class DemoCommand implements Callable<Integer> {
    @Option(names = "--device", defaultValue = "host:2GiB", description = "host[:SIZE] or sim[:SIZE|PRESET] (default: ${DEFAULT-VALUE})")
    String device;

    @Option(names = "--alloc-conf", defaultValue = "", description = "allocator settings in PYTORCH_CUDA_ALLOC_CONF format")
    String allocConf;

    @Option(names = "--steps", defaultValue = "5", description = "training-like steps to simulate (default: ${DEFAULT-VALUE})")
    int steps;

    @Option(names = "--batch", defaultValue = "256", description = "batch size of the simulated model (default: ${DEFAULT-VALUE})")
    int batch;

    @Option(names = "--snapshot", paramLabel = "FILE",
            description = "record the memory history and write the snapshot (pickle, or JSON for a .json name), e.g. for 'vram4j viz'")
    java.nio.file.Path snapshot;

    @Override
    public Integer call() {
        if (steps < 1 || batch < 1) {
            throw new UserException("--steps and --batch must be positive");
        }
        AllocatorConfig config = AllocatorConfig.fromEnvironment(System.getenv());
        if (!allocConf.isEmpty()) {
            config = config.parse(allocConf);
        }
        try (DeviceBackend dev = Devices.open(device)) {
            CachingAllocator alloc = CachingAllocator.create(dev, config);
            if (snapshot != null) {
                alloc.recordMemoryHistory(100_000);
            }
            int[] widths = {784, 1024, 1024, 512, 10};
            List<Long> params = new ArrayList<>();
            List<Long> optState = new ArrayList<>();
            for (int i = 0; i + 1 < widths.length; i++) {
                long w = (long) widths[i] * widths[i + 1] * 4;
                long b = (long) widths[i + 1] * 4;
                for (long bytes : new long[] {w, b}) {
                    params.add(touch(alloc, bytes));
                    optState.add(touch(alloc, bytes)); // momentum
                }
            }
            Random rnd = new Random(7);
            for (int step = 0; step < steps; step++) {
                Deque<Long> saved = new ArrayDeque<>();
                long input = touch(alloc, (long) batch * widths[0] * 4);
                saved.push(input);
                for (int i = 1; i < widths.length; i++) {
                    long act = touch(alloc, (long) batch * widths[i] * 4);
                    saved.push(act);
                    if (i + 1 < widths.length) {
                        long mask = touch(alloc, (long) batch * widths[i]); // relu mask (bytes)
                        saved.push(mask);
                    }
                }
                long loss = touch(alloc, 4 + rnd.nextInt(64));
                List<Long> grads = new ArrayList<>();
                for (int i = widths.length - 1; i > 0; i--) {
                    long gradOut = touch(alloc, (long) batch * widths[i] * 4);
                    grads.add(touch(alloc, (long) widths[i - 1] * widths[i] * 4));
                    grads.add(touch(alloc, (long) widths[i] * 4));
                    alloc.free(gradOut);
                }
                while (!saved.isEmpty()) {
                    alloc.free(saved.pop());
                }
                alloc.free(loss);
                for (long g : grads) {
                    alloc.free(g);
                }
                System.out.printf("step %d: allocated %s, reserved %s, peak allocated %s%n", step + 1,
                        FormatSize.formatSize(alloc.memoryAllocated()), FormatSize.formatSize(alloc.memoryReserved()),
                        FormatSize.formatSize(alloc.maxMemoryAllocated()));
            }
            System.out.print(alloc.memorySummary());
            if (snapshot != null) {
                try {
                    io.vram4j.memory.snapshot.SnapshotWriter.write(alloc.snapshot(), snapshot);
                } catch (java.io.IOException e) {
                    throw new UserException(snapshot + ": cannot write the snapshot: " + e.getMessage());
                }
                System.out.println("snapshot: " + snapshot);
            }
            for (long p : params) {
                alloc.free(p);
            }
            for (long p : optState) {
                alloc.free(p);
            }
            alloc.close();
        }
        return 0;
    }

    private static long touch(CachingAllocator alloc, long bytes) {
        long ptr = alloc.malloc(bytes);
        if (alloc.device().hasStorage()) {
            MemorySegment s = alloc.segment(ptr);
            s.fill((byte) 1);
        }
        return ptr;
    }
}
