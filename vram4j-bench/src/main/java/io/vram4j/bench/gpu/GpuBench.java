package io.vram4j.bench.gpu;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.CachingHostAllocator;
import io.vram4j.alloc.PinnedBuffer;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.bench.peers.DlMix;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Locale;

/**
 * vram4j's GPU benchmarks, one table (gpu/bench_pytorch.py measures PyTorch's side in the same run; gpu/run.sh
 * runs both):
 * <ol>
 *   <li>the cache-hit malloc+free pair of the caching allocator on {@code cuda}, next to the driver's own
 *       {@code cuMemAlloc_v2}+{@code cuMemFree_v2} pair for the same sizes (ns per pair, median of 21 batches);</li>
 *   <li>host-to-device and device-to-host copy bandwidth from pageable and from pinned memory
 *       ({@link CachingHostAllocator} over {@code cuMemHostAlloc}), asynchronous on a side stream, 1 MiB to
 *       1 GiB (GB/s, median of repeated copies, host clock around a stream synchronize);</li>
 *   <li>expandable segments: the cost of growing by one 20 MiB page (a new mapping: {@code cuMemCreate},
 *       {@code cuMemMap}, {@code cuMemSetAccess}) next to a new 20 MiB segment ({@code cuMemAlloc_v2}), in µs;</li>
 *   <li>reserved memory after the allocator benchmark's DL mix, with and without expandable segments.</li>
 * </ol>
 * Usage: {@code GpuBench [DEVICE]}, DEVICE {@code cuda} by default ({@code cuda:N} for another GPU).
 */
public final class GpuBench {
    private static final long MiB = 1L << 20;

    private GpuBench() {
    }

    /** @param args optional device spec */
    public static void main(String[] args) {
        String spec = args.length > 0 ? args[0] : "cuda";
        if (!spec.strip().toLowerCase(Locale.ROOT).startsWith("cuda")) {
            System.err.println("GpuBench: '" + spec + "' is not a cuda device; usage: GpuBench [cuda[:N]]");
            System.exit(2);
        }
        try (CudaDevice d = (CudaDevice) Devices.open(spec)) {
            System.out.println("== vram4j GPU bench on " + spec + " (" + CudaDevice.list().get(d.index()).name() + ")");
            cacheHitPairs(d);
            copyBandwidth(d);
            expandableGrowth(d);
            dlMixReserved(d);
        }
    }

    static void cacheHitPairs(CudaDevice d) {
        System.out.println("-- malloc+free pair, ns (median of 21 batches)   vram4j cache hit | cuMemAlloc+cuMemFree");
        long[] sizes = {512, 4096, MiB, 16 * MiB};
        CachingAllocator alloc = CachingAllocator.create(d, AllocatorConfig.DEFAULT);
        for (long size : sizes) {
            alloc.free(alloc.malloc(size)); // warm the cache
            double cached = median(21, 20_000, () -> alloc.free(alloc.malloc(size)));
            double raw = median(21, 200, () -> d.free(d.malloc(size)));
            System.out.printf(Locale.ROOT, "   %-10s %12.0f | %12.0f%n", human(size), cached, raw);
        }
        alloc.emptyCache();
        alloc.close();
    }

    static void copyBandwidth(CudaDevice d) {
        System.out.println("-- copy bandwidth, GB/s (median)   H2D pageable | H2D pinned | D2H pageable | D2H pinned");
        Stream s = d.newStream();
        try (CachingHostAllocator pinned = CachingHostAllocator.create(d.pinnedMemory());
             Arena arena = Arena.ofShared()) {
            for (long size : new long[] {MiB, 16 * MiB, 256 * MiB, 1024 * MiB}) {
                if (size > d.memGetInfo().free() / 4) {
                    System.out.printf(Locale.ROOT, "   %-10s skipped: more than a quarter of the free memory%n", human(size));
                    continue;
                }
                long dev = d.malloc(size);
                MemorySegment pageable = arena.allocate(size, 4096);
                pageable.fill((byte) 1);
                PinnedBuffer pin = pinned.allocate(size);
                pin.segment().fill((byte) 2);
                int reps = size >= 256 * MiB ? 7 : 31;
                double h2dPageable = gbps(size, reps, () -> { d.copyFromHostAsync(pageable, dev, s); s.synchronize(); });
                double h2dPinned = gbps(size, reps, () -> { d.copyFromHostAsync(pin.segment(), dev, s); s.synchronize(); });
                double d2hPageable = gbps(size, reps, () -> { d.copyToHostAsync(dev, pageable, s); s.synchronize(); });
                double d2hPinned = gbps(size, reps, () -> { d.copyToHostAsync(dev, pin.segment(), s); s.synchronize(); });
                System.out.printf(Locale.ROOT, "   %-10s %8.2f | %8.2f | %8.2f | %8.2f%n", human(size), h2dPageable,
                        h2dPinned, d2hPageable, d2hPinned);
                pinned.free(pin);
                d.free(dev);
            }
        }
    }

    static void expandableGrowth(CudaDevice d) {
        int reps = 21;
        double[] grow = new double[reps];
        double[] segment = new double[reps];
        for (int r = 0; r < reps; r++) {
            CachingAllocator exp = CachingAllocator.create(d, AllocatorConfig.DEFAULT.parse("expandable_segments:True"));
            exp.free(exp.malloc(20 * MiB)); // reserve and map the first page
            long p = exp.malloc(20 * MiB); // reuses the page
            long t0 = System.nanoTime();
            long q = exp.malloc(20 * MiB); // grows by one page
            grow[r] = (System.nanoTime() - t0) / 1e3;
            exp.free(p);
            exp.free(q);
            exp.emptyCache();
            exp.close();
            CachingAllocator plain = CachingAllocator.create(d, AllocatorConfig.DEFAULT);
            long t1 = System.nanoTime();
            long s = plain.malloc(20 * MiB); // a new 20 MiB segment
            segment[r] = (System.nanoTime() - t1) / 1e3;
            plain.free(s);
            plain.emptyCache();
            plain.close();
        }
        System.out.printf(Locale.ROOT, "-- one 20 MiB page, µs (median of %d): expandable growth %.1f | new segment %.1f%n",
                reps, median(grow), median(segment));
    }

    static void dlMixReserved(CudaDevice d) {
        long[][] seq = DlMix.sequence(42);
        for (String conf : new String[] {"", "expandable_segments:True"}) {
            CachingAllocator alloc = CachingAllocator.create(d, AllocatorConfig.DEFAULT.parse(conf));
            long[] ptrs = new long[DlMix.LIVE];
            for (int i = 0; i < DlMix.LIVE; i++) {
                ptrs[i] = alloc.malloc(seq[2][i]);
            }
            int mask = seq[0].length - 1;
            for (int k = 0; k < 200_000; k++) {
                int i = k & mask;
                int v = (int) seq[1][i];
                alloc.free(ptrs[v]);
                ptrs[v] = alloc.malloc(seq[0][i]);
            }
            System.out.printf(Locale.ROOT, "-- DL mix, 200,000 ops, %-26s reserved %s (peak %s), allocated %s%n",
                    conf.isEmpty() ? "default settings:" : conf + ":", human(alloc.memoryReserved()),
                    human(alloc.maxMemoryReserved()), human(alloc.memoryAllocated()));
            for (long p : ptrs) {
                alloc.free(p);
            }
            alloc.emptyCache();
            alloc.close();
        }
    }

    private static double median(int batches, int perBatch, Runnable op) {
        for (int i = 0; i < perBatch; i++) {
            op.run();
        }
        double[] ns = new double[batches];
        for (int b = 0; b < batches; b++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < perBatch; i++) {
                op.run();
            }
            ns[b] = (System.nanoTime() - t0) / (double) perBatch;
        }
        return median(ns);
    }

    private static double gbps(long bytes, int reps, Runnable copy) {
        copy.run();
        double[] rates = new double[reps];
        for (int r = 0; r < reps; r++) {
            long t0 = System.nanoTime();
            copy.run();
            rates[r] = bytes / (double) (System.nanoTime() - t0); // bytes per ns = GB/s
        }
        return median(rates);
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    private static String human(long bytes) {
        return bytes >= 1L << 30 ? bytes / (1L << 30) + " GiB" : bytes >= MiB ? bytes / MiB + " MiB"
                : bytes >= 1024 ? bytes / 1024 + " KiB" : bytes + " B";
    }
}
