package io.vram4j.alloc;

import io.vram4j.device.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The intrusive free-block tree against a {@code TreeSet} with PyTorch's (stream, size, address) comparator:
 * random insertions, removals, lookups and walks under many seeds, with the red-black invariants checked as
 * it goes.
 */
class FreeBlockTreeTest {
    /** Stream handles, including ones with the top bit set (they sort after the others, unsigned). */
    private static final Stream[] STREAMS = {new Stream(0, 0), new Stream(0, 0x7f00_1234L), new Stream(0, -16L),
            new Stream(0, Long.MIN_VALUE)};
    private static final BlockPool POOL = new BlockPool(false);

    static LongStream seeds() {
        return LongStream.range(1, 41);
    }

    private static Block block(SplittableRandom r, long ptr) {
        // Few distinct sizes, so that ties on size are broken by address; some sizes above 2^62.
        long size = r.nextInt(10) == 0 ? (1L << 62) + r.nextInt(4) * 512L : (1 + r.nextInt(24)) * 512L;
        return new Block(STREAMS[r.nextInt(STREAMS.length)], POOL, size, ptr);
    }

    private static long randomPtr(SplittableRandom r, long nextPtr) {
        return r.nextInt(8) == 0 ? -r.nextLong(1, 1 << 20) * 512 : r.nextLong(0, nextPtr + 1024);
    }

    @ParameterizedTest(name = "seed {0}")
    @MethodSource("seeds")
    void randomOperationsAgreeWithTreeSet(long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        FreeBlockTree tree = new FreeBlockTree();
        TreeSet<Block> ref = new TreeSet<>(BlockPool.BY_SIZE);
        List<Block> members = new ArrayList<>();
        List<Block> outsiders = new ArrayList<>();
        long nextPtr = 512;
        Block probe = new Block(STREAMS[0], POOL, 0, 0);
        int ops = 4000;
        for (int i = 0; i < ops; i++) {
            int op = r.nextInt(100);
            if (op < 40 || members.isEmpty()) {
                Block b;
                if (!outsiders.isEmpty() && r.nextBoolean()) {
                    b = outsiders.remove(r.nextInt(outsiders.size())); // re-insert a removed block
                } else {
                    b = block(r, r.nextInt(16) == 0 ? -nextPtr : nextPtr);
                    nextPtr += 512;
                }
                assertEquals(ref.add(b), tree.add(b));
                members.add(b);
            } else if (op < 70) {
                Block b = members.remove(r.nextInt(members.size()));
                assertTrue(tree.remove(b));
                assertTrue(ref.remove(b));
                assertFalse(tree.remove(b), "second removal is a no-op");
                outsiders.add(b);
            } else if (op < 85) {
                Stream s = STREAMS[r.nextInt(STREAMS.length)];
                long size = r.nextInt(4) == 0 ? (1L << 62) + r.nextInt(4) * 512L : r.nextInt(26) * 512L;
                long ptr = randomPtr(r, nextPtr);
                probe.streamKey = s.handle();
                probe.size = size;
                probe.ptr = ptr;
                assertSame(ref.ceiling(probe), tree.ceiling(s.handle(), size, ptr));
                assertSame(ref.lower(probe), tree.lower(s.handle(), size, ptr));
            } else if (op < 97) {
                Block b = members.get(r.nextInt(members.size()));
                assertSame(ref.higher(b), tree.higher(b));
                assertSame(ref.lower(b), tree.lower(b));
            } else if (op < 99) {
                List<Block> walked = new ArrayList<>();
                tree.forEach(walked::add);
                assertEquals(new ArrayList<>(ref), walked);
                assertSame(ref.isEmpty() ? null : ref.first(), tree.first());
            } else {
                tree.clear();
                ref.clear();
                outsiders.addAll(members);
                members.clear();
                assertNull(tree.first());
            }
            assertEquals(ref.size(), tree.size());
            if (i % 50 == 0 || i == ops - 1) {
                tree.checkInvariants();
            }
        }
        for (Block b : members) {
            assertTrue(FreeBlockTree.contains(b));
        }
        for (Block b : outsiders) {
            assertFalse(FreeBlockTree.contains(b));
        }
    }

    @Test
    void drainsInAnyOrderAndStaysBalanced() {
        SplittableRandom r = new SplittableRandom(7);
        FreeBlockTree tree = new FreeBlockTree();
        List<Block> all = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            Block b = new Block(STREAMS[0], POOL, 512, 512L * (i + 1)); // ascending: the worst case for a plain BST
            tree.add(b);
            all.add(b);
        }
        int height = tree.checkInvariants();
        assertTrue(height <= 16, "black height " + height + " of 20,000 sorted insertions");
        while (!all.isEmpty()) {
            Block b = all.remove(r.nextInt(all.size()));
            assertTrue(tree.remove(b));
            if (all.size() % 1000 == 0) {
                tree.checkInvariants();
            }
        }
        assertTrue(tree.isEmpty());
        assertNull(tree.first());
    }

    @Test
    void rejectsDuplicatesAndDoubleInsertion() {
        FreeBlockTree tree = new FreeBlockTree();
        FreeBlockTree other = new FreeBlockTree();
        Block a = new Block(STREAMS[1], POOL, 1024, 4096);
        Block sameKey = new Block(STREAMS[1], POOL, 1024, 4096);
        assertTrue(tree.add(a));
        assertFalse(tree.add(sameKey), "a second block with an equal key is refused, as TreeSet refuses it");
        assertFalse(FreeBlockTree.contains(sameKey));
        assertThrows(IllegalStateException.class, () -> other.add(a));
        assertEquals(1, tree.size());
        assertEquals(0, other.size());
    }
}
