package io.vram4j.data;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The core module's stand-in CUDA driver ({@code vram4j-core/src/test/c/fake_libcuda.c}), compiled here with
 * {@code gcc} against this machine's {@code cuda.h} into {@code target/native-test}, for tests of the tensor
 * runtime's cuda paths without a GPU; and its call trace. Skips the calling test where gcc or the headers are
 * missing (fails it under {@code CI=true}).
 */
@SuppressWarnings("restricted")
final class FakeCudaDriver {
    private static Path library;
    private static MethodHandle traceStart;
    private static MethodHandle traceRead;

    private FakeCudaDriver() {
    }

    /** @return the fake driver library, built once per run */
    static synchronized String library() {
        if (library == null) {
            Path built = build();
            SymbolLookup lookup = SymbolLookup.libraryLookup(built, Arena.global());
            Linker linker = Linker.nativeLinker();
            traceStart = linker.downcallHandle(lookup.find("fake_cuda_trace_start").orElseThrow(),
                    FunctionDescriptor.ofVoid());
            traceRead = linker.downcallHandle(lookup.find("fake_cuda_trace_read").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
            library = built;
        }
        return library.toString();
    }

    /** Starts the call trace afresh. */
    static void traceStart() throws Throwable {
        traceStart.invokeExact();
    }

    /** @return the traced calls since {@link #traceStart()}, each {@code "name 0xSTREAM"} */
    static List<String> trace() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate(1 << 20);
            long n = (long) traceRead.invokeExact(buf, (long) (1 << 20));
            return n == 0 ? List.of() : List.of(buf.getString(0).split("\n"));
        }
    }

    private static Path build() {
        String home = System.getenv("CUDA_HOME");
        Path include = Path.of(home != null && !home.isBlank() ? home : "/usr/local/cuda", "include");
        require(Files.isRegularFile(include.resolve("cuda.h")), "no CUDA headers: " + include.resolve("cuda.h"));
        Path src = Path.of("..", "vram4j-core", "src", "test", "c", "fake_libcuda.c").toAbsolutePath().normalize();
        Path out = Path.of("target", "native-test", "libcuda-fake.so").toAbsolutePath();
        try {
            Files.createDirectories(out.getParent());
            Process p;
            try {
                p = new ProcessBuilder("gcc", "-O1", "-Wall", "-Wextra", "-Werror", "-I" + include, "-shared", "-fPIC",
                        "-o", out.toString(), src.toString(), "-lpthread").redirectErrorStream(true).start();
            } catch (IOException e) {
                require(false, "no gcc on this machine (" + e.getMessage() + ")");
                throw e;
            }
            String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new AssertionError("gcc failed on " + src + ":\n" + log);
            }
            return out;
        } catch (IOException e) {
            throw new AssertionError("building " + src + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static void require(boolean present, String what) {
        if (!present) {
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                Assertions.fail(what + "; under CI=true the tests that need it fail instead of skipping");
            }
            Assumptions.abort(what + "; skipped (it would fail under CI=true)");
        }
    }
}
