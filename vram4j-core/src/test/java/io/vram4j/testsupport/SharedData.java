package io.vram4j.testsupport;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What tests need from outside the repository: the team's {@code shared/} folder (real PyTorch snapshots in
 * {@code shared/data/snapshots}, found in the working directory or one of its parents, as {@code ../shared}
 * beside a checkout) and programs such as {@code python3} and {@code chromium}.
 *
 * <p>When something is missing, a test is skipped on a developer's machine but fails under {@code CI=true}
 * (as {@code .ci/run} runs), so a CI machine without them cannot pass by skipping.
 */
public final class SharedData {
    private SharedData() {
    }

    /** @return {@code shared/data/snapshots} in the working directory or one of its parents, or null */
    public static Path snapshotsDir() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path candidate = p.resolve("shared").resolve("data").resolve("snapshots");
            if (Files.isDirectory(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    /**
     * @param name a file of {@code shared/data/snapshots}, e.g. {@code decomfl-opt-zo-finetune_from-empty.pickle}
     * @return its path; skips the test when it is absent (fails it under {@code CI=true})
     */
    public static Path snapshot(String name) {
        Path dir = snapshotsDir();
        Path file = dir == null ? null : dir.resolve(name);
        require(file != null && Files.isRegularFile(file), "shared/data/snapshots/" + name);
        return file;
    }

    /**
     * @param name a snapshot file of {@code shared/data/snapshots}
     * @return its entry in {@code shared/data/snapshots/stats.json} (figures computed from the file by whoever
     *     collected it, independently of vram4j), or skips the test as {@link #snapshot} does
     * @throws IOException if stats.json cannot be read
     */
    public static JsonNode stats(String name) throws IOException {
        for (JsonNode n : new ObjectMapper().readTree(snapshot("stats.json").toFile())) {
            if (n.get("file").asText().equals(name)) {
                return n;
            }
        }
        throw new AssertionError(name + " not in stats.json");
    }

    /**
     * Skips the test when {@code present} is false, or fails it under {@code CI=true}.
     *
     * @param present whether the thing the test needs is there
     * @param what what it needs, for the message (e.g. "python3", "chromium")
     */
    public static void require(boolean present, String what) {
        if (present) {
            return;
        }
        if (underCi()) {
            Assertions.fail(what + " is missing; under CI=true the tests that need it fail instead of skipping");
        }
        Assumptions.abort(what + " is missing; skipped (it would fail under CI=true)");
    }

    /** @return true when the environment variable {@code CI} is {@code true} */
    public static boolean underCi() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }
}
