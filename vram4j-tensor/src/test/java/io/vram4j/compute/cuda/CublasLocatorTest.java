package io.vram4j.compute.cuda;

import io.vram4j.device.DeviceUnavailableException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CublasLocatorTest {
    @TempDir
    Path tmp;

    private CublasLocator locator() {
        return new CublasLocator(tmp.resolve("no-toolkit"), tmp.resolve("no-prefix"));
    }

    private Path touch(String relative) throws IOException {
        Path p = tmp.resolve(relative);
        Files.createDirectories(p.getParent());
        Files.write(p, new byte[] {0x7f, 'E', 'L', 'F'});
        return p;
    }

    @Test
    void theVariableNamesTheLibraryAndNothingElseIsSearched() throws IOException {
        Path named = touch("custom/libcublas-special.so");
        touch("cuda/lib64/libcublas.so.13");
        assertEquals(named, locator().locate(Map.of(CublasLocator.ENV, named.toString(), "CUDA_HOME", tmp.resolve("cuda").toString())));
        DeviceUnavailableException e = assertThrows(DeviceUnavailableException.class,
                () -> locator().locate(Map.of(CublasLocator.ENV, tmp.resolve("missing.so").toString())));
        assertEquals("no cuBLAS: VRAM4J_LIBCUBLAS=" + tmp.resolve("missing.so") + " is not a file", e.getMessage());
    }

    @Test
    void aToolkitComesBeforePythonWheelsAndTheHighestMajorWins() throws IOException {
        touch("cuda/lib64/libcublas.so.12");
        Path v13 = touch("cuda/lib64/libcublas.so.13");
        touch("cuda/lib64/libcublas.so.13.0.2.14");
        touch("site/nvidia/cublas/lib/libcublas.so.12");
        Map<String, String> env = Map.of("CUDA_HOME", tmp.resolve("cuda").toString(), "PYTHONPATH", tmp.resolve("site").toString());
        assertEquals(v13, locator().locate(env));
    }

    @Test
    void theWheelsOfAPythonEnvironmentAreFound() throws IOException {
        Path onPath = touch("site/nvidia/cublas/lib/libcublas.so.12");
        assertEquals(onPath, locator().locate(Map.of("PYTHONPATH", "/nowhere:" + tmp.resolve("site"))));
        Path venv = touch("venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13");
        assertEquals(venv, locator().locate(Map.of("VIRTUAL_ENV", tmp.resolve("venv").toString())));
        Path system = touch("no-prefix/lib/python3.11/dist-packages/nvidia/cublas/lib/libcublas.so");
        assertEquals(system, locator().locate(Map.of()));
    }

    @Test
    void nothingFoundIsOneLineNamingTheFolders() {
        DeviceUnavailableException e = assertThrows(DeviceUnavailableException.class,
                () -> locator().locate(Map.of("CUDA_HOME", tmp.resolve("cuda").toString())));
        assertEquals("no cuBLAS: libcublas.so not found in " + tmp.resolve("cuda/lib64") + ", "
                + tmp.resolve("no-toolkit/lib64") + "; set VRAM4J_LIBCUBLAS to its path", e.getMessage());
    }

    @Test
    void aFileThatIsNotCublasIsRefusedInOneLine() throws IOException {
        Path text = Files.writeString(tmp.resolve("cublas.txt"), "not a library");
        DeviceUnavailableException e = assertThrows(DeviceUnavailableException.class, () -> Cublas.load(text));
        assertTrue(e.getMessage().startsWith("no cuBLAS: " + text + " cannot be loaded"), e.getMessage());
        assertEquals(1, e.getMessage().lines().count());
        Path libm = Path.of("/lib/x86_64-linux-gnu/libm.so.6");
        if (Files.isRegularFile(libm)) {
            e = assertThrows(DeviceUnavailableException.class, () -> Cublas.load(libm));
            assertEquals("no cuBLAS: " + libm + " has no cublasCreate_v2 (cuBLAS 11.4 or newer is needed)", e.getMessage());
        }
    }
}
