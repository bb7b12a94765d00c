package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** Argument checks shared by every kernel implementation, done before any memory is written. */
final class Checks {

    private Checks() {
    }

    static void nonNegative(long v, String name) {
        if (v < 0) {
            throw new IllegalArgumentException(name + " must be >= 0, got " + v);
        }
    }

    /** Checks that floats {@code [off, off + n)} lie inside {@code seg}. */
    static void range(MemorySegment seg, long off, long n, String name) {
        range(seg, off, n, name, Float.BYTES, "floats");
    }

    /** Checks that elements {@code [off, off + n)} of {@code bytes} bytes each lie inside {@code seg}. */
    static void range(MemorySegment seg, long off, long n, String name, int bytes, String unit) {
        Objects.requireNonNull(seg, name);
        if (!fits(seg, off, n, bytes)) {
            throw new IndexOutOfBoundsException(name + ": " + unit + " [" + off + ", " + off + " + " + n
                    + ") do not fit a segment of " + seg.byteSize() + " bytes");
        }
    }

    /** @return whether elements {@code [off, off + n)} of {@code bytes} bytes each lie inside {@code seg} */
    private static boolean fits(MemorySegment seg, long off, long n, int bytes) {
        return off >= 0 && n >= 0 && n <= (Long.MAX_VALUE >> 3) && off <= (Long.MAX_VALUE >> 3) - n
                && (off + n) * bytes <= seg.byteSize();
    }

    /**
     * Checks a conversion of {@code n} elements between floats and 16-bit values: {@code toHalf} says which side
     * holds the 16-bit ones; {@code dst} is the output.
     */
    static void convert(long n, boolean toHalf, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        nonNegative(n, "n");
        range(src, srcOff, n, "src", toHalf ? Float.BYTES : Short.BYTES, toHalf ? "floats" : "16-bit values");
        range(dst, dstOff, n, "dst", toHalf ? Short.BYTES : Float.BYTES, toHalf ? "16-bit values" : "floats");
        writable(dst, "dst");
    }

    /** Checks the op code (0 to {@code lastOp}) and element type code of a 16-bit element-wise kernel. */
    static void half16(String kernel, int op, int lastOp, int type) {
        if (op < 0 || op > lastOp) {
            throw new IllegalArgumentException("op " + op + " is not one of 0.." + lastOp + " (" + kernel + ")");
        }
        if (type != Kernels.FLOAT16 && type != Kernels.BFLOAT16) {
            throw new IllegalArgumentException("type " + type + " is neither FLOAT16 (0) nor BFLOAT16 (1) (" + kernel + ")");
        }
    }

    /** Checks a range of {@code n} floats unless {@code seg} is null (an optional argument). */
    static void optionalRange(MemorySegment seg, long off, long n, String name) {
        if (seg != null) {
            range(seg, off, n, name);
        }
    }

    /** Checks a row-major matrix of {@code rows x cols} with row stride {@code ld}. */
    static void matrix(MemorySegment seg, long off, int rows, int cols, int ld, String name) {
        matrix(seg, off, rows, cols, ld, name, Float.BYTES);
    }

    /** As {@link #matrix(MemorySegment, long, int, int, int, String)} for elements of {@code bytes} bytes (4 or 2). */
    static void matrix(MemorySegment seg, long off, int rows, int cols, int ld, String name, int bytes) {
        if (ld < Math.max(1, cols)) {
            throw new IllegalArgumentException("ld" + name.toLowerCase() + " = " + ld + " < max(1, " + cols + ")");
        }
        if (rows == 0 || cols == 0) {
            Objects.requireNonNull(seg, name);
            return;
        }
        range(seg, off, (long) (rows - 1) * ld + cols, name, bytes, bytes == Float.BYTES ? "floats" : "16-bit values");
    }

    /** Validates sgemm arguments; returns normally when they are consistent and in range. */
    static void gemm(boolean transA, boolean transB, int m, int n, int k,
                     MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                     MemorySegment c, long cOff, int ldc) {
        gemm(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc, Float.BYTES);
    }

    private static void gemm(boolean transA, boolean transB, int m, int n, int k,
                             MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                             MemorySegment c, long cOff, int ldc, int bytes) {
        nonNegative(m, "m");
        nonNegative(n, "n");
        nonNegative(k, "k");
        matrix(a, aOff, transA ? k : m, transA ? m : k, lda, "A", bytes);
        matrix(b, bOff, transB ? n : k, transB ? k : n, ldb, "B", bytes);
        matrix(c, cOff, m, n, ldc, "C", bytes);
        writable(c, "C");
    }

    /** Validates sgemmBatched arguments (the first and last matrix of each batch operand). */
    static void gemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k,
                            MemorySegment a, long aOff, int lda, long strideA,
                            MemorySegment b, long bOff, int ldb, long strideB,
                            MemorySegment c, long cOff, int ldc, long strideC) {
        gemmBatched(batch, transA, transB, m, n, k, a, aOff, lda, strideA, b, bOff, ldb, strideB, c, cOff, ldc, strideC,
                Float.BYTES);
    }

    /** As {@link #gemmBatched} for matrices of elements of {@code bytes} bytes (4, or 2 for float16/bfloat16). */
    static void gemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k,
                            MemorySegment a, long aOff, int lda, long strideA,
                            MemorySegment b, long bOff, int ldb, long strideB,
                            MemorySegment c, long cOff, int ldc, long strideC, int bytes) {
        nonNegative(batch, "batch");
        nonNegative(strideA, "strideA");
        nonNegative(strideB, "strideB");
        nonNegative(strideC, "strideC");
        gemm(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, c, cOff, ldc, bytes);
        if (batch > 1) {
            if (strideC == 0 && m > 0 && n > 0) {
                throw new IllegalArgumentException("strideC must be > 0 when batch > 1");
            }
            long last = batch - 1L;
            gemm(transA, transB, m, n, k, a, aOff + last * strideA, lda, b, bOff + last * strideB, ldb,
                    c, cOff + last * strideC, ldc, bytes);
        }
    }

    /** Checks that an output segment (if not null) may be written. */
    static void writable(MemorySegment s, String name) {
        if (s != null && s.isReadOnly()) {
            throw new IllegalArgumentException(name + " is a read-only segment");
        }
    }

    /** Checks {@code n >= 0} and one range of {@code n} floats. */
    static void range1(long n, MemorySegment x, long xOff, String xName) {
        nonNegative(n, "n");
        range(x, xOff, n, xName);
    }

    /** Checks {@code n >= 0} and two ranges of {@code n} floats; the second is an output. */
    static void range2(long n, MemorySegment x, long xOff, String xName, MemorySegment y, long yOff, String yName) {
        nonNegative(n, "n");
        range(x, xOff, n, xName);
        range(y, yOff, n, yName);
        writable(y, yName);
    }

    /** Checks {@code n >= 0} and three ranges of {@code n} floats; the third is an output. */
    static void range3(long n, MemorySegment x, long xOff, String xName, MemorySegment y, long yOff, String yName,
                       MemorySegment z, long zOff, String zName) {
        nonNegative(n, "n");
        range(x, xOff, n, xName);
        range(y, yOff, n, yName);
        range(z, zOff, n, zName);
        writable(z, zName);
    }

    /** Checks a row kernel's sizes and its two {@code rows x cols} operands. */
    static void rows(int rows, int cols, MemorySegment x, long xOff, String xName,
                     MemorySegment y, long yOff, String yName) {
        rows(rows, cols);
        long n = (long) rows * cols;
        range(x, xOff, n, xName);
        range(y, yOff, n, yName);
    }

    static void rows(int rows, int cols) {
        nonNegative(rows, "rows");
        nonNegative(cols, "cols");
    }

    // ------------------------------------------------------------------------------------------------ device paths

    /** Checks {@code n} int64 indices of {@code seg} from {@code off}. */
    static void longs(MemorySegment seg, long off, long n, String name) {
        range(seg, off, n, name, Long.BYTES, "int64 values");
    }

    /** Checks {@code n} bytes (mask elements) of {@code seg} from {@code off}. */
    static void bytes(MemorySegment seg, long off, long n, String name) {
        range(seg, off, n, name, 1, "bytes");
    }

    /** Checks four extents; @return their product */
    static long extents4(int d0, int d1, int d2, int d3) {
        nonNegative(d0, "d0");
        nonNegative(d1, "d1");
        nonNegative(d2, "d2");
        nonNegative(d3, "d3");
        return (long) d0 * d1 * d2 * d3;
    }

    /**
     * Checks a strided operand of extents {@code d0..d3} (already checked): its strides are at least 0 and every
     * element it reaches lies in {@code seg}.
     */
    static void strided4(int d0, int d1, int d2, int d3, MemorySegment seg, long off, String name,
                         long s0, long s1, long s2, long s3, String strideName) {
        strided4(d0, d1, d2, d3, seg, off, name, s0, s1, s2, s3, strideName, Float.BYTES);
    }

    /** As {@link #strided4(int, int, int, int, MemorySegment, long, String, long, long, long, long, String)} for elements of {@code bytes} bytes. */
    static void strided4(int d0, int d1, int d2, int d3, MemorySegment seg, long off, String name,
                         long s0, long s1, long s2, long s3, String strideName, int bytes) {
        long[] s = {s0, s1, s2, s3};
        int[] d = {d0, d1, d2, d3};
        long reach = 0;
        for (int i = 0; i < 4; i++) {
            nonNegative(s[i], strideName + i);
            try {
                reach = Math.addExact(reach, Math.multiplyExact(Math.max(d[i] - 1L, 0), s[i]));
            } catch (ArithmeticException e) {
                throw new IndexOutOfBoundsException(strideName + i + " = " + s[i] + ": the elements of " + name
                        + " it reaches lie beyond any segment");
            }
        }
        range(seg, off, (long) d0 * d1 * d2 * d3 == 0 ? 0 : reach + 1, name, bytes,
                bytes == Float.BYTES ? "floats" : "16-bit values");
    }

    /** Checks a contiguous {@code [outer, n, inner]} block and an output of {@code outer * inner} floats. */
    static long dims3(int outer, int n, int inner, MemorySegment x, long xOff) {
        nonNegative(outer, "outer");
        nonNegative(n, "n");
        nonNegative(inner, "inner");
        range(x, xOff, (long) outer * n * inner, "x");
        return (long) outer * inner;
    }

    // ------------------------------------------------------------------------------------------------ tensor lists

    /** Checks a fused optimizer's count and sizes: {@code 0 <= count <= sizes.length}, every size at least 0. */
    static void tensorList(int count, long[] sizes) {
        nonNegative(count, "count");
        Objects.requireNonNull(sizes, "sizes");
        if (count > sizes.length) {
            throw new IllegalArgumentException("count = " + count + " > " + sizes.length + " sizes");
        }
        for (int i = 0; i < count; i++) {
            if (sizes[i] < 0) {
                throw new IllegalArgumentException("sizes: [" + i + "] = " + sizes[i] + " < 0");
            }
        }
    }

    /** Checks {@code count} segments of a tensor list, each holding at least {@code sizes[i]} floats. */
    static void tensors(int count, long[] sizes, MemorySegment[] segs, String name, boolean output) {
        Objects.requireNonNull(segs, name);
        if (count > segs.length) {
            throw new IllegalArgumentException(name + ": " + segs.length + " segments for count = " + count);
        }
        for (int i = 0; i < count; i++) {
            MemorySegment s = segs[i];
            // the label is made only for a failing entry: fused optimizers check every parameter on every step
            if (s == null || !fits(s, 0, sizes[i], Float.BYTES) || (output && s.isReadOnly())) {
                String label = name + ": [" + i + "]";
                range(s, 0, sizes[i], label);
                writable(s, label);
            }
        }
    }
}
