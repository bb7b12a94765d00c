package io.vram4j.device.host;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

import static io.vram4j.device.NativeCalls.rethrow;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The Linux virtual-memory calls the host device needs ({@code mmap}, {@code munmap}, {@code mprotect},
 * {@code madvise}), as FFM downcalls into the C library that capture {@code errno}. Failures raise
 * {@link LibcException}. The constants are those of Linux on x86-64 and AArch64. Thread-safe.
 */
@SuppressWarnings("restricted")
final class Libc {
    static final int PROT_NONE = 0;
    static final int PROT_READ = 0x1;
    static final int PROT_WRITE = 0x2;
    static final int MAP_PRIVATE = 0x02;
    static final int MAP_ANONYMOUS = 0x20;
    static final int MAP_NORESERVE = 0x4000;
    static final int MADV_DONTNEED = 4;
    static final int ENOMEM = 12;

    private static final long MAP_FAILED = -1L;
    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

    private static final MethodHandle MMAP = downcall("mmap",
            FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
    private static final MethodHandle MUNMAP = downcall("munmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle MPROTECT = downcall("mprotect",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle MADVISE = downcall("madvise",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle GETPAGESIZE = LINKER.downcallHandle(
            LINKER.defaultLookup().find("getpagesize").orElseThrow(), FunctionDescriptor.of(JAVA_INT));

    private Libc() {
    }

    /** @return the system page size in bytes */
    static long pageSize() {
        try {
            return (int) GETPAGESIZE.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code mmap(addr, length, prot, flags, -1, 0)}.
     *
     * @param addr a hint (without {@code MAP_FIXED}), or 0
     * @return the address of the new mapping
     * @throws LibcException when the call fails
     */
    static long mmap(long addr, long length, int prot, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment result = (MemorySegment) MMAP.invokeExact(state, MemorySegment.ofAddress(addr), length,
                    prot, flags, -1, 0L);
            if (result.address() == MAP_FAILED) {
                throw new LibcException("mmap(" + hex(addr) + ", " + length + ", " + protName(prot) + ", "
                        + flagNames(flags) + ", -1, 0)", errno(state));
            }
            return result.address();
        } catch (LibcException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code munmap(addr, length)}. @throws LibcException when the call fails */
    static void munmap(long addr, long length) {
        call(MUNMAP, "munmap(" + hex(addr) + ", " + length + ")", addr, length, 0, false);
    }

    /** {@code mprotect(addr, length, prot)}. @throws LibcException when the call fails */
    static void mprotect(long addr, long length, int prot) {
        call(MPROTECT, "mprotect(" + hex(addr) + ", " + length + ", " + protName(prot) + ")", addr, length, prot,
                true);
    }

    /** {@code madvise(addr, length, advice)}. @throws LibcException when the call fails */
    static void madvise(long addr, long length, int advice) {
        call(MADVISE, "madvise(" + hex(addr) + ", " + length + ", " + advice + ")", addr, length, advice, true);
    }

    private static void call(MethodHandle handle, String description, long addr, long length, int arg,
            boolean hasArg) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            MemorySegment address = MemorySegment.ofAddress(addr);
            int rc = hasArg ? (int) handle.invokeExact(state, address, length, arg)
                    : (int) handle.invokeExact(state, address, length);
            if (rc != 0) {
                throw new LibcException(description, errno(state));
            }
        } catch (LibcException e) {
            throw e;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private static MethodHandle downcall(String name, FunctionDescriptor descriptor) {
        MemorySegment symbol = LINKER.defaultLookup().find(name)
                .orElseThrow(() -> new UnsupportedOperationException("the C library has no " + name));
        return LINKER.downcallHandle(symbol, descriptor, CAPTURE_ERRNO);
    }

    private static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    private static String hex(long address) {
        return "0x" + Long.toHexString(address);
    }

    private static String protName(int prot) {
        if (prot == PROT_NONE) {
            return "PROT_NONE";
        }
        StringBuilder sb = new StringBuilder();
        if ((prot & PROT_READ) != 0) {
            sb.append("PROT_READ");
        }
        if ((prot & PROT_WRITE) != 0) {
            sb.append(sb.isEmpty() ? "" : "|").append("PROT_WRITE");
        }
        return sb.toString();
    }

    private static String flagNames(int flags) {
        StringBuilder sb = new StringBuilder();
        if ((flags & MAP_PRIVATE) != 0) {
            sb.append("MAP_PRIVATE");
        }
        if ((flags & MAP_ANONYMOUS) != 0) {
            sb.append("|MAP_ANONYMOUS");
        }
        if ((flags & MAP_NORESERVE) != 0) {
            sb.append("|MAP_NORESERVE");
        }
        return sb.toString();
    }
}
