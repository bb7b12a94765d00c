package io.vram4j.tensor;

import io.vram4j.compute.Kernels;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
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
     * @param device the opaque device whose memory the segments address
     * @param host the kernels that compute on the mirrored bytes
     * @param deviceSegments counts segment arguments that were device memory
     * @return checked kernels (the layer the CUDA kernels sit behind too)
     */
    public static Kernels over(OpaqueDevice device, Kernels host, AtomicLong deviceSegments) {
        Object proxy = Proxy.newProxyInstance(Kernels.class.getClassLoader(), new Class<?>[] {Kernels.class},
                (p, method, args) -> {
                    Object[] a = args == null ? null : args.clone();
                    for (int i = 0; a != null && i < a.length; i++) {
                        if (a[i] instanceof MemorySegment s && Long.compareUnsigned(s.address(), OpaqueDevice.BASE) >= 0
                                && s.byteSize() > 0) {
                            a[i] = device.mirror(s);
                            deviceSegments.incrementAndGet();
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
