package io.vram4j.bench.peers;

/**
 * An allocator under comparison (vram4j or one of the peers of {@code shared/research/peer-figures.md}).
 * The peer itself is shared by all benchmark threads; each thread asks it for its own {@link SlotAllocator}.
 */
public interface Peer extends AutoCloseable {
    /**
     * @param slots how many buffers the thread keeps at most
     * @return a new slot view for the calling thread
     */
    SlotAllocator slots(int slots);

    /** Releases what the peer holds (caches, pools, the device). */
    @Override
    void close();

    /**
     * @param name a peer name as used by the benchmarks' {@code impl} parameter
     * @return a new peer
     * @throws IllegalArgumentException for an unknown name
     */
    static Peer create(String name) {
        return switch (name) {
            case "vram4j" -> new Vram4jPeer(null);
            case "libc" -> new LibcPeer();
            case "nettyPooled" -> NettyPeer.pooledDirect();
            case "nettyAdaptive" -> NettyPeer.adaptiveDefault();
            case "arenaConfined" -> new ArenaPeer(false);
            case "arenaShared" -> new ArenaPeer(true);
            case "treeMapCache" -> new TreeMapCachePeer();
            default -> name.startsWith("vram4j/") ? recording(name) : unknown(name);
        };
    }

    /**
     * @param name {@code vram4j/CONTEXT/STACKS}, e.g. {@code vram4j/alloc/java}: history recording on with
     *     {@code enabled="all"}, that context and stacks setting, and a ring of 100,000 entries
     */
    private static Peer recording(String name) {
        String[] p = name.split("/");
        if (p.length != 3) {
            return unknown(name);
        }
        return Vram4jPeer.recording(p[1], p[2], 100_000);
    }

    private static Peer unknown(String name) {
        throw new IllegalArgumentException("unknown peer '" + name
                + "'; expected vram4j, vram4j/CONTEXT/STACKS, libc, nettyPooled, nettyAdaptive, arenaConfined, arenaShared or treeMapCache");
    }
}
