package io.vram4j.memory.snapshot;

import io.vram4j.testsupport.SharedData;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Locating the shared real snapshots and running python3 for fixtures and cross-checks. */
final class SnapshotTestSupport {
    private static Boolean pythonAvailable;

    private SnapshotTestSupport() {
    }

    /** @return {@code shared/data/snapshots} ({@link SharedData#snapshotsDir}), or null */
    static Path snapshotsDir() {
        return SharedData.snapshotsDir();
    }

    /** @return the real snapshot file; skips the test when it is absent, fails it under CI=true */
    static Path realSnapshot(String name) {
        return SharedData.snapshot(name);
    }

    static synchronized boolean pythonAvailable() {
        if (pythonAvailable == null) {
            try {
                Process p = new ProcessBuilder("python3", "-c", "import pickle, pickletools, json")
                        .redirectErrorStream(true).start();
                p.getInputStream().readAllBytes();
                pythonAvailable = p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0;
            } catch (IOException | InterruptedException e) {
                pythonAvailable = false;
            }
        }
        return pythonAvailable;
    }

    static void assumePython() {
        SharedData.require(pythonAvailable(), "python3 (with pickle, pickletools, json)");
    }

    /**
     * Runs a Python script with arguments.
     *
     * @return its standard output
     * @throws AssertionError if it fails
     */
    static String python(Path workDir, String script, String... args) throws IOException, InterruptedException {
        Path file = Files.createTempFile(workDir, "script", ".py");
        Files.writeString(file, script, StandardCharsets.UTF_8);
        List<String> cmd = new ArrayList<>(List.of("python3", file.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("python3 timed out");
        }
        String text = new String(out, StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            throw new AssertionError("python3 failed (" + p.exitValue() + "):\n" + text);
        }
        return text;
    }

    /**
     * Pickles a Python literal with {@code pickle.dumps(obj, protocol)} into a file.
     *
     * @param literal a Python expression
     * @return the file
     */
    static Path pythonPickle(Path dir, String name, String literal, int protocol)
            throws IOException, InterruptedException {
        Path file = dir.resolve(name);
        python(dir, "import pickle, sys\nobj = " + literal + "\nopen(sys.argv[1], 'wb').write(pickle.dumps(obj, "
                + protocol + "))\n", file.toString());
        return file;
    }
}
