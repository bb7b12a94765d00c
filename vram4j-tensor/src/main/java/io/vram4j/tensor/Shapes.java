package io.vram4j.tensor;

import java.util.Arrays;

/** Shape and stride arithmetic. Shapes are {@code int[]} (each extent at least 0); strides and offsets count elements. */
final class Shapes {
    private Shapes() {
    }

    static long numel(int[] shape) {
        long n = 1;
        for (int d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    static int[] check(int[] shape) {
        for (int d : shape) {
            if (d < 0) {
                throw new IllegalArgumentException("negative extent in shape " + Arrays.toString(shape));
            }
        }
        numel(shape);
        return shape.clone();
    }

    static long[] contiguousStrides(int[] shape) {
        long[] s = new long[shape.length];
        long acc = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            s[i] = acc;
            acc *= Math.max(1, shape[i]);
        }
        return s;
    }

    static boolean isContiguous(int[] shape, long[] strides) {
        long expected = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            if (shape[i] != 1 && strides[i] != expected) {
                return false;
            }
            expected *= shape[i];
        }
        return true;
    }

    static int dim(int dim, int rank) {
        int d = dim < 0 ? dim + rank : dim;
        if (d < 0 || d >= rank) {
            throw new IndexOutOfBoundsException("dimension " + dim + " is out of range for a tensor of rank " + rank
                    + " (expected " + (rank == 0 ? "none" : "[" + (-rank) + ", " + (rank - 1) + "]") + ")");
        }
        return d;
    }

    /** Broadcasts two shapes with NumPy/PyTorch rules. */
    static int[] broadcast(int[] a, int[] b) {
        int rank = Math.max(a.length, b.length);
        int[] out = new int[rank];
        for (int i = 0; i < rank; i++) {
            int da = i < rank - a.length ? 1 : a[i - (rank - a.length)];
            int db = i < rank - b.length ? 1 : b[i - (rank - b.length)];
            if (da != db && da != 1 && db != 1) {
                throw new IllegalArgumentException("shapes " + Arrays.toString(a) + " and " + Arrays.toString(b)
                        + " cannot be broadcast (dimension " + i + ": " + da + " vs " + db + ")");
            }
            out[i] = da == 1 ? db : da;
        }
        return out;
    }

    /** Strides that view a tensor of {@code shape}/{@code strides} as {@code target} (broadcast; 0 on expanded dims). */
    static long[] broadcastStrides(int[] shape, long[] strides, int[] target) {
        int off = target.length - shape.length;
        if (off < 0) {
            throw new IllegalArgumentException("cannot expand shape " + Arrays.toString(shape) + " to " + Arrays.toString(target));
        }
        long[] s = new long[target.length];
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] == target[i + off]) {
                s[i + off] = strides[i];
            } else if (shape[i] == 1) {
                s[i + off] = 0;
            } else {
                throw new IllegalArgumentException("cannot expand shape " + Arrays.toString(shape) + " to "
                        + Arrays.toString(target) + " (dimension " + i + ": " + shape[i] + " is not 1)");
            }
        }
        return s;
    }

    /** Resolves one {@code -1} in a requested shape. */
    static int[] infer(int[] requested, long numel) {
        int[] s = requested.clone();
        int unknown = -1;
        long known = 1;
        for (int i = 0; i < s.length; i++) {
            if (s[i] == -1) {
                if (unknown >= 0) {
                    throw new IllegalArgumentException("only one dimension can be -1 in " + Arrays.toString(requested));
                }
                unknown = i;
            } else if (s[i] < 0) {
                throw new IllegalArgumentException("invalid extent " + s[i] + " in shape " + Arrays.toString(requested));
            } else {
                known = Math.multiplyExact(known, s[i]);
            }
        }
        if (unknown >= 0) {
            if (known == 0 || numel % known != 0) {
                throw new IllegalArgumentException("shape " + Arrays.toString(requested) + " is invalid for " + numel + " elements");
            }
            s[unknown] = Math.toIntExact(numel / known);
        }
        if (numel(s) != numel) {
            throw new IllegalArgumentException("shape " + Arrays.toString(requested) + " is invalid for " + numel + " elements");
        }
        return s;
    }

    /**
     * Strides for viewing ({@code shape}, {@code strides}) as {@code newShape} without copying, or null when
     * impossible (as PyTorch's {@code computeStride}).
     */
    static long[] viewStrides(int[] shape, long[] strides, int[] newShape) {
        long numel = numel(shape);
        long[] ns = new long[newShape.length];
        if (numel == 0 || shape.length == 0) {
            return contiguousStrides(newShape);
        }
        int viewD = newShape.length - 1;
        long chunkBase = strides.length == 0 ? 1 : strides[strides.length - 1];
        long tensorNumel = 1;
        long viewNumel = 1;
        for (int d = shape.length - 1; d >= 0; d--) {
            tensorNumel *= shape[d];
            if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensorNumel * chunkBase)) {
                while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1)) {
                    ns[viewD] = viewNumel * chunkBase;
                    viewNumel *= newShape[viewD];
                    viewD--;
                }
                if (viewNumel != tensorNumel) {
                    return null;
                }
                if (d > 0) {
                    chunkBase = strides[d - 1];
                    tensorNumel = 1;
                    viewNumel = 1;
                }
            }
        }
        if (viewD != -1) {
            return null;
        }
        return ns;
    }

    static String str(int[] shape) {
        return Arrays.toString(shape);
    }
}
