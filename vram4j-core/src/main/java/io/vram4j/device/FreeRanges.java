package io.vram4j.device;

import java.util.SplittableRandom;

/**
 * The free parts of an address region, as disjoint, coalesced half-open ranges {@code [start, end)}, with a
 * lowest-address first-fit search. All boundaries are multiples of a small alignment; a search asks for
 * either that alignment or a large one.
 *
 * <p>The ranges are kept in a treap (a randomized balanced search tree) ordered by start, in which every node
 * also holds, for its subtree, the longest free length and the longest length usable at the large alignment
 * (the range minus the padding up to its first aligned address). The search descends to the lowest range
 * that fits in expected O(log n) steps, and so do {@link #take} and {@link #give}.
 *
 * <p>A building block of device backends: the {@code sim} and {@code host} devices both place segments with it,
 * so that the same calls give the same relative layout on both. Not thread-safe; callers synchronize.
 */
public final class FreeRanges {
    private final long smallAlignment;
    private final long largeAlignment;
    private final SplittableRandom random = new SplittableRandom(0x5eed_f7eeL);
    private Node root;
    private int count;
    // results of split(), to avoid allocating pairs
    private Node splitLeft;
    private Node splitRight;

    private static final class Node {
        final long start;
        final long end;
        final int priority;
        Node left;
        Node right;
        long maxLength;
        long maxLargeLength;

        Node(long start, long end, int priority) {
            this.start = start;
            this.end = end;
            this.priority = priority;
        }
    }

    /**
     * Creates an empty set (nothing free).
     *
     * @param smallAlignment the alignment of every boundary, a power of two
     * @param largeAlignment the other alignment searches may ask for, a larger power of two
     */
    public FreeRanges(long smallAlignment, long largeAlignment) {
        this.smallAlignment = smallAlignment;
        this.largeAlignment = largeAlignment;
    }

    /** @return the number of disjoint free ranges */
    public int rangeCount() {
        return count;
    }

    /**
     * @param length bytes, a positive multiple of the small alignment
     * @param alignment the small or the large alignment
     * @return the lowest address, at that alignment, starting {@code length} free bytes; -1 if there is none
     * @throws IllegalArgumentException if {@code alignment} is neither of the two
     */
    public long firstFit(long length, long alignment) {
        boolean large = alignment == largeAlignment;
        if (!large && alignment != smallAlignment) {
            throw new IllegalArgumentException("unsupported alignment " + alignment);
        }
        Node n = root;
        if (best(n, large) < length) {
            return -1;
        }
        while (true) { // invariant: the subtree of n holds a range that fits
            if (best(n.left, large) >= length) {
                n = n.left;
            } else if (usable(n, large) >= length) {
                return large ? alignUp(n.start, largeAlignment) : n.start;
            } else {
                n = n.right;
            }
        }
    }

    /** @return true if every byte of {@code [start, start + length)} is free */
    public boolean isFree(long start, long length) {
        Node n = floor(start);
        return n != null && start < n.end && n.end - start >= length;
    }

    /**
     * Marks {@code [start, start + length)}, which must be free, as used.
     *
     * @throws IllegalStateException if part of the range is not free
     */
    public void take(long start, long length) {
        Node n = floor(start);
        if (n == null || start >= n.end || n.end - start < length) {
            throw new IllegalStateException("range [" + hex(start) + ", +" + length + ") is not free");
        }
        remove(n.start);
        if (n.start < start) {
            insert(n.start, start);
        }
        if (start + length < n.end) {
            insert(start + length, n.end);
        }
    }

    /**
     * Marks {@code [start, start + length)}, which must be used, as free, merging it with free neighbours.
     *
     * @throws IllegalArgumentException if the range is empty or not aligned to the small alignment
     * @throws IllegalStateException if part of the range is already free
     */
    public void give(long start, long length) {
        long end = start + length;
        if (start % smallAlignment != 0 || end % smallAlignment != 0 || length <= 0) {
            throw new IllegalArgumentException("range [" + hex(start) + ", +" + length + ") is not aligned to "
                    + smallAlignment);
        }
        Node before = floor(start);
        Node after = ceiling(start);
        if ((before != null && before.end > start) || (after != null && after.start < end)) {
            throw new IllegalStateException("range [" + hex(start) + ", +" + length + ") is already partly free");
        }
        long mergedStart = start;
        long mergedEnd = end;
        if (before != null && before.end == start) {
            mergedStart = before.start;
            remove(before.start);
        }
        if (after != null && after.start == end) {
            mergedEnd = after.end;
            remove(after.start);
        }
        insert(mergedStart, mergedEnd);
    }

    // ---- treap --------------------------------------------------------------------------------------------

    private Node floor(long key) {
        Node n = root;
        Node found = null;
        while (n != null) {
            if (n.start <= key) {
                found = n;
                n = n.right;
            } else {
                n = n.left;
            }
        }
        return found;
    }

    /** @return the node with the least start greater than {@code key}, or null */
    private Node ceiling(long key) {
        Node n = root;
        Node found = null;
        while (n != null) {
            if (n.start > key) {
                found = n;
                n = n.left;
            } else {
                n = n.right;
            }
        }
        return found;
    }

    private void insert(long start, long end) {
        Node node = new Node(start, end, random.nextInt());
        update(node);
        split(root, start);
        Node right = splitRight;
        root = merge(merge(splitLeft, node), right);
        count++;
    }

    private void remove(long start) {
        split(root, start);
        Node left = splitLeft;
        split(splitRight, start + 1);
        root = merge(left, splitRight);
        count--;
    }

    /** Splits {@code t} into {@link #splitLeft} (starts below {@code key}) and {@link #splitRight} (the rest). */
    private void split(Node t, long key) {
        if (t == null) {
            splitLeft = null;
            splitRight = null;
        } else if (t.start < key) {
            split(t.right, key);
            t.right = splitLeft;
            update(t);
            splitLeft = t;
        } else {
            split(t.left, key);
            t.left = splitRight;
            update(t);
            splitRight = t;
        }
    }

    /** Joins two treaps, every start of {@code a} below every start of {@code b}. */
    private Node merge(Node a, Node b) {
        if (a == null) {
            return b;
        }
        if (b == null) {
            return a;
        }
        if (a.priority > b.priority) {
            a.right = merge(a.right, b);
            update(a);
            return a;
        }
        b.left = merge(a, b.left);
        update(b);
        return b;
    }

    private void update(Node n) {
        n.maxLength = Math.max(n.end - n.start, Math.max(best(n.left, false), best(n.right, false)));
        n.maxLargeLength = Math.max(usable(n, true), Math.max(best(n.left, true), best(n.right, true)));
    }

    private static long best(Node n, boolean large) {
        return n == null ? 0 : large ? n.maxLargeLength : n.maxLength;
    }

    private long usable(Node n, boolean large) {
        return large ? Math.max(0, n.end - alignUp(n.start, largeAlignment)) : n.end - n.start;
    }

    private static long alignUp(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }

    private static String hex(long address) {
        return "0x" + Long.toHexString(address);
    }
}
