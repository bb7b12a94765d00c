package io.vram4j.bench.peers;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

import static io.vram4j.device.NativeCalls.rethrow;

/** glibc {@code malloc}/{@code free} called through FFM downcall handles (no caching of our own). */
final class LibcPeer implements Peer {
    private static final MethodHandle MALLOC;
    private static final MethodHandle FREE;

    static {
        Linker linker = Linker.nativeLinker();
        MALLOC = linker.downcallHandle(linker.defaultLookup().find("malloc").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
        FREE = linker.downcallHandle(linker.defaultLookup().find("free").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.JAVA_LONG));
    }

    static long malloc(long size) {
        try {
            long p = (long) MALLOC.invokeExact(size);
            if (p == 0) {
                throw new OutOfMemoryError("malloc(" + size + ") returned NULL");
            }
            return p;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void free(long ptr) {
        try {
            FREE.invokeExact(ptr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }


    @Override
    public SlotAllocator slots(int n) {
        long[] ptrs = new long[n];
        return new SlotAllocator() {
            @Override
            public void alloc(int slot, long size) {
                ptrs[slot] = malloc(size);
            }

            @Override
            public void free(int slot) {
                LibcPeer.free(ptrs[slot]);
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
    }
}
