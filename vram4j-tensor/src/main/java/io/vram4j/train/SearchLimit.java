package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.memory.stats.FormatSize;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * Says, before a batch-size search, what limit its tries run into, and on {@code cuda} how to rehearse the same
 * search on {@code sim}: with a per-process memory fraction the limit is PyTorch's
 * {@code allowed_memory_maximum = floor(fraction x total)} ({@code CUDACachingAllocator.cpp},
 * {@code setMemoryFraction}; the total is {@code cudaMemGetInfo}'s), which a sim of that total reaches exactly;
 * without one it is the device's free memory. Stateless.
 */
final class SearchLimit {
    private SearchLimit() {
    }

    /**
     * Prints the limit line (and on {@code cuda} the dry run's device spec, or why there is none to give).
     *
     * @param dev the device searched
     * @param config the allocator settings of the search
     * @param out where the lines go
     */
    static void describe(DeviceBackend dev, AllocatorConfig config, PrintWriter out) {
        double fraction = config.perProcessMemoryFraction();
        long total = dev.memGetInfo().total();
        long free = dev.memGetInfo().free();
        boolean capped = !Double.isNaN(fraction);
        if (capped) {
            long limit = CachingAllocator.allowedMemoryMaximum(fraction, total);
            out.printf(Locale.ROOT, "memory limit: %s (%,d bytes), per-process memory fraction %s of the device's %,d bytes%n",
                    FormatSize.formatSize(limit), limit, fraction, total);
            if (dev instanceof CudaDevice && limit > free) {
                out.printf(Locale.ROOT, "warning: the limit is above the GPU's free memory (%,d bytes): tries may run out of "
                        + "the GPU before they reach it, which a dry run cannot know; lower the fraction%n", free);
            }
        } else if (dev instanceof CudaDevice) {
            out.printf(Locale.ROOT, "memory limit: the GPU's free memory, %s of %s (no per-process memory fraction: a dry run "
                    + "cannot know what else takes the GPU; set one, e.g. --memory-fraction 0.9, to compare with one)%n",
                    FormatSize.formatSize(free), FormatSize.formatSize(total));
        }
        if (dev instanceof CudaDevice cuda) {
            int[] cc = cuda.computeCapability();
            out.printf(Locale.ROOT, "the same search as a dry run: --device sim:%d:cc%d.%d%s%n", total, cc[0], cc[1],
                    capped ? " --memory-fraction " + fraction : "");
        }
    }
}
