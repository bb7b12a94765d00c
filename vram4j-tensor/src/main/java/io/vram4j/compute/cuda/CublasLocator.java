package io.vram4j.compute.cuda;

import io.vram4j.device.DeviceUnavailableException;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds {@code libcublas} at run time (no CUDA library is needed to build vram4j), in this order:
 * <ol>
 *   <li>{@code VRAM4J_LIBCUBLAS}: the path of the library itself (nothing else is searched when it is set);</li>
 *   <li>{@code $CUDA_HOME/lib64}, then {@code /usr/local/cuda/lib64} (a CUDA toolkit);</li>
 *   <li>the NVIDIA wheels of a Python environment, {@code nvidia/cublas/lib} (CUDA 12 wheels) or
 *       {@code nvidia/cu13/lib} (CUDA 13 wheels) under each {@code PYTHONPATH} entry, then under the
 *       {@code site-packages} of {@code $VIRTUAL_ENV}, {@code $CONDA_PREFIX}, {@code ~/.local} and
 *       {@code /usr/local} ({@code dist-packages} too), as PyTorch's wheels install it.</li>
 * </ol>
 * In a folder, {@code libcublas.so.N} with the highest major version N wins, else {@code libcublas.so}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param defaultToolkit the CUDA toolkit searched after {@code CUDA_HOME} ({@code /usr/local/cuda})
 * @param systemPrefix the system Python prefix searched last ({@code /usr/local})
 */
record CublasLocator(Path defaultToolkit, Path systemPrefix) {
    static final String ENV = "VRAM4J_LIBCUBLAS";
    /** The locations of this machine: {@code /usr/local/cuda} and {@code /usr/local}. */
    static final CublasLocator SYSTEM = new CublasLocator(Path.of("/usr/local/cuda"), Path.of("/usr/local"));
    private static final Pattern VERSIONED = Pattern.compile("libcublas\\.so\\.(\\d+)");

    /**
     * @param env the environment ({@code System.getenv()})
     * @return the library to load
     * @throws DeviceUnavailableException in one line naming what was searched when no library is found, or when
     *     {@value #ENV} names a file that does not exist
     */
    Path locate(Map<String, String> env) {
        String named = env.get(ENV);
        if (named != null && !named.isBlank()) {
            Path p = Path.of(named);
            if (!Files.isRegularFile(p)) {
                throw new DeviceUnavailableException("no cuBLAS: " + ENV + "=" + named + " is not a file");
            }
            return p;
        }
        List<Path> dirs = folders(env);
        for (Path d : dirs) {
            Optional<Path> lib = inFolder(d);
            if (lib.isPresent()) {
                return lib.get();
            }
        }
        throw new DeviceUnavailableException("no cuBLAS: libcublas.so not found in " + dirs.stream().map(Path::toString)
                .reduce((a, b) -> a + ", " + b).orElse("(no folders)") + "; set " + ENV + " to its path");
    }

    /** @return the folders searched after {@value #ENV}, in order, without repeats */
    List<Path> folders(Map<String, String> env) {
        Set<Path> dirs = new LinkedHashSet<>();
        String cudaHome = env.get("CUDA_HOME");
        if (cudaHome != null && !cudaHome.isBlank()) {
            dirs.add(Path.of(cudaHome, "lib64"));
        }
        dirs.add(defaultToolkit.resolve("lib64"));
        List<Path> sites = new ArrayList<>();
        String pythonPath = env.get("PYTHONPATH");
        if (pythonPath != null) {
            for (String entry : pythonPath.split(":")) {
                if (!entry.isBlank()) {
                    sites.add(Path.of(entry));
                }
            }
        }
        for (String prefix : new String[] {env.get("VIRTUAL_ENV"), env.get("CONDA_PREFIX"),
                env.get("HOME") == null ? null : env.get("HOME") + "/.local", systemPrefix.toString()}) {
            if (prefix != null && !prefix.isBlank()) {
                sites.addAll(pythonSitePackages(Path.of(prefix, "lib")));
            }
        }
        for (Path site : sites) {
            dirs.add(site.resolve("nvidia/cublas/lib"));
            dirs.add(site.resolve("nvidia/cu13/lib"));
        }
        return List.copyOf(dirs);
    }

    /** @return {@code lib/python3.*}{@code /site-packages} and {@code dist-packages} folders that exist */
    private static List<Path> pythonSitePackages(Path lib) {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(lib)) {
            return out;
        }
        try (DirectoryStream<Path> pythons = Files.newDirectoryStream(lib, "python3*")) {
            for (Path py : pythons) {
                for (String kind : new String[] {"site-packages", "dist-packages"}) {
                    if (Files.isDirectory(py.resolve(kind))) {
                        out.add(py.resolve(kind));
                    }
                }
            }
        } catch (IOException e) {
            return out;
        }
        out.sort(null);
        return out;
    }

    /** @return the library of a folder: the highest {@code libcublas.so.N}, else {@code libcublas.so} */
    static Optional<Path> inFolder(Path dir) {
        if (!Files.isDirectory(dir)) {
            return Optional.empty();
        }
        Path best = null;
        int bestMajor = -1;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "libcublas.so*")) {
            for (Path f : files) {
                Matcher m = VERSIONED.matcher(f.getFileName().toString());
                if (m.matches() && Files.isRegularFile(f)) {
                    int major = Integer.parseInt(m.group(1));
                    if (major > bestMajor) {
                        bestMajor = major;
                        best = f;
                    }
                }
            }
        } catch (IOException | NumberFormatException e) {
            return Optional.empty();
        }
        if (best == null && Files.isRegularFile(dir.resolve("libcublas.so"))) {
            best = dir.resolve("libcublas.so");
        }
        return Optional.ofNullable(best);
    }
}
