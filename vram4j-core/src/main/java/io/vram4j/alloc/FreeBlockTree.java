package io.vram4j.alloc;

import java.util.Iterator;
import java.util.NoSuchElementException;

/*
 * Note [Free-block tree]
 *   PyTorch keeps each pool's free blocks in a std::set ordered by BlockComparatorSize: (stream, size,
 *   address), stream compared as an unsigned pointer. A java.util.TreeSet gives the same order but costs an
 *   entry object per insertion and a second search per removal. This red-black tree is intrusive: the links
 *   live in the Block itself (treeLeft, treeRight, treeParent, treeRed, inFreeTree), so inserting allocates
 *   nothing, removing a known block needs no search, and lookups take their key as three longs instead of a
 *   key object. The balancing is the textbook one (insert and delete fix-ups of Cormen et al., chapter 13),
 *   written with null leaves.
 */

/**
 * The free, mapped blocks of one pool ordered by (stream, size, address) with stream handles and addresses
 * compared as unsigned 64-bit integers and sizes as signed: PyTorch's {@code BlockComparatorSize}. An
 * intrusive red-black tree (see the note in the source): a block is in at most one tree at a time and its
 * keyed fields ({@link Block#streamKey}, {@link Block#size}, {@link Block#ptr}) must not change while it is
 * in one. Lookups and insertions are O(log n) and allocate nothing; removal of a member is O(log n)
 * without a search. Iteration is in ascending order and must not overlap a modification. Not thread-safe:
 * guarded by the allocator's lock.
 */
final class FreeBlockTree implements Iterable<Block> {
    private Block root;
    private int size;

    /** @return the number of blocks in the tree */
    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** @return true when {@code b} is a member of a free-block tree */
    static boolean contains(Block b) {
        return b.inFreeTree;
    }

    /** Compares the key (s, sz, p) with block {@code b}'s key. */
    private static int compare(long s, long sz, long p, Block b) {
        if (s != b.streamKey) {
            return Long.compareUnsigned(s, b.streamKey);
        }
        if (sz != b.size) {
            return sz < b.size ? -1 : 1;
        }
        return Long.compareUnsigned(p, b.ptr);
    }

    /**
     * Inserts a block.
     *
     * @param z a block in no tree
     * @return false (and no change) when a block with the same key is already present
     * @throws IllegalStateException when {@code z} is already in a tree
     */
    boolean add(Block z) {
        if (z.inFreeTree) {
            throw new IllegalStateException("block already in a free-block tree: " + z);
        }
        long s = z.streamKey;
        long sz = z.size;
        long p = z.ptr;
        Block parent = null;
        Block x = root;
        int c = 0;
        while (x != null) {
            parent = x;
            c = compare(s, sz, p, x);
            if (c < 0) {
                x = x.treeLeft;
            } else if (c > 0) {
                x = x.treeRight;
            } else {
                return false;
            }
        }
        z.treeParent = parent;
        z.treeLeft = null;
        z.treeRight = null;
        z.treeRed = true;
        z.inFreeTree = true;
        if (parent == null) {
            root = z;
        } else if (c < 0) {
            parent.treeLeft = z;
        } else {
            parent.treeRight = z;
        }
        size++;
        fixAfterInsert(z);
        return true;
    }

    /**
     * Removes a block.
     *
     * @param z any block
     * @return false (and no change) when {@code z} is not in a tree
     */
    boolean remove(Block z) {
        if (!z.inFreeTree) {
            return false;
        }
        Block x;
        Block xParent;
        boolean removedBlack;
        if (z.treeLeft == null) {
            x = z.treeRight;
            xParent = z.treeParent;
            removedBlack = !z.treeRed;
            transplant(z, x);
        } else if (z.treeRight == null) {
            x = z.treeLeft;
            xParent = z.treeParent;
            removedBlack = !z.treeRed;
            transplant(z, x);
        } else {
            Block y = z.treeRight;
            while (y.treeLeft != null) {
                y = y.treeLeft;
            }
            removedBlack = !y.treeRed;
            x = y.treeRight;
            if (y.treeParent == z) {
                xParent = y;
            } else {
                xParent = y.treeParent;
                transplant(y, x);
                y.treeRight = z.treeRight;
                y.treeRight.treeParent = y;
            }
            transplant(z, y);
            y.treeLeft = z.treeLeft;
            y.treeLeft.treeParent = y;
            y.treeRed = z.treeRed;
        }
        if (removedBlack) {
            fixAfterRemove(x, xParent);
        }
        z.treeLeft = null;
        z.treeRight = null;
        z.treeParent = null;
        z.inFreeTree = false;
        size--;
        return true;
    }

    /** Removes every block (unlinking each, so they can join a tree again). */
    void clear() {
        java.util.ArrayDeque<Block> pending = new java.util.ArrayDeque<>();
        if (root != null) {
            pending.push(root);
        }
        while (!pending.isEmpty()) {
            Block b = pending.pop();
            if (b.treeLeft != null) {
                pending.push(b.treeLeft);
            }
            if (b.treeRight != null) {
                pending.push(b.treeRight);
            }
            b.treeLeft = null;
            b.treeRight = null;
            b.treeParent = null;
            b.inFreeTree = false;
        }
        root = null;
        size = 0;
    }

    /**
     * @return the least block with key &gt;= (stream, size, ptr), or null
     */
    Block ceiling(long stream, long size, long ptr) {
        Block x = root;
        Block best = null;
        while (x != null) {
            if (compare(stream, size, ptr, x) <= 0) {
                best = x;
                x = x.treeLeft;
            } else {
                x = x.treeRight;
            }
        }
        return best;
    }

    /**
     * @return the greatest block with key &lt; (stream, size, ptr), or null
     */
    Block lower(long stream, long size, long ptr) {
        Block x = root;
        Block best = null;
        while (x != null) {
            if (compare(stream, size, ptr, x) > 0) {
                best = x;
                x = x.treeRight;
            } else {
                x = x.treeLeft;
            }
        }
        return best;
    }

    /** @return the least block, or null when empty */
    Block first() {
        Block x = root;
        if (x == null) {
            return null;
        }
        while (x.treeLeft != null) {
            x = x.treeLeft;
        }
        return x;
    }

    /**
     * @param b a member of this tree
     * @return the next greater member, or null
     */
    Block higher(Block b) {
        return successor(b);
    }

    /**
     * @param b a member of this tree
     * @return the next smaller member, or null
     */
    Block lower(Block b) {
        if (b.treeLeft != null) {
            Block x = b.treeLeft;
            while (x.treeRight != null) {
                x = x.treeRight;
            }
            return x;
        }
        Block x = b;
        Block p = b.treeParent;
        while (p != null && x == p.treeLeft) {
            x = p;
            p = p.treeParent;
        }
        return p;
    }

    private static Block successor(Block b) {
        if (b.treeRight != null) {
            Block x = b.treeRight;
            while (x.treeLeft != null) {
                x = x.treeLeft;
            }
            return x;
        }
        Block x = b;
        Block p = b.treeParent;
        while (p != null && x == p.treeRight) {
            x = p;
            p = p.treeParent;
        }
        return p;
    }

    /** Ascending iteration; the tree must not change while iterating. */
    @Override
    public Iterator<Block> iterator() {
        return new Iterator<>() {
            private Block next = first();

            @Override
            public boolean hasNext() {
                return next != null;
            }

            @Override
            public Block next() {
                Block b = next;
                if (b == null) {
                    throw new NoSuchElementException();
                }
                next = successor(b);
                return b;
            }
        };
    }

    // --------------------------------------------------------------------------------------------
    // Balancing
    // --------------------------------------------------------------------------------------------

    private static boolean isRed(Block b) {
        return b != null && b.treeRed;
    }

    private void transplant(Block u, Block v) {
        Block p = u.treeParent;
        if (p == null) {
            root = v;
        } else if (u == p.treeLeft) {
            p.treeLeft = v;
        } else {
            p.treeRight = v;
        }
        if (v != null) {
            v.treeParent = p;
        }
    }

    private void rotateLeft(Block x) {
        Block y = x.treeRight;
        x.treeRight = y.treeLeft;
        if (y.treeLeft != null) {
            y.treeLeft.treeParent = x;
        }
        transplant(x, y);
        y.treeLeft = x;
        x.treeParent = y;
    }

    private void rotateRight(Block x) {
        Block y = x.treeLeft;
        x.treeLeft = y.treeRight;
        if (y.treeRight != null) {
            y.treeRight.treeParent = x;
        }
        transplant(x, y);
        y.treeRight = x;
        x.treeParent = y;
    }

    private void fixAfterInsert(Block z) {
        while (isRed(z.treeParent)) {
            Block p = z.treeParent;
            Block g = p.treeParent; // a red node is never the root, so g exists
            if (p == g.treeLeft) {
                Block u = g.treeRight;
                if (isRed(u)) {
                    p.treeRed = false;
                    u.treeRed = false;
                    g.treeRed = true;
                    z = g;
                } else {
                    if (z == p.treeRight) {
                        z = p;
                        rotateLeft(z);
                        p = z.treeParent;
                    }
                    p.treeRed = false;
                    g.treeRed = true;
                    rotateRight(g);
                }
            } else {
                Block u = g.treeLeft;
                if (isRed(u)) {
                    p.treeRed = false;
                    u.treeRed = false;
                    g.treeRed = true;
                    z = g;
                } else {
                    if (z == p.treeLeft) {
                        z = p;
                        rotateRight(z);
                        p = z.treeParent;
                    }
                    p.treeRed = false;
                    g.treeRed = true;
                    rotateLeft(g);
                }
            }
        }
        root.treeRed = false;
    }

    /** Restores the black height after removing a black node; x (possibly null) is the node that moved up. */
    private void fixAfterRemove(Block x, Block parent) {
        while (x != root && !isRed(x)) {
            if (x == parent.treeLeft) {
                Block w = parent.treeRight; // non-null: x's side is one black short
                if (w.treeRed) {
                    w.treeRed = false;
                    parent.treeRed = true;
                    rotateLeft(parent);
                    w = parent.treeRight;
                }
                if (!isRed(w.treeLeft) && !isRed(w.treeRight)) {
                    w.treeRed = true;
                    x = parent;
                    parent = x.treeParent;
                } else {
                    if (!isRed(w.treeRight)) {
                        w.treeLeft.treeRed = false;
                        w.treeRed = true;
                        rotateRight(w);
                        w = parent.treeRight;
                    }
                    w.treeRed = parent.treeRed;
                    parent.treeRed = false;
                    w.treeRight.treeRed = false;
                    rotateLeft(parent);
                    x = root;
                    parent = null;
                }
            } else {
                Block w = parent.treeLeft;
                if (w.treeRed) {
                    w.treeRed = false;
                    parent.treeRed = true;
                    rotateRight(parent);
                    w = parent.treeLeft;
                }
                if (!isRed(w.treeLeft) && !isRed(w.treeRight)) {
                    w.treeRed = true;
                    x = parent;
                    parent = x.treeParent;
                } else {
                    if (!isRed(w.treeLeft)) {
                        w.treeRight.treeRed = false;
                        w.treeRed = true;
                        rotateLeft(w);
                        w = parent.treeLeft;
                    }
                    w.treeRed = parent.treeRed;
                    parent.treeRed = false;
                    w.treeLeft.treeRed = false;
                    rotateRight(parent);
                    x = root;
                    parent = null;
                }
            }
        }
        if (x != null) {
            x.treeRed = false;
        }
    }

    /**
     * Checks the red-black and ordering invariants (tests only).
     *
     * @return the black height
     * @throws IllegalStateException naming the first violation
     */
    int checkInvariants() {
        if (isRed(root)) {
            throw new IllegalStateException("red root");
        }
        if (root != null && root.treeParent != null) {
            throw new IllegalStateException("root has a parent");
        }
        int[] count = {0};
        int h = check(root, count);
        if (count[0] != size) {
            throw new IllegalStateException("size " + size + " but " + count[0] + " nodes");
        }
        return h;
    }

    private static int check(Block n, int[] count) {
        if (n == null) {
            return 1;
        }
        count[0]++;
        if (!n.inFreeTree) {
            throw new IllegalStateException("member not marked: " + n);
        }
        for (Block c : new Block[] {n.treeLeft, n.treeRight}) {
            if (c != null && c.treeParent != n) {
                throw new IllegalStateException("bad parent link under " + n);
            }
            if (n.treeRed && isRed(c)) {
                throw new IllegalStateException("red node with a red child: " + n);
            }
        }
        if (n.treeLeft != null && compare(n.treeLeft.streamKey, n.treeLeft.size, n.treeLeft.ptr, n) >= 0) {
            throw new IllegalStateException("left child not smaller: " + n);
        }
        if (n.treeRight != null && compare(n.treeRight.streamKey, n.treeRight.size, n.treeRight.ptr, n) <= 0) {
            throw new IllegalStateException("right child not greater: " + n);
        }
        int l = check(n.treeLeft, count);
        int r = check(n.treeRight, count);
        if (l != r) {
            throw new IllegalStateException("black heights differ under " + n + ": " + l + " vs " + r);
        }
        return l + (n.treeRed ? 0 : 1);
    }
}
