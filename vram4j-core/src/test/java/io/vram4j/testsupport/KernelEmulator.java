package io.vram4j.testsupport;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Builds the kernel emulator (vram4j-tensor's {@code src/test/c/kernel_emulator.cpp}): the project's CUDA kernels
 * (vram4j-tensor's {@code src/main/cuda/vram4j_kernels.cu}) compiled as host C++ with {@code g++}, which the
 * stand-in driver ({@link NativeTestBuild#fakeDriver()}) runs each launch on when {@code VRAM4J_FAKE_KERNELS} names
 * the library (the tensor module's emulated GPU run, and CLI tests of {@code --device cuda}). The build writes into a work folder beside the library the kernel source with its
 * dynamic shared memory declarations turned into pointers, and {@code kernel_list.h}, one {@code EMU_KERNEL(name)}
 * per {@code extern "C" __global__} function. Where {@code g++} is missing the calling test is skipped (failed
 * under {@code CI=true}). Thread-safe.
 */
public final class KernelEmulator {
    /**
     * The library, built once per run into the running module's {@code target/native-test} (a fixed path, so that a
     * test run can name it before it exists).
     */
    public static final Path LIBRARY = Path.of("target", "native-test", "libvram4j-kernels-emu.so").toAbsolutePath();
    /** The kernels: the working directory is a module's folder, a sibling of {@code vram4j-tensor}. */
    public static final Path KERNELS = Path.of("..", "vram4j-tensor", "src", "main", "cuda", "vram4j_kernels.cu")
            .toAbsolutePath().normalize();
    private static final Path SOURCES = Path.of("..", "vram4j-tensor", "src", "test", "c").toAbsolutePath().normalize();
    private static final Pattern SHARED = Pattern.compile(
            "extern __shared__ (?:__align__\\(\\d+\\) )?float (\\w+)\\[\\];");
    private static final Pattern ENTRY = Pattern.compile(
            "extern \"C\" __global__ void (?:__launch_bounds__\\([^)]*\\)\\s+)?(\\w+)\\(");

    private KernelEmulator() {
    }

    /** @return {@link #LIBRARY}, the emulator of the project's kernels, built unless newer than its sources */
    public static Path library() {
        return build(KERNELS, LIBRARY);
    }

    /**
     * @return whether the emulator of {@link #library()}, as loaded in this process, runs blocks and threads in
     *     reverse index order ({@code VRAM4J_FAKE_KERNELS_ORDER=reverse} when it was loaded)
     */
    @SuppressWarnings("restricted")
    public static boolean reverseOrder() {
        SymbolLookup lib = SymbolLookup.libraryLookup(library(), Arena.global());
        try {
            return (int) Linker.nativeLinker().downcallHandle(lib.find("emu_reverse_order").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT)).invokeExact() == 1;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * @param kernels CUDA C++ kernels (the project's, or a test's)
     * @param library the shared library to write, beside a work folder of the same name
     * @return {@code library}, built unless newer than its sources
     */
    public static synchronized Path build(Path kernels, Path library) {
        try {
            List<Path> inputs = List.of(kernels, SOURCES.resolve("kernel_emulator.cpp"),
                    SOURCES.resolve("cuda_emulation.h"));
            if (Files.isRegularFile(library) && newest(inputs).compareTo(Files.getLastModifiedTime(library)) < 0) {
                return library;
            }
            String source = Files.readString(kernels);
            Path work = library.resolveSibling(library.getFileName().toString().replace(".so", ""));
            Files.createDirectories(work);
            Files.writeString(work.resolve("kernels.cu"), hostSource(source));
            StringBuilder list = new StringBuilder();
            for (String name : entries(source)) {
                list.append("EMU_KERNEL(").append(name).append(")\n");
            }
            Files.writeString(work.resolve("kernel_list.h"), list);
            compile(work, library);
            return library;
        } catch (IOException e) {
            throw new AssertionError("building the kernel emulator over " + kernels + ": " + e, e);
        }
    }

    /**
     * @param source the kernels' CUDA C++
     * @return the same text with each {@code extern __shared__ float NAME[];} (or
     *     {@code extern __shared__ __align__(N) float NAME[];}) declaring a pointer to the launch's dynamic shared
     *     memory instead (which the emulator aligns to 128 bytes)
     * @throws AssertionError when another use of {@code __shared__} is left, which the emulator does not know
     */
    public static String hostSource(String source) {
        String host = SHARED.matcher(source).replaceAll("float *$1 = (float *) emu::dynamic_shared();");
        if (host.contains("__shared__")) {
            throw new AssertionError(KERNELS + ": a __shared__ declaration other than \"extern __shared__ float NAME[];\""
                    + " (kernel_emulator.cpp knows only that form)");
        }
        return host;
    }

    /** @return the names of the {@code extern "C" __global__} functions of the kernels' source, in order */
    public static List<String> entries(String source) {
        List<String> names = new ArrayList<>();
        Matcher m = ENTRY.matcher(source);
        while (m.find()) {
            names.add(m.group(1));
        }
        return names;
    }

    private static FileTime newest(List<Path> paths) throws IOException {
        FileTime newest = FileTime.fromMillis(0);
        for (Path p : paths) {
            FileTime t = Files.getLastModifiedTime(p);
            newest = t.compareTo(newest) > 0 ? t : newest;
        }
        return newest;
    }

    private static void compile(Path work, Path library) throws IOException {
        // -Wno-unknown-pragmas: the kernels' "#pragma unroll" is nvcc's, which g++ does not know
        List<String> cmd = List.of("g++", "-std=c++17", "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-Wall",
                "-Wextra", "-Werror", "-Wno-unused-parameter", "-Wno-unknown-pragmas",
                "-I" + SOURCES.resolve("emu-include").toAbsolutePath(),
                "-I" + SOURCES.toAbsolutePath(), "-I" + work.toAbsolutePath(), "-DKERNEL_SOURCE=\"kernels.cu\"",
                "-o", library.toString(), SOURCES.resolve("kernel_emulator.cpp").toAbsolutePath().toString());
        NativeTestBuild.compile(cmd, SOURCES.resolve("kernel_emulator.cpp"));
    }
}
