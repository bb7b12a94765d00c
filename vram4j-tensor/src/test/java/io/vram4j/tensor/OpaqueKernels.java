package io.vram4j.tensor;

import io.vram4j.compute.Kernels;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Kernels for an {@link OpaqueDevice}, standing in for a GPU's: every {@link MemorySegment} argument over opaque
 * addresses (device memory, as the tensor ops hand it to kernels) is replaced by the host bytes that back it
 * ({@link OpaqueDevice#mirror}), and the call goes to the given host kernels. The tensor ops themselves never
 * see those host bytes, so any op that reads or writes device memory from Java instead of through a kernel
 * crashes the JVM, as it would on a GPU.
 */
public final class OpaqueKernels {
    private OpaqueKernels() {
    }

    /**
     * What the kernels were asked to do on device memory.
     *
     * @param launches calls given at least one device segment (one kernel launch each on a GPU)
     * @param valueReads of those, the calls that return a value to Java ({@code sum}, {@code max},
     *     {@code anyNonFinite}...): on a GPU each waits for the stream and copies the value to the host
     * @param byKernel the launches of each kernel, by method name
     */
    public record Counters(AtomicLong launches, AtomicLong valueReads, Map<String, Long> byKernel) {
        public Counters() {
            this(new AtomicLong(), new AtomicLong(), new ConcurrentSkipListMap<>());
        }
    }

    /** @return whether {@code s} addresses the opaque device's memory (a non-empty segment at or above its base) */
    private static boolean opaque(MemorySegment s) {
        return Long.compareUnsigned(s.address(), OpaqueDevice.BASE) >= 0 && s.byteSize() > 0;
    }

    /**
     * @param device the opaque device whose memory the segments address
     * @param host the kernels that compute on the mirrored bytes
     * @param deviceSegments counts segment arguments that were device memory (each element of a tensor list counts)
     * @return checked kernels (the layer the CUDA kernels sit behind too)
     */
    public static Kernels over(OpaqueDevice device, Kernels host, AtomicLong deviceSegments) {
        return over(device, host, deviceSegments, new Counters());
    }

    /**
     * As {@link #over(OpaqueDevice, Kernels, AtomicLong)}, also counting launches and values read back.
     *
     * @param counters receives the counts
     */
    public static Kernels over(OpaqueDevice device, Kernels host, AtomicLong deviceSegments, Counters counters) {
        Object proxy = Proxy.newProxyInstance(Kernels.class.getClassLoader(), new Class<?>[] {Kernels.class},
                (p, method, args) -> {
                    Object[] a = args == null ? null : args.clone();
                    boolean onDevice = false;
                    for (int i = 0; a != null && i < a.length; i++) {
                        if (a[i] instanceof MemorySegment s && opaque(s)) {
                            a[i] = device.mirror(s);
                            deviceSegments.incrementAndGet();
                            onDevice = true;
                        } else if (a[i] instanceof MemorySegment[] list) {   // a fused optimizer's tensor list
                            MemorySegment[] mirrored = list.clone();
                            for (int j = 0; j < list.length; j++) {
                                if (list[j] != null && opaque(list[j])) {
                                    mirrored[j] = device.mirror(list[j]);
                                    deviceSegments.incrementAndGet();
                                    onDevice = true;
                                }
                            }
                            a[i] = mirrored;
                        }
                    }
                    if (onDevice) {
                        counters.launches().incrementAndGet();
                        counters.byKernel().merge(method.getName(), 1L, Long::sum);
                        Class<?> r = method.getReturnType();
                        if (r == float.class || r == boolean.class) {
                            counters.valueReads().incrementAndGet();
                        }
                    }
                    try {
                        return method.invoke(host, a);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        return Kernels.checked((Kernels) proxy);
    }
}
