package io.vram4j.bench;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.bench.peers.DlMix;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;

import java.util.Map;
import java.util.TreeMap;

/**
 * Memory held after the DL mix of {@link AllocatorBenchmark} (one thread, seed 42): vram4j's reserved and
 * allocated bytes, against the naive best-fit {@code TreeMap} cache's bytes obtained from malloc (cached
 * free plus live buffers). Both are driven by the same sequence; vram4j runs on a {@code sim} device (its
 * decisions are the same as on {@code host}), the cache is simulated by bookkeeping alone. Prints one line per
 * operation count.
 *
 * <p>Run: {@code java -cp vram4j-bench/target/benchmarks.jar io.vram4j.bench.DlMixFootprint [OPS...]}.
 */
public final class DlMixFootprint {
    private static final double GIB = 1L << 30;

    private DlMixFootprint() {
    }

    public static void main(String[] args) {
        String[] counts = args.length > 0 ? args : new String[] {"100000", "1000000"};
        long[][] seq = DlMix.sequence(42);
        long[] sizes = seq[0];
        long[] victims = seq[1];
        long[] initial = seq[2];
        int mask = sizes.length - 1;
        for (String c : counts) {
            long ops = Long.parseLong(c);
            try (DeviceBackend device = Devices.open("sim:80GiB");
                 CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT)) {
                long[] ptrs = new long[DlMix.LIVE];
                long[] held = new long[DlMix.LIVE];
                TreeMap<Long, Integer> cache = new TreeMap<>();
                long fromMalloc = 0;
                long cachedFree = 0;
                for (int i = 0; i < DlMix.LIVE; i++) {
                    ptrs[i] = alloc.malloc(initial[i]);
                    held[i] = initial[i];
                    fromMalloc += initial[i];
                }
                for (long k = 0; k < ops; k++) {
                    int i = (int) (k & mask);
                    int v = (int) victims[i];
                    alloc.free(ptrs[v]);
                    ptrs[v] = alloc.malloc(sizes[i]);
                    cache.merge(held[v], 1, Integer::sum);
                    cachedFree += held[v];
                    Map.Entry<Long, Integer> e = cache.ceilingEntry(sizes[i]);
                    if (e == null) {
                        held[v] = sizes[i];
                        fromMalloc += sizes[i];
                    } else {
                        held[v] = e.getKey();
                        cachedFree -= e.getKey();
                        if (e.getValue() == 1) {
                            cache.remove(e.getKey());
                        } else {
                            cache.put(e.getKey(), e.getValue() - 1);
                        }
                    }
                }
                System.out.printf("%,d ops: vram4j reserved %.2f GiB (peak %.2f), allocated %.2f GiB;"
                                + " TreeMap cache holds %.2f GiB from malloc (%.2f GiB cached free, %.2f GiB live)%n",
                        ops, alloc.memoryReserved() / GIB, alloc.maxMemoryReserved() / GIB, alloc.memoryAllocated() / GIB,
                        fromMalloc / GIB, cachedFree / GIB, (fromMalloc - cachedFree) / GIB);
                for (long p : ptrs) {
                    alloc.free(p);
                }
            }
        }
    }
}
