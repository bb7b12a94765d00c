package io.vram4j.predict;

/**
 * Aligns another recording's events with the reference's, event by event: allocations by their stack frames,
 * frees by the allocation they free. An allocation found in one trace only (a one-off, such as a library
 * workspace made once) is passed over with its free, if the next events then match again; at most
 * {@link #maxOneOffs} of them. Anything else is a mismatch, refused with both events named.
 */
final class Alignment {
    private Alignment() {
    }

    /** @return the one-offs tolerated between two traces of {@code allocs} allocations: 1% of them, at least 4 */
    static int maxOneOffs(int allocs) {
        return Math.max(4, allocs / 100);
    }

    /**
     * @param ref the reference trace
     * @param other the trace to align with it
     * @param pair filled per reference allocation ordinal with the other trace's ordinal, -1 for a one-off
     * @return the one-offs passed over, in both traces
     * @throws PredictionException when the traces do not align
     */
    static int align(EventTrace ref, EventTrace other, int[] pair) {
        java.util.Arrays.fill(pair, -1);
        boolean[] refSkipped = new boolean[ref.allocs()];
        boolean[] otherSkipped = new boolean[other.allocs()];
        int i = 0;
        int j = 0;
        int n = ref.events();
        int m = other.events();
        int oneOffs = 0;
        int limit = maxOneOffs(Math.max(ref.allocs(), other.allocs()));
        while (i < n || j < m) {
            if (i < n && ref.kind[i] == EventTrace.FREE && refSkipped[ref.ref[i]]) {
                i++;
            } else if (j < m && other.kind[j] == EventTrace.FREE && otherSkipped[other.ref[j]]) {
                j++;
            } else if (i < n && j < m && match(ref, i, other, j, pair)) {
                if (ref.kind[i] == EventTrace.ALLOC) {
                    pair[ordinal(ref, i)] = ordinal(other, j);
                }
                i++;
                j++;
            } else if (j < m && other.kind[j] == EventTrace.ALLOC && (i >= n || matchesAfter(ref, i, other,
                    after(other, j, otherSkipped), pair))) {
                otherSkipped[ordinal(other, j)] = true;
                oneOffs++;
                j++;
            } else if (i < n && ref.kind[i] == EventTrace.ALLOC && (j >= m || matchesAfter(ref, after(ref, i, refSkipped), other, j,
                    pair))) {
                refSkipped[ordinal(ref, i)] = true;
                oneOffs++;
                i++;
            } else {
                throw new PredictionException("the traces do not align: " + at(ref, i) + " against " + at(other, j)
                        + "; predict needs recordings of the same program differing only in the parameter");
            }
            if (oneOffs > limit) {
                throw new PredictionException("the traces do not align: more than " + limit + " allocations occur in one of "
                        + ref.recording.name() + " and " + other.recording.name() + " only (the last near "
                        + at(ref, Math.min(i, n - 1)) + ")");
            }
        }
        return oneOffs;
    }

    /** @return the next event after the allocation at {@code event}, passing over its free and frees of one-offs */
    private static int after(EventTrace t, int event, boolean[] skipped) {
        int ordinal = ordinal(t, event);
        int k = event + 1;
        while (k < t.events() && t.kind[k] == EventTrace.FREE && (t.ref[k] == ordinal || skipped[t.ref[k]])) {
            k++;
        }
        return k;
    }

    private static boolean matchesAfter(EventTrace a, int i, EventTrace b, int j, int[] pair) {
        return i < a.events() && j < b.events() ? match(a, i, b, j, pair) : i >= a.events() && j >= b.events();
    }

    private static String at(EventTrace t, int event) {
        return t.recording.name() + " event " + event + (event < t.events() ? " (" + t.describe(event) + ")" : " (end of trace)");
    }

    private static boolean match(EventTrace a, int i, EventTrace b, int j, int[] pair) {
        if (a.kind[i] != b.kind[j]) {
            return false;
        }
        if (a.kind[i] == EventTrace.ALLOC) {
            return a.ref[i] == b.ref[j];
        }
        return pair[a.ref[i]] == b.ref[j] && pair[a.ref[i]] >= 0;
    }

    static int ordinal(EventTrace t, int allocEvent) {
        return java.util.Arrays.binarySearch(t.allocEvent, allocEvent);
    }
}
