package io.vram4j.bench.peers;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;

/**
 * vram4j's {@link CachingAllocator} on the {@code host} device (real off-heap memory), default settings,
 * one allocator shared by all threads. Optionally records memory history.
 */
final class Vram4jPeer implements Peer {
    private final DeviceBackend device;
    private final CachingAllocator allocator;

    /**
     * @param history {enabled, context, stacks, maxEntries} for {@code recordMemoryHistory}, or null for none
     */
    Vram4jPeer(String[] history) {
        device = Devices.open("host");
        allocator = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
        if (history != null) {
            allocator.recordMemoryHistory(history[0], history[1], history[2], Integer.parseInt(history[3]));
        }
    }

    /**
     * @param context {@code alloc} or {@code all}
     * @param stacks {@code java} or {@code none}
     * @param maxEntries ring-buffer capacity
     * @return a peer that records history with these settings
     */
    static Vram4jPeer recording(String context, String stacks, int maxEntries) {
        return new Vram4jPeer(new String[] {"all", context, stacks, Integer.toString(maxEntries)});
    }

    @Override
    public SlotAllocator slots(int n) {
        long[] ptrs = new long[n];
        CachingAllocator a = allocator;
        return new SlotAllocator() {
            @Override
            public void alloc(int slot, long size) {
                ptrs[slot] = a.malloc(size);
            }

            @Override
            public void free(int slot) {
                a.free(ptrs[slot]);
                ptrs[slot] = 0;
            }

            @Override
            public void freeAll() {
                for (int i = 0; i < n; i++) {
                    if (ptrs[i] != 0) {
                        free(i);
                    }
                }
            }
        };
    }

    @Override
    public void close() {
        try {
            allocator.close();
        } finally {
            device.close();
        }
    }
}
