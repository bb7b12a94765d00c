package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.Kernels;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The gradient of an input sliced by narrows (the Transformer's q, k, v split off one projection): when the slices
 * tile it along one dimension their gradients are copied into one new tensor, as PyTorch's {@code SplitBackward}
 * concatenates them, with no zero fill, no additions and one tensor of the input's size; slices that overlap, leave
 * a gap or share the input with another use get the narrow rule's zeros and sums, with the same values. On device
 * memory behind opaque kernels, which count each launch.
 */
class SplitBackwardTest {
    private static final int B = 2;
    private static final int T = 5;
    private static final int C = 4;

    private OpaqueDevice backend;
    private CachingAllocator alloc;
    private OpaqueKernels.Counters counters;
    private Device dev;

    @BeforeEach
    void open() {
        backend = new OpaqueDevice(16L << 20);
        alloc = CachingAllocator.create(backend);
        counters = new OpaqueKernels.Counters();
        dev = Device.of(alloc).withKernels(OpaqueKernels.over(backend, Kernels.scalar(), new AtomicLong(), counters));
    }

    @AfterEach
    void close() {
        assertEquals(0, alloc.memoryAllocated(), "every gradient and temporary freed");
        alloc.close();
        backend.close();
    }

    private static float[] ramp(int n, float scale) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = scale * (i % 7 - 3);
        }
        return v;
    }

    /** Launches of zero fills: the narrow rule's zeros (a fill kernel or a byte fill). */
    private long fills() {
        Map<String, Long> k = counters.byKernel();
        return k.getOrDefault("fill", 0L) + k.getOrDefault("fillBytes", 0L);
    }

    /**
     * x [B, T, 3C] (float32, or rounded to {@code type}) times 2, sliced into {@code ranges} along the last dimension,
     * each slice times its own weights, the products summed into one [B, T, width] gradient-carrying output (by
     * adding them, all slices of one width). Returns x's gradient after a backward pass with an explicit gradient of
     * ones (made before the pass, so that the pass itself fills nothing but the narrow rule's zeros).
     */
    private float[] gradient(DType type, int[][] ranges, boolean alsoWhole, long[] fills) {
        int width = ranges[0][1];
        float[] expected = new float[B * T * 3 * C];
        try (MemoryScope s = MemoryScope.open()) {
            Tensor x32 = dev.tensor(ramp(B * T * 3 * C, 0.5f), B, T, 3 * C);
            Tensor x = (type == DType.FLOAT32 ? x32.detach() : x32.to(type)).requiresGrad(true);
            Tensor y = x.mul(2f);
            Tensor out = null;
            for (int p = 0; p < ranges.length; p++) {
                float[] w = ramp(B * T * width, 0.25f * (p + 1));
                Tensor wt = dev.tensor(w, B, T, width);
                Tensor term = y.narrow(2, ranges[p][0], width).mul(type == DType.FLOAT32 ? wt : wt.to(type));
                out = out == null ? term : out.add(term);
                for (int b = 0; b < B * T; b++) {
                    for (int j = 0; j < width; j++) {
                        expected[b * 3 * C + ranges[p][0] + j] += 2 * w[b * width + j];
                    }
                }
            }
            if (alsoWhole) {   // the input used whole too (its sum added to every output): not the slices' alone
                out = out.add(y.sum());
                for (int i = 0; i < expected.length; i++) {
                    expected[i] += 2 * B * T * width;
                }
            }
            Tensor ones = dev.full(out.dtype(), 1f, out.shape());
            long before = fills();
            out.backward(ones);
            fills[0] = fills() - before;
            float[] got = x.grad().toFloatArray();   // the weights are multiples of 1/4: exact in bfloat16 too
            assertArrayEquals(expected, got, type + " gradient of x");
            return got;
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"FLOAT32", "BFLOAT16"})
    void slicesThatTileTheInputAreConcatenatedWithoutZerosOrSums(DType type) {
        long[] tiled = new long[1];
        gradient(type, new int[][] {{4, C}, {0, C}, {8, C}}, false, tiled);   // any order along the dimension
        assertEquals(0, tiled[0], "no zero fill of the input's gradient");
        long[] gap = new long[1];
        gradient(type, new int[][] {{0, C}, {8, C}}, false, gap);             // a gap: the narrow rule
        assertEquals(2, gap[0], "the narrow rule zero-fills each slice's gradient");
    }

    @Test
    void overlappingSlicesAndAWholeUseGetTheSums() {
        long[] ignored = new long[1];
        gradient(DType.FLOAT32, new int[][] {{0, C}, {4, C}, {4, C}, {8, C}}, false, ignored);   // one range twice
        gradient(DType.FLOAT32, new int[][] {{0, C}, {4, C}, {8, C}}, true, ignored);            // plus whole uses
        gradient(DType.FLOAT32, new int[][] {{0, 6}, {6, 6}}, false, ignored);                    // halves
    }

    /** Launches of copies within device memory (the split's backward copying a slice's gradient into place). */
    private long copies() {
        return counters.byKernel().entrySet().stream()
                .filter(e -> e.getKey().startsWith("copy") && !e.getKey().equals("copyFromHost"))
                .mapToLong(Map.Entry::getValue).sum();
    }

    /**
     * The gradient of x through x * 2 split into heads as {@code CausalSelfAttention} splits its projection (narrow,
     * view, transpose; made contiguous first with {@code gather}) and the fused attention. Counts the copies the
     * backward pass launches into {@code copies[0]}.
     */
    private float[] attentionGradient(DType type, boolean gather, long[] copies) {
        int heads = 2;
        int d = C / heads;
        try (MemoryScope s = MemoryScope.open()) {
            Tensor x32 = dev.tensor(ramp(B * T * 3 * C, 0.5f), B, T, 3 * C);
            Tensor x = (type == DType.FLOAT32 ? x32.detach() : x32.to(type)).requiresGrad(true);
            Tensor qkv = x.mul(2f);
            Tensor[] in = new Tensor[3];
            for (int i = 0; i < 3; i++) {
                Tensor head = qkv.narrow(2, i * C, C).view(B, T, heads, d).transpose(1, 2);
                in[i] = gather ? head.contiguous() : head;
            }
            Tensor out = Functional.scaledDotProductAttention(in[0], in[1], in[2], true);
            Tensor w = dev.tensor(ramp(B * T * C, 0.25f), B, heads, T, d);
            Tensor loss = out.mul(type == DType.FLOAT32 ? w : w.to(type)).sum();
            long before = copies();
            loss.backward();
            copies[0] = copies() - before;
            return x.grad().toFloatArray();
        }
    }

    /**
     * The fused attention writes the gradients of heads split off one projection into one tensor laid out as the
     * projection, so the split's backward is a view of it: the backward pass copies nothing, where heads made
     * contiguous first get their gradients copied into place (PyTorch's {@code cat}), and the projection's gradient
     * is the same, bit for bit.
     */
    @ParameterizedTest
    @EnumSource(names = {"FLOAT32", "BFLOAT16"})
    void attentionGradientsOfHeadsSplitOffOneProjectionAreNotCopied(DType type) {
        long[] inPlace = new long[1];
        long[] gathered = new long[1];
        float[] direct = attentionGradient(type, false, inPlace);
        float[] viaCopies = attentionGradient(type, true, gathered);
        assertArrayEquals(viaCopies, direct, type + " gradient of the projection");
        assertEquals(0, inPlace[0], "copies in the backward pass of heads split off one projection");
        assertTrue(gathered[0] >= 3, "the split's backward copies the gradients of contiguous heads: " + gathered[0]);
    }

    /** Gradients lying side by side in one storage as the input would hold them become a view of it, not a copy. */
    @Test
    void splitBackwardViewsGradientsThatLieInPlace() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor whole = dev.tensor(ramp(2 * 3 * 6, 1f), 2, 3, 6);
            Tensor a = whole.narrow(2, 0, 2);
            Tensor b = whole.narrow(2, 2, 4);
            long before = counters.launches().get();
            Tensor viewed = BackwardOps.splitBackward(List.of(a, b), new int[] {2, 3, 6}, 2);
            assertEquals(before, counters.launches().get(), "nothing launched");
            assertTrue(viewed.storage == whole.storage && viewed.isContiguous(), "a contiguous view of the storage");
            assertArrayEquals(whole.toFloatArray(), viewed.toFloatArray());
            Tensor swapped = BackwardOps.splitBackward(List.of(b, a), new int[] {2, 3, 6}, 2);   // not where they lie
            assertTrue(swapped.storage != whole.storage, "copied");
            float[] w = whole.toFloatArray();
            float[] got = swapped.toFloatArray();
            for (int r = 0; r < 6; r++) {
                for (int j = 0; j < 6; j++) {
                    assertEquals(w[r * 6 + (j + 2) % 6], got[r * 6 + j], "row " + r + " column " + j);
                }
            }
        }
    }

    @Test
    void splitBackwardRefusesGradientsThatDoNotTileTheInput() {
        try (Tensor a = dev.zeros(2, 3); Tensor b = dev.zeros(2, 2)) {
            IllegalArgumentException gap = assertThrows(IllegalArgumentException.class,
                    () -> BackwardOps.splitBackward(List.of(a, b), new int[] {2, 6}, 1));
            assertTrue(gap.getMessage().contains("do not tile"), gap.getMessage());
            IllegalArgumentException shape = assertThrows(IllegalArgumentException.class,
                    () -> BackwardOps.splitBackward(List.of(a, b), new int[] {3, 5}, 1));
            assertTrue(shape.getMessage().contains("is not a slice of"), shape.getMessage());
        }
    }
}
