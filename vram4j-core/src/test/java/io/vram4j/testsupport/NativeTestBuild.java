package io.vram4j.testsupport;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Compiles the test programs under the core module's {@code src/test/c} (the stand-in CUDA driver
 * {@code fake_libcuda.c}, the stand-in cuBLAS {@code fake_libcublas.c} and the layout printer) with {@code gcc} against the CUDA headers of this machine
 * ({@code $CUDA_HOME/include}, else {@code /usr/local/cuda/include}) into {@code target/native-test} of the module
 * whose tests run (core's, and the tensor runtime's through core's test jar). Where gcc or the headers are missing
 * the calling test is skipped with the reason, except under {@code CI=true}, where they are part of the machine and
 * their absence fails the test ({@link SharedData#require}). Thread-safe.
 */
@SuppressWarnings("restricted")
public final class NativeTestBuild {
    private static final Path OUT = Path.of("target", "native-test");
    private static final String DRIVER = "libcuda-fake.so";
    /** The C sources: the working directory is a module's folder, a sibling of {@code vram4j-core}. */
    private static final Path SOURCES = Path.of("..", "vram4j-core", "src", "test", "c");

    private NativeTestBuild() {
    }

    /** @return the fake driver library ({@code fake_libcuda.c}), built once per run */
    public static synchronized Path fakeDriver() {
        return build("fake_libcuda.c", DRIVER, true);
    }

    /**
     * @return the stand-in cuBLAS ({@code fake_libcublas.c}: the entry points {@code Cublas} binds, checking
     *     shapes and computing nothing), built once per run; name it in {@code VRAM4J_LIBCUBLAS}
     */
    public static synchronized Path fakeCublas() {
        return build("fake_libcublas.c", "libcublas-fake.so", true);
    }

    /**
     * @param what a counter of the stand-in cuBLAS ({@code fake_cublas_count}): {@code "handles"} (live),
     *     {@code "gemm"}, {@code "gemm_batched"}, {@code "set_workspace"}, {@code "set_stream"}, {@code "lt_matmul"}
     *     (calls), {@code "workspace_bytes"} (the size last set, -1 before any), or {@code "lt_live"} (cuBLASLt
     *     handles, descriptors, layouts and preferences not destroyed)
     * @return its value
     */
    public static long fakeCublasCount(String what) {
        try (Arena a = Arena.ofConfined()) {
            return (long) CublasHook.COUNT.invokeExact(a.allocateFrom(what));
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * Sets how many algorithms the stand-in's cuBLASLt heuristic offers from now on ({@code fake_cublas_lt_algorithms}):
     * 0 makes it answer {@code CUBLAS_STATUS_NOT_SUPPORTED}, as cuBLASLt does when no algorithm fits a product.
     * {@link #fakeCublasReset} sets it back to 1.
     */
    public static void fakeCublasLtAlgorithms(int n) {
        try {
            CublasHook.LT_ALGORITHMS.invokeExact(n);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * With {@code true}, the stand-in's {@code cublasLtMatmul} fails from now on ({@code CUBLAS_STATUS_EXECUTION_FAILED},
     * nothing queued: {@code fake_cublas_lt_fail}); {@link #fakeCublasReset} ends it.
     */
    public static void fakeCublasLtFails(boolean on) {
        try {
            CublasHook.LT_FAIL.invokeExact(on ? 1 : 0);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * Sets the stand-in cuBLAS's call counters and its last workspace size back, and its cuBLASLt heuristic to one
     * algorithm that runs ({@code fake_cublas_reset}).
     */
    public static void fakeCublasReset() {
        try {
            CublasHook.RESET.invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static final class CublasHook {
        private static final SymbolLookup LOOKUP = SymbolLookup.libraryLookup(fakeCublas(), Arena.global());
        static final MethodHandle COUNT = Linker.nativeLinker().downcallHandle(LOOKUP.find("fake_cublas_count").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        static final MethodHandle RESET = Linker.nativeLinker().downcallHandle(LOOKUP.find("fake_cublas_reset").orElseThrow(),
                FunctionDescriptor.ofVoid());
        static final MethodHandle LT_ALGORITHMS = Linker.nativeLinker().downcallHandle(
                LOOKUP.find("fake_cublas_lt_algorithms").orElseThrow(), FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT));
        static final MethodHandle LT_FAIL = Linker.nativeLinker().downcallHandle(
                LOOKUP.find("fake_cublas_lt_fail").orElseThrow(), FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT));
    }

    /**
     * @param name a test hook of the fake driver (not CUDA API), e.g. {@code "fake_cuda_live"}
     * @return a downcall handle to it
     */
    public static MethodHandle fakeDriverHook(String name, FunctionDescriptor descriptor) {
        SymbolLookup lookup = SymbolLookup.libraryLookup(fakeDriver(), Arena.global());
        return Linker.nativeLinker().downcallHandle(lookup.find(name).orElseThrow(), descriptor);
    }

    /** @return the fake driver's count of live objects of a kind ({@code fake_cuda_live}), e.g. "modules" */
    public static long fakeDriverLive(String what) {
        try (Arena a = Arena.ofConfined()) {
            return (long) LiveHook.LIVE.invokeExact(a.allocateFrom(what));
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * Forgets the fake driver's first host wait ({@code fake_cuda_reset_first_wait}): the next wait sets
     * {@code fakeDriverLive("launches_at_first_wait")} to the kernel launches made by then (-1 until a wait comes).
     */
    public static void fakeDriverResetFirstWait() {
        try {
            LiveHook.RESET_FIRST_WAIT.invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Starts the fake driver's call trace afresh ({@code fake_cuda_trace_start}). */
    public static void fakeDriverTraceStart() {
        try {
            LiveHook.TRACE_START.invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * @return the traced calls since {@link #fakeDriverTraceStart()}, one {@code "name 0xSTREAM"} per call
     *     ({@code fake_cuda_trace_read}): host allocations, asynchronous host-to-device copies, event records,
     *     stream waits and kernel launches
     */
    public static List<String> fakeDriverTrace() {
        try (Arena a = Arena.ofConfined()) {
            java.lang.foreign.MemorySegment buf = a.allocate(1 << 20);
            long n = (long) LiveHook.TRACE_READ.invokeExact(buf, (long) (1 << 20));
            String text = buf.getString(0);
            return n == 0 ? List.of() : List.of(text.split("\n"));
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static final class LiveHook {
        static final MethodHandle LIVE = fakeDriverHook("fake_cuda_live",
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        static final MethodHandle TRACE_START = fakeDriverHook("fake_cuda_trace_start", FunctionDescriptor.ofVoid());
        static final MethodHandle RESET_FIRST_WAIT = fakeDriverHook("fake_cuda_reset_first_wait",
                FunctionDescriptor.ofVoid());
        static final MethodHandle TRACE_READ = fakeDriverHook("fake_cuda_trace_read",
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    }

    /** @return the layout printer ({@code cuda_layout.c}), built once per run */
    public static synchronized Path layoutPrinter() {
        return build("cuda_layout.c", "cuda_layout", false);
    }

    private static Path build(String source, String output, boolean shared) {
        Path include = cudaInclude();
        requireTool(Files.isRegularFile(include.resolve("cuda.h")), "no CUDA headers: " + include.resolve("cuda.h")
                + " not found (set CUDA_HOME)");
        Path src = SOURCES.resolve(source).toAbsolutePath().normalize();
        Path out = OUT.resolve(output).toAbsolutePath();
        try {
            if (Files.isRegularFile(out) && Files.getLastModifiedTime(out).compareTo(Files.getLastModifiedTime(src)) > 0) {
                return out;
            }
            Files.createDirectories(OUT);
            List<String> cmd = new ArrayList<>(List.of("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-I" + include));
            if (shared) {
                cmd.addAll(List.of("-shared", "-fPIC"));
            }
            if (output.equals(DRIVER)) {
                cmd.add("-Wl,-soname,libcuda.so.1"); // the stand-in cuBLAS finds the driver's queue by it
            }
            cmd.addAll(List.of("-o", out.toString(), src.toString(), "-lpthread", "-ldl"));
            compile(cmd, src);
            return out;
        } catch (IOException e) {
            throw new AssertionError("building " + src + ": " + e, e);
        }
    }

    /**
     * Runs a compiler command to its end (at most 3 minutes).
     *
     * @param cmd the command, its first word the compiler ({@code gcc}, {@code g++})
     * @param src what it compiles, for the error message
     * @throws AssertionError with the compiler's output when it fails; skips the calling test when the compiler is
     *     missing (fails it under {@code CI=true})
     */
    static void compile(List<String> cmd, Path src) throws IOException {
        Process p;
        try {
            p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        } catch (IOException e) {
            requireTool(false, "no " + cmd.getFirst() + " on this machine (" + e.getMessage() + ")");
            throw e;
        }
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(180, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new AssertionError(cmd.getFirst() + " failed on " + src + ":\n" + log);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** @return the output of running a program built here */
    public static String run(Path program) {
        try {
            Process p = new ProcessBuilder(program.toString()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new AssertionError(program + " failed:\n" + out);
            }
            return out;
        } catch (IOException e) {
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static Path cudaInclude() {
        String home = System.getenv("CUDA_HOME");
        return Path.of(home != null && !home.isBlank() ? home : "/usr/local/cuda", "include");
    }

    private static void requireTool(boolean present, String reason) {
        SharedData.require(present, reason);
    }
}
