package io.vram4j.cli;

import io.vram4j.testsupport.SharedData;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs one of the project's Python scripts under {@code gpu/} with {@code python3} (standard library only) and
 * returns its exit status and output. Without {@code python3} the calling test is skipped, or fails under
 * {@code CI=true}.
 *
 * @param script the script, relative to the vram4j-cli module (e.g. {@code ../gpu/summarize.py})
 */
record PythonScript(Path script) {

    /** Exit status and stdout + stderr, in the order written. */
    record Result(int code, String out) {
    }

    static PythonScript gpu(String name) {
        return new PythonScript(Path.of("..", "gpu", name));
    }

    Result run(String... args) {
        List<String> cmd = new ArrayList<>(List.of("python3", script.toString()));
        cmd.addAll(List.of(args));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(120, TimeUnit.SECONDS), "python3 " + script + " did not finish");
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            SharedData.require(false, "python3 (" + e.getMessage() + ")");
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
