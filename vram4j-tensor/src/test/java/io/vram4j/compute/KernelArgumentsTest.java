package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every kernel of {@link Kernels}, called with one bad argument at a time, against every implementation
 * through the public entry points: the exception {@link Kernels} documents (naming the argument), thrown before
 * anything is written. And the completeness check, by reflection over {@link Kernels}' methods: every kernel is
 * in this test's table and is checked by {@link CheckedKernels} before the implementation behind it is reached.
 *
 * <p>A call is built from the table below: the parameter names of each kernel, in order, as its Javadoc gives
 * them; a segment marked {@code *} is written by the kernel, one marked {@code ?} may be null. The valid call
 * uses 3 for every int (sizes, leading dimensions), 9 for every other long (counts, batch strides), offset 1
 * for every segment and segments of 64 floats; {@code name=V} gives a size another valid value, {@code name~} marks
 * an int or long any value of which is valid (a seed), {@code name#} a segment of int64 indices, zeros in the valid
 * call, {@code name^} a segment of one float (which a segment of 2 floats holds at offset 1).
 */
class KernelArgumentsTest {

    private static final Map<String, String> SIGNATURES = Map.ofEntries(
            Map.entry("sgemm", "transA transB m n k alpha A aOff lda B bOff ldb beta C* cOff ldc"),
            Map.entry("sgemmBias", "transA transB m n k alpha A aOff lda B bOff ldb bias biasOff biasStride C* cOff ldc"),
            Map.entry("sgemmBatched", "batch transA transB m n k alpha A aOff lda strideA B bOff ldb strideB "
                    + "beta C* cOff ldc strideC"),
            Map.entry("add", "n a aOff b bOff out* outOff"),
            Map.entry("sub", "n a aOff b bOff out* outOff"),
            Map.entry("mul", "n a aOff b bOff out* outOff"),
            Map.entry("div", "n a aOff b bOff out* outOff"),
            Map.entry("axpy", "n alpha x xOff y* yOff"),
            Map.entry("scale", "n s x xOff out* outOff"),
            Map.entry("addScalar", "n s x xOff out* outOff"),
            Map.entry("fill", "n v out* outOff"),
            Map.entry("copy", "n src srcOff dst* dstOff"),
            Map.entry("fillBytes", "bytes value out* byteOff"),
            Map.entry("copyBytes", "bytes src srcByteOff dst* dstByteOff"),
            Map.entry("copyFromHost", "bytes src srcByteOff dst* dstByteOff"),
            Map.entry("floatToFp16", "n src srcOff dst* dstOff"),
            Map.entry("floatToBf16", "n src srcOff dst* dstOff"),
            Map.entry("fp16ToFloat", "n src srcOff dst* dstOff"),
            Map.entry("bf16ToFloat", "n src srcOff dst* dstOff"),
            Map.entry("neg", "n x xOff out* outOff"),
            Map.entry("exp", "n x xOff out* outOff"),
            Map.entry("log", "n x xOff out* outOff"),
            Map.entry("sqrt", "n x xOff out* outOff"),
            Map.entry("tanh", "n x xOff out* outOff"),
            Map.entry("sigmoid", "n x xOff out* outOff"),
            Map.entry("relu", "n x xOff out* outOff"),
            Map.entry("reluBackward", "n dy dyOff x xOff dx* dxOff"),
            Map.entry("gelu", "n x xOff out* outOff"),
            Map.entry("geluBackward", "n dy dyOff x xOff dx* dxOff"),
            Map.entry("unary16", "op=6 type=1 n x xOff out* outOff"),
            Map.entry("pointwiseBackward16", "op=1 type=0 n dy dyOff x xOff dx* dxOff"),
            Map.entry("binary16", "op type=1 d0=1 d1=1 d2=3 d3=3 a aOff as0=0 as1=0 as2=3 as3=1 b bOff bs0=0 bs1=0 "
                    + "bs2=3 bs3=1 out* outOff"),
            Map.entry("binaryMixed", "op type=0 half16=1 d0=1 d1=1 d2=3 d3=3 a aOff as0=0 as1=0 as2=3 as3=1 b bOff "
                    + "bs0=0 bs1=0 bs2=3 bs3=1 out* outOff"),
            Map.entry("sum", "n x xOff"),
            Map.entry("max", "n x xOff"),
            Map.entry("sumOfSquares", "n x xOff"),
            Map.entry("dot", "n x xOff y yOff"),
            Map.entry("anyNonFinite", "n x xOff"),
            Map.entry("softmaxRows", "rows cols x xOff out* outOff"),
            Map.entry("logSoftmaxRows", "rows cols x xOff out* outOff"),
            Map.entry("softmaxBackwardRows", "rows cols y yOff dy dyOff dx* dxOff"),
            Map.entry("logSoftmaxBackwardRows", "rows cols y yOff dy dyOff dx* dxOff"),
            Map.entry("layerNormRows", "rows cols x xOff gamma? gammaOff beta? betaOff eps out* outOff "
                    + "mean?* meanOff rstd?* rstdOff"),
            Map.entry("layerNormBackwardRows", "rows cols dy dyOff x xOff mean meanOff rstd rstdOff gamma? gammaOff "
                    + "dx?* dxOff dgamma?* dgammaOff dbeta?* dbetaOff"),
            Map.entry("attentionForward", "batchHeads t d scale causal q qOff k kOff v vOff out* outOff lse* lseOff"),
            Map.entry("attentionBackward", "batchHeads t d scale causal q qOff k kOff v vOff out outOff lse lseOff "
                    + "dout doutOff dq* dqOff dk* dkOff dv* dvOff"),
            Map.entry("attentionForwardStrided", "type=1 batchHeads heads=3 batchStride=9 headStride=9 rowStride=3 "
                    + "outBatchStride=27 outHeadStride=3 outRowStride=9 t d scale causal q qOff k kOff v vOff out* "
                    + "outOff lse* lseOff"),
            Map.entry("attentionBackwardStrided", "type=0 batchHeads heads=3 batchStride=9 headStride=9 rowStride=3 "
                    + "outBatchStride=27 outHeadStride=3 outRowStride=9 doutBatchStride=27 doutHeadStride=3 "
                    + "doutRowStride=9 gradBatchStride=27 gradHeadStride=3 gradRowStride=9 t d scale causal q qOff k "
                    + "kOff v vOff out outOff lse lseOff dout doutOff dq* dqOff dk* dkOff dv* dvOff"),
            // device paths
            Map.entry("copy4", "d0=1 d1=1 d2=3 d3=3 src srcOff s0=0 s1=0 s2=3 s3=1 dst* dstOff t0=0 t1=0 t2=1 t3=3"),
            Map.entry("copy16", "d0=1 d1=1 d2=3 d3=3 src srcOff s0=0 s1=0 s2=3 s3=1 dst* dstOff t0=0 t1=0 t2=1 t3=3"),
            Map.entry("binary4", "op d0=1 d1=1 d2=3 d3=3 a aOff as0=0 as1=0 as2=3 as3=1 b bOff bs0=0 bs1=0 bs2=0 bs3=1 "
                    + "out* outOff"),
            Map.entry("sumDim", "outer n inner x xOff out* outOff"),
            Map.entry("sumDim16", "type=1 outer n inner x xOff out* outOff"),
            Map.entry("sumDimTo16", "type=1 outer n inner x xOff out* outOff"),
            Map.entry("maxDim", "outer n inner x xOff values?* valuesOff indices* indicesOff"),
            Map.entry("dropout", "n p scale seed~ x xOff out* outOff mask* maskOff"),
            Map.entry("dropoutBackward", "n scale dy dyOff mask maskOff dx* dxOff"),
            Map.entry("nllLoss", "n c ignoreIndex~ logp logpOff targets# targetsOff out*^ outOff"),
            Map.entry("nllLossBackward", "n c ignoreIndex~ g^ gOff targets# targetsOff dlogp* dlogpOff"),
            Map.entry("embedding", "count rows cols weight weightOff idx# idxOff out* outOff"),
            Map.entry("embeddingBackward", "count rows cols g gOff idx# idxOff dweight* dweightOff"),
            Map.entry("maskUpper", "mats=2 t s fill x xOff out* outOff"),
            Map.entry("iota", "n out* outOff"),
            Map.entry("gemmBatched16", "bf16 batch transA transB m n k alpha A aOff lda strideA B bOff ldb strideB "
                    + "beta C* cOff ldc strideC"),
            Map.entry("gemmBatched16Bias", "bf16 batch transA transB m n k alpha A aOff lda strideA B bOff ldb strideB "
                    + "bias biasOff biasStride C* cOff ldc strideC"),
            // fused optimizers: tensor lists
            Map.entry("sgdMulti", "count sizes params* grads bufs* lr momentum weightDecay nesterov first"),
            Map.entry("adamwMulti", "count sizes params* grads ms* vs* beta1 beta2 eps decay stepSize bc2Sqrt"));

    private static final int SEGMENT_FLOATS = 64;

    /** One parameter of a kernel, as the table names it. */
    record Param(String name, Class<?> type, boolean output, boolean optional, boolean offset, Long valid,
                 boolean anyValue, boolean indices, boolean single) {
    }

    /** How a call is spoiled: the argument it changes, the value it gets, what the kernel must do. */
    record Bad(int index, String what, Object value, Class<? extends RuntimeException> expected) {
    }

    /**
     * The kernels of the interface: its methods that take memory (name, threads, withThreads do not), abstract or
     * with a default for host memory (the byte fills and copies).
     */
    static List<Method> kernels() {
        return Arrays.stream(Kernels.class.getMethods())
                .filter(m -> Modifier.isAbstract(m.getModifiers()) || m.isDefault())
                .filter(m -> Arrays.asList(m.getParameterTypes()).contains(MemorySegment.class)
                        || Arrays.asList(m.getParameterTypes()).contains(MemorySegment[].class))
                .sorted((a, b) -> a.getName().compareTo(b.getName()))
                .toList();
    }

    static List<Param> params(Method kernel) {
        String sig = SIGNATURES.get(kernel.getName());
        assertNotNull(sig, kernel.getName() + " is a kernel of Kernels but not in this test's table");
        String[] names = sig.split(" ");
        Class<?>[] types = kernel.getParameterTypes();
        assertEquals(types.length, names.length, kernel.getName() + ": parameters in the table");
        List<Param> ps = new ArrayList<>();
        for (int i = 0; i < types.length; i++) {
            String[] nameValue = names[i].split("=");
            String name = nameValue[0].replaceAll("[*?~#^]", "");
            boolean offset = types[i] == long.class && i > 0 && types[i - 1] == MemorySegment.class;
            ps.add(new Param(name, types[i], names[i].contains("*"), names[i].contains("?"), offset,
                    nameValue.length > 1 ? Long.valueOf(nameValue[1]) : null, names[i].contains("~"),
                    names[i].contains("#"), names[i].contains("^")));
        }
        return ps;
    }

    /** Every way to spoil one argument of {@code kernel}, one at a time. */
    static List<Bad> spoilers(List<Param> ps, Arena arena) {
        List<Bad> bad = new ArrayList<>();
        for (int i = 0; i < ps.size(); i++) {
            Param p = ps.get(i);
            if (p.type() == MemorySegment.class) {
                bad.add(new Bad(i, p.name() + " = null", null, p.optional() ? null : NullPointerException.class));
                bad.add(new Bad(i, p.name() + " of " + (p.single() ? 1 : 2) + " floats",
                        arena.allocate((p.single() ? 1 : 2) * Float.BYTES), IndexOutOfBoundsException.class));
                bad.add(new Bad(i, p.name() + " read-only",
                        (p.indices() ? arena.allocate(SEGMENT_FLOATS * 4L, 64) : segment(arena, i)).asReadOnly(),
                        p.output() ? IllegalArgumentException.class : null));
            } else if (p.type() == MemorySegment[].class) {
                bad.add(new Bad(i, p.name() + " = null", null, NullPointerException.class));
                MemorySegment[] nulled = list(arena, i);
                nulled[1] = null;
                bad.add(new Bad(i, p.name() + "[1] = null", nulled, NullPointerException.class));
                MemorySegment[] small = list(arena, i);
                small[1] = arena.allocate(2 * Float.BYTES);
                bad.add(new Bad(i, p.name() + "[1] of 2 floats", small, IndexOutOfBoundsException.class));
                MemorySegment[] readOnly = list(arena, i);
                readOnly[2] = readOnly[2].asReadOnly();
                bad.add(new Bad(i, p.name() + "[2] read-only", readOnly, p.output() ? IllegalArgumentException.class : null));
            } else if (p.type() == long[].class) {
                bad.add(new Bad(i, p.name() + " = null", null, NullPointerException.class));
                bad.add(new Bad(i, p.name() + "[0] = -1", new long[] {-1, 9, 9}, IllegalArgumentException.class));
            } else if (p.offset()) {
                bad.add(new Bad(i, p.name() + " = -1", -1L, IndexOutOfBoundsException.class));
                bad.add(new Bad(i, p.name() + " = 2^62", 1L << 62, IndexOutOfBoundsException.class));
            } else if ((p.type() == int.class || p.type() == long.class) && !p.anyValue()) {
                bad.add(new Bad(i, p.name() + " = -1", p.type() == int.class ? (Object) (-1) : (Object) (-1L),
                        IllegalArgumentException.class));
                if (p.name().startsWith("ld")) {
                    bad.add(new Bad(i, p.name() + " = 2 (< 3 columns)", 2, IllegalArgumentException.class));
                }
            }
        }
        return bad;
    }

    /** The arguments of a call that every implementation accepts. */
    static Object[] validArgs(List<Param> ps, Arena arena) {
        Object[] args = new Object[ps.size()];
        for (int i = 0; i < args.length; i++) {
            Param p = ps.get(i);
            args[i] = p.type() == MemorySegment[].class ? list(arena, i)
                    : p.type() == long[].class ? new long[] {9, 9, 9}
                    : p.type() == MemorySegment.class ? (p.indices() ? arena.allocate(SEGMENT_FLOATS * 4L, 64)
                            : segment(arena, i))
                    : p.offset() ? 1L
                    : p.valid() != null ? (p.type() == int.class ? (Object) p.valid().intValue() : (Object) p.valid())
                    : p.type() == long.class ? 9L
                    : p.type() == int.class ? 3
                    : p.type() == float.class ? 0.5f
                    : p.type() == byte.class ? (byte) 7
                    : false;
        }
        return args;
    }

    /** A tensor list: 3 segments of 64 random floats (a valid {@code count} is 3, each size 9). */
    static MemorySegment[] list(Arena arena, int seed) {
        return new MemorySegment[] {segment(arena, 100 * seed), segment(arena, 100 * seed + 1),
                segment(arena, 100 * seed + 2)};
    }

    /** 64 random floats in [-1, 1), different for each argument position. */
    static MemorySegment segment(Arena arena, int seed) {
        MemorySegment s = arena.allocate((long) SEGMENT_FLOATS * Float.BYTES, 64);
        SplittableRandom rnd = new SplittableRandom(seed);
        for (int i = 0; i < SEGMENT_FLOATS; i++) {
            s.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (rnd.nextDouble() * 2 - 1));
        }
        return s;
    }

    static Stream<Kernels> implementations() {
        assertTrue(Kernels.vectorAvailable(), "the tests run with --add-modules jdk.incubator.vector (pom.xml)");
        return Stream.of(Kernels.scalar(), Kernels.vector(), Kernels.vector().withThreads(2));
    }

    /** Calls {@code kernel} on {@code k}; returns what it threw, or null. */
    static RuntimeException call(Kernels k, Method kernel, Object[] args) {
        try {
            kernel.invoke(k, args);
            return null;
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof RuntimeException r) {
                return r;
            }
            throw new AssertionError(kernel.getName() + " threw " + e.getCause(), e.getCause());
        } catch (IllegalAccessException e) {
            throw new AssertionError(e);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void everyKernelRefusesEveryBadArgumentBeforeWriting(Kernels k) {
        int refused = 0;
        for (Method kernel : kernels()) {
            List<Param> ps = params(kernel);
            try (Arena arena = Arena.ofConfined()) {
                assertNull(call(k, kernel, validArgs(ps, arena)), kernel.getName() + " with valid arguments");
                for (Bad bad : spoilers(ps, arena)) {
                    Object[] args = validArgs(ps, arena);
                    args[bad.index()] = bad.value();
                    List<byte[]> before = contents(args);
                    RuntimeException thrown = call(k, kernel, args);
                    String where = k.name() + "." + kernel.getName() + " with " + bad.what();
                    if (bad.expected() == null) {
                        assertNull(thrown, where + " is allowed");
                        continue;
                    }
                    assertInstanceOf(bad.expected(), thrown, where);
                    assertTrue(names(thrown.getMessage(), blamed(ps, bad.index())),
                            where + ": the message names the argument: " + thrown.getMessage());
                    List<byte[]> after = contents(args);
                    for (int i = 0; i < before.size(); i++) {
                        assertArrayEquals(before.get(i), after.get(i), where + ": a segment was written");
                    }
                    refused++;
                }
            }
        }
        // 32 kernels, 3 ways to spoil each segment and 2 each offset: a guard against an empty table
        assertTrue(refused > 300, "refused calls: " + refused);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void aStrideReachingBeyondALongIsRefusedNamingIt(Kernels k) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = segment(arena, 1);
            MemorySegment dst = segment(arena, 2);
            byte[] before = dst.toArray(ValueLayout.JAVA_BYTE);
            IndexOutOfBoundsException copy = assertThrows(IndexOutOfBoundsException.class, () -> k.copy4(1, 1, 3, 3,
                    src, 0, 0, 0, 1L << 62, 1, dst, 0, 0, 0, 3, 1));
            assertTrue(names(copy.getMessage(), "s2"), copy.getMessage());
            IndexOutOfBoundsException binary = assertThrows(IndexOutOfBoundsException.class, () -> k.binary4(0,
                    1, 1, 3, 3, src, 0, 0, 0, 3, 1, src, 0, 0, 0, 0, 1L << 62, dst, 0));
            assertTrue(names(binary.getMessage(), "bs3"), binary.getMessage());
            assertArrayEquals(before, dst.toArray(ValueLayout.JAVA_BYTE), "dst was written");
        }
    }

    /**
     * The 16-bit attention writes its output, and its backward the gradients, in a layout of their own: one whose
     * elements share addresses (rows closer than a row's length, heads at one place) would have threads race on them,
     * so it is refused, naming the result, before anything is written; PyTorch's [batch, t, heads, d] and a contiguous
     * layout pass.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void anAttentionResultLayoutWhoseElementsOverlapIsRefused(Kernels k) {
        int bh = 4;
        int heads = 2;
        int t = 3;
        int d = 4;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment in = segment(arena, 1);
            MemorySegment lse = segment(arena, 2);
            MemorySegment[] res = {segment(arena, 3), segment(arena, 4), segment(arena, 5)};
            long[][] overlapping = {{t * heads * d, d, 1}, {t * d, 0, d}, {0, t * d, d}};
            for (long[] o : overlapping) {
                byte[] before = res[0].toArray(ValueLayout.JAVA_BYTE);
                IllegalArgumentException f = assertThrows(IllegalArgumentException.class, () ->
                        k.attentionForwardStrided(Kernels.BFLOAT16, bh, heads, 2L * t * d, t * d, d, o[0], o[1], o[2], t,
                                d, 0.5f, true, in, 0, in, 0, in, 0, res[0], 0, lse, 0), Arrays.toString(o));
                assertTrue(names(f.getMessage(), "out"), f.getMessage());
                IllegalArgumentException b = assertThrows(IllegalArgumentException.class, () ->
                        k.attentionBackwardStrided(Kernels.FLOAT16, bh, heads, 2L * t * d, t * d, d, 2L * t * d, t * d,
                                d, 2L * t * d, t * d, d, o[0], o[1], o[2], t, d, 0.5f, true, in, 0, in, 0, in, 0, in, 0,
                                lse, 0, in, 0, res[0], 0, res[1], 0, res[2], 0), Arrays.toString(o));
                assertTrue(names(b.getMessage(), "dq"), b.getMessage());
                assertArrayEquals(before, res[0].toArray(ValueLayout.JAVA_BYTE), "nothing written");
            }
            long[][] fine = {{t * heads * d, d, heads * d}, {2L * t * d, t * d, d}};
            for (long[] o : fine) {
                k.attentionForwardStrided(Kernels.BFLOAT16, bh, heads, 2L * t * d, t * d, d, o[0], o[1], o[2], t, d, 0.5f,
                        true, in, 0, in, 0, in, 0, res[0], 0, lse, 0);
            }
        }
    }

    /** The argument a message must name: the segment for its offset, else the argument itself. */
    private static String blamed(List<Param> ps, int index) {
        return ps.get(index).offset() ? ps.get(index - 1).name() : ps.get(index).name();
    }

    /** Whether {@code message} begins with {@code name} as a word: "x", "x: ...", "x must ...", "lda = ...". */
    private static boolean names(String message, String name) {
        return message != null && (message.equals(name) || message.startsWith(name + ":")
                || message.startsWith(name + " "));
    }

    private static List<byte[]> contents(Object[] args) {
        List<byte[]> c = new ArrayList<>();
        for (Object a : args) {
            if (a instanceof MemorySegment s) {
                c.add(s.toArray(ValueLayout.JAVA_BYTE));
            } else if (a instanceof MemorySegment[] l) {
                for (MemorySegment s : l) {
                    c.add(s == null ? new byte[0] : s.toArray(ValueLayout.JAVA_BYTE));
                }
            }
        }
        return c;
    }

    // ------------------------------------------------------------------------------------------------ completeness

    @Test
    void everyKernelOfTheInterfaceIsInTheTableAndNothingElse() {
        TreeSet<String> names = new TreeSet<>();
        for (Method kernel : kernels()) {
            params(kernel);
            names.add(kernel.getName());
        }
        assertEquals(new TreeSet<>(SIGNATURES.keySet()), names);
    }

    /** An implementation that only counts the calls that reach it. */
    private static Kernels counting(AtomicInteger calls) {
        return (Kernels) Proxy.newProxyInstance(Kernels.class.getClassLoader(), new Class<?>[] {Kernels.class},
                (proxy, method, args) -> {
                    if (method.getDeclaringClass() == Object.class) {
                        return method.getName().equals("toString") ? "counting" : method.invoke(calls, args);
                    }
                    calls.incrementAndGet();
                    Class<?> r = method.getReturnType();
                    return r == float.class ? 0f : r == boolean.class ? false : r == int.class ? 1
                            : r == Kernels.class ? proxy : r == String.class ? "counting" : null;
                });
    }

    @Test
    void theCheckingLayerChecksEveryKernelBeforeTheImplementationRunsIt() {
        AtomicInteger calls = new AtomicInteger();
        Kernels checked = CheckedKernels.of(counting(calls));
        for (Method kernel : kernels()) {
            List<Param> ps = params(kernel);
            try (Arena arena = Arena.ofConfined()) {
                assertNull(call(checked, kernel, validArgs(ps, arena)));
                assertEquals(1, calls.getAndSet(0), kernel.getName() + ": a valid call reaches the implementation");
                for (Bad bad : spoilers(ps, arena)) {
                    Object[] args = validArgs(ps, arena);
                    args[bad.index()] = bad.value();
                    RuntimeException thrown = call(checked, kernel, args);
                    String where = kernel.getName() + " with " + bad.what();
                    if (bad.expected() == null) {
                        assertNull(thrown, where);
                        assertEquals(1, calls.getAndSet(0), where + " reaches the implementation");
                    } else {
                        assertInstanceOf(bad.expected(), thrown, where);
                        assertEquals(0, calls.get(), where + " reached the implementation");
                    }
                }
            }
        }
        assertThrows(IllegalArgumentException.class, () -> checked.withThreads(0));
        assertEquals(0, calls.get(), "withThreads(0) reached the implementation");
    }

    @Test
    void thePublicEntryPointsHandOutCheckedKernels() {
        assertInstanceOf(CheckedKernels.class, Kernels.scalar());
        assertInstanceOf(CheckedKernels.class, Kernels.best());
        assertInstanceOf(CheckedKernels.class, Kernels.vector());
        assertInstanceOf(CheckedKernels.class, Kernels.vector().withThreads(Kernels.vector().threads() + 1));
        assertInstanceOf(CheckedKernels.class, Kernels.scalar().withThreads(4));
        assertSame(Kernels.vector(), Kernels.vector().withThreads(Kernels.vector().threads()));
        Kernels k = Kernels.vector();
        assertSame(k, CheckedKernels.of(k), "wrapping twice checks twice");
        if (!(k instanceof CheckedKernels c) || c.unchecked() instanceof CheckedKernels) {
            fail("the vector kernels are wrapped once: " + k);
        }
    }
}
