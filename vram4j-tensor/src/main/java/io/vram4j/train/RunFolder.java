package io.vram4j.train;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotWriter;
import io.vram4j.memory.stats.MemoryStats;
import io.vram4j.memory.viz.MemoryTimeline;
import io.vram4j.memory.viz.TimelinePage;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The folder of one training run and the files {@link TrainJob} writes into it: {@code memory_summary.txt},
 * {@code memory_stats.json}, {@code memory_snapshot.pickle} (PyTorch's {@code _dump_snapshot} format, for
 * memory_viz), {@code memory_timeline.html} and {@code result.json}. Not thread-safe: one run writes it.
 */
public final class RunFolder {
    private final Path dir;
    private final boolean created;

    private RunFolder(Path dir, boolean created) {
        this.dir = dir;
        this.created = created;
    }

    /**
     * Creates the folder: {@code out} (with its parents) or, when it is null, {@code runs/<yyyyMMdd-HHmmss>} in the
     * working directory (with {@code -2}, {@code -3}... when that exists).
     *
     * @param out the folder, or null for a new timestamped one
     * @return the folder
     * @throws IllegalArgumentException naming {@code --out} if {@code out} is a file or cannot be created
     */
    static RunFolder create(Path out) {
        try {
            if (out != null) {
                if (Files.exists(out) && !Files.isDirectory(out)) {
                    throw new IllegalArgumentException("--out: '" + out + "' exists and is not a folder");
                }
                boolean created = !Files.exists(out);
                Files.createDirectories(out);
                return new RunFolder(out, created);
            }
            Path runs = Path.of("runs");
            Files.createDirectories(runs);
            String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss", Locale.ROOT));
            for (int i = 1; ; i++) {
                Path candidate = runs.resolve(i == 1 ? stamp : stamp + "-" + i);
                try {
                    return new RunFolder(Files.createDirectory(candidate), true);
                } catch (FileAlreadyExistsException e) {
                    // try the next suffix
                }
            }
        } catch (IOException e) {
            throw new IllegalArgumentException("--out: cannot create the run folder: " + e, e);
        }
    }

    /** @return the folder */
    Path dir() {
        return dir;
    }

    /** Deletes the folder if this run created it and nothing was written into it (after a failed run). */
    void deleteIfCreatedAndEmpty() {
        if (!created) {
            return;
        }
        try (var entries = Files.list(dir)) {
            if (entries.findAny().isEmpty()) {
                Files.delete(dir);
            }
        } catch (IOException e) {
            // leave it
        }
    }

    /**
     * Writes the memory files.
     *
     * @return the files written, by key ({@code memory_summary}, {@code memory_stats}, {@code memory_snapshot},
     *     {@code memory_timeline}), as path strings
     * @throws UncheckedIOException if a file cannot be written
     */
    Map<String, String> writeMemoryFiles(String memorySummary, MemoryStats stats, MemorySnapshot snapshot) {
        Map<String, String> files = new LinkedHashMap<>();
        try {
            Path s = dir.resolve("memory_summary.txt");
            Files.writeString(s, memorySummary);
            files.put("memory_summary", s.toString());
            Path j = dir.resolve("memory_stats.json");
            writeJson(j, stats.asMap());
            files.put("memory_stats", j.toString());
            if (snapshot != null) {
                Path p = dir.resolve("memory_snapshot.pickle");
                SnapshotWriter.write(snapshot, p);
                files.put("memory_snapshot", p.toString());
                int device = timelineDevice(snapshot);
                if (snapshot.devices().contains(device)) {
                    Path html = dir.resolve("memory_timeline.html");
                    TimelinePage.write(MemoryTimeline.of(snapshot, device, MemoryTimeline.DEFAULT_MAX_ENTRIES),
                            dir.getFileName() + "/memory_snapshot.pickle", html);
                    files.put("memory_timeline", html.toString());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the run folder " + dir + ": " + e.getMessage(), e);
        }
        return files;
    }

    /**
     * The device a timeline of the snapshot shows by default (as {@code vram4j viz} chooses it).
     *
     * @param s a snapshot
     * @return the first device with a trace, else the first device, else 0
     */
    public static int timelineDevice(MemorySnapshot s) {
        for (int d : s.devices()) {
            if (!s.trace(d).isEmpty()) {
                return d;
            }
        }
        return s.devices().isEmpty() ? 0 : s.devices().first();
    }

    /**
     * Writes {@code value} as indented JSON.
     *
     * @throws UncheckedIOException if the file cannot be written
     */
    static void writeJson(Path file, Object value) {
        try {
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), value);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }
}
