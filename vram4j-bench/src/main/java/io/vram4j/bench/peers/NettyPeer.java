package io.vram4j.bench.peers;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;

/**
 * Netty direct buffers: {@link PooledByteBufAllocator#DEFAULT} (the jemalloc-style arenas with thread caches)
 * or {@link ByteBufAllocator#DEFAULT} (Netty 4.2's adaptive allocator). A free is {@code release()}.
 */
final class NettyPeer implements Peer {
    private final ByteBufAllocator allocator;

    private NettyPeer(ByteBufAllocator allocator) {
        this.allocator = allocator;
    }

    static NettyPeer pooledDirect() {
        return new NettyPeer(PooledByteBufAllocator.DEFAULT);
    }

    static NettyPeer adaptiveDefault() {
        return new NettyPeer(ByteBufAllocator.DEFAULT);
    }

    @Override
    public SlotAllocator slots(int n) {
        ByteBuf[] bufs = new ByteBuf[n];
        ByteBufAllocator a = allocator;
        return new SlotAllocator() {
            @Override
            public void alloc(int slot, long size) {
                bufs[slot] = a.directBuffer((int) size, (int) size);
            }

            @Override
            public void free(int slot) {
                bufs[slot].release();
                bufs[slot] = null;
            }

            @Override
            public void freeAll() {
                for (int i = 0; i < n; i++) {
                    if (bufs[i] != null) {
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
