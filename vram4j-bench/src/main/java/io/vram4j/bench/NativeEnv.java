package io.vram4j.bench;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Sets a variable in this process's C environment ({@code setenv(3)} through FFM), for native libraries that
 * read it when they are loaded, such as libgomp's {@code OMP_WAIT_POLICY}. Java's own
 * {@link System#getenv} view is not changed. Call it before the library is loaded; not thread-safe (as
 * {@code setenv} is not).
 */
final class NativeEnv {
    private NativeEnv() {
    }

    /**
     * @param name  the variable
     * @param value its value (replaces an existing one)
     * @throws IllegalStateException if {@code setenv} fails
     */
    static void set(String name, String value) {
        Linker linker = Linker.nativeLinker();
        MethodHandle setenv = linker.downcallHandle(linker.defaultLookup().findOrThrow("setenv"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment n = arena.allocateFrom(name);
            MemorySegment v = arena.allocateFrom(value);
            int rc = (int) setenv.invokeExact(n, v, 1);
            if (rc != 0) {
                throw new IllegalStateException("setenv(" + name + ") failed with " + rc);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("setenv(" + name + "): " + t, t);
        }
    }
}
