package io.vram4j.tensor;

/**
 * Walks a shape in row-major order over several operands, each with its own strides and base offset (in
 * elements), one innermost row at a time. Dimensions of extent 1 are dropped and adjacent dimensions that
 * are contiguous for every operand are merged, so contiguous operands come as one long row, which the
 * body can hand to a vector kernel.
 */
final class StridedLoop {
    /** Receives one row: the operands' offsets of its first element (read-only, reused), its length, and each operand's stride along it. */
    interface Body {
        void row(long[] offsets, long length, long[] strides);
    }

    private StridedLoop() {
    }

    /**
     * Folds a shape walked by several operands: dimensions of extent 1 are dropped and a dimension is merged into
     * the one after it when every operand is contiguous across them.
     *
     * @param dims receives the folded extents (at least {@code shape.length} entries)
     * @param st receives each operand's folded strides
     * @return the folded rank, or -1 when an extent is 0 (nothing to walk)
     */
    static int fold(int[] shape, long[][] strides, long[] dims, long[][] st) {
        int ops = strides.length;
        int r = 0;
        for (int d = 0; d < shape.length; d++) {
            if (shape[d] == 0) {
                return -1;
            }
            if (shape[d] == 1) {
                continue;
            }
            dims[r] = shape[d];
            for (int o = 0; o < ops; o++) {
                st[o][r] = strides[o][d];
            }
            r++;
        }
        // merge dimension i into i+1 when every operand is contiguous across them
        int w = 0;
        for (int i = 0; i < r; i++) {
            if (w > 0) {
                boolean merge = true;
                for (int o = 0; o < ops && merge; o++) {
                    merge = st[o][w - 1] == st[o][i] * dims[i];
                }
                if (merge) {
                    dims[w - 1] *= dims[i];
                    for (int o = 0; o < ops; o++) {
                        st[o][w - 1] = st[o][i];
                    }
                    continue;
                }
            }
            dims[w] = dims[i];
            for (int o = 0; o < ops; o++) {
                st[o][w] = st[o][i];
            }
            w++;
        }
        return w;
    }

    static void run(int[] shape, long[][] strides, long[] base, Body body) {
        int ops = base.length;
        long[] dims = new long[shape.length];
        long[][] st = new long[ops][shape.length];
        int r = fold(shape, strides, dims, st);
        if (r < 0) {
            return;
        }
        long[] offs = base.clone();
        long[] inner = new long[ops];
        if (r == 0) {
            body.row(offs, 1, inner);
            return;
        }
        for (int o = 0; o < ops; o++) {
            inner[o] = st[o][r - 1];
        }
        long len = dims[r - 1];
        int outer = r - 1;
        long[] idx = new long[Math.max(outer, 1)];
        while (true) {
            body.row(offs, len, inner);
            int d = outer - 1;
            while (d >= 0) {
                idx[d]++;
                for (int o = 0; o < ops; o++) {
                    offs[o] += st[o][d];
                }
                if (idx[d] < dims[d]) {
                    break;
                }
                for (int o = 0; o < ops; o++) {
                    offs[o] -= st[o][d] * dims[d];
                }
                idx[d] = 0;
                d--;
            }
            if (d < 0) {
                return;
            }
        }
    }
}
