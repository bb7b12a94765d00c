package io.vram4j.bench;

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
 * The stand-in CUDA driver of core's tests ({@code vram4j-core/src/test/c/fake_libcuda.c}: its
 * {@code cuLaunchKernel} records the launch and runs nothing) and their stand-in cuBLAS
 * ({@code fake_libcublas.c}: it checks a product's arguments and computes nothing unless a kernel emulator is
 * named), compiled with {@code gcc -O2} against the CUDA headers into {@code vram4j-bench/target/stand-in}, for
 * benchmarks of vram4j's host-side cost on a machine without a GPU. Run from the repository root or from
 * {@code vram4j-bench}. The same thing {@code NativeTestBuild} does for the tests; built here so the benchmark jar
 * needs no test jar. Not thread-safe (call it from a {@code @Setup}).
 */
final class StandInDriver {
    private StandInDriver() {
    }

    /** @return the built driver, rebuilt when the source is newer */
    static Path libcuda() {
        return build("fake_libcuda.c", "libcuda-fake.so", List.of("-Wl,-soname,libcuda.so.1"));
    }

    /**
     * Makes the stand-in driver at {@code libcuda} drop queued copies and fills instead of moving their bytes
     * ({@code fake_cuda_discard_data}), so that a synchronize costs the host what it queued and not the CPU's
     * {@code memset}s of what a GPU does in microseconds. For benchmarks of the host's side only: values are garbage.
     *
     * @param libcuda the library {@link #libcuda()} built (loaded once per process, so the driver binding sees it)
     */
    static void discardData(Path libcuda) {
        SymbolLookup lib = SymbolLookup.libraryLookup(libcuda, Arena.global());
        MethodHandle discard = Linker.nativeLinker().downcallHandle(lib.find("fake_cuda_discard_data").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT));
        try {
            discard.invokeExact(1);
        } catch (Throwable t) {
            throw new IllegalStateException("fake_cuda_discard_data: " + t, t);
        }
    }

    /** @return the built cuBLAS, rebuilt when the source is newer (for {@code VRAM4J_LIBCUBLAS}) */
    static Path libcublas() {
        return build("fake_libcublas.c", "libcublas-fake.so", List.of());
    }

    private static Path build(String source, String library, List<String> flags) {
        Path root = Files.isDirectory(Path.of("vram4j-core")) ? Path.of(".") : Path.of("..");
        Path src = root.resolve("vram4j-core/src/test/c/" + source).toAbsolutePath().normalize();
        Path out = root.resolve("vram4j-bench/target/stand-in/" + library).toAbsolutePath().normalize();
        String home = System.getenv("CUDA_HOME");
        Path include = Path.of(home != null && !home.isBlank() ? home : "/usr/local/cuda", "include");
        try {
            if (!Files.isRegularFile(src)) {
                throw new IllegalStateException(src + " not found: run the benchmark from the repository root");
            }
            if (Files.isRegularFile(out) && Files.getLastModifiedTime(out).compareTo(Files.getLastModifiedTime(src)) > 0) {
                return out;
            }
            Files.createDirectories(out.getParent());
            List<String> cmd = new ArrayList<>(List.of("gcc", "-O2", "-shared", "-fPIC", "-I" + include));
            cmd.addAll(flags);
            cmd.addAll(List.of("-o", out.toString(), src.toString(), "-lpthread", "-ldl"));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("gcc failed on " + src + " (CUDA headers in " + include + "?):\n" + log);
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("building " + src + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
