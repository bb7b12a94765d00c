package io.vram4j.cli;

import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.memory.viz.Headline;
import io.vram4j.memory.viz.MemoryTimeline;
import io.vram4j.memory.viz.TimelinePage;
import io.vram4j.train.RunFolder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code vram4j viz FILE -o out.html}: writes the memory timeline page of a snapshot (PyTorch's pickle or JSON,
 * or vram4j's own) as one self-contained HTML file.
 */
@Command(name = "viz", mixinStandardHelpOptions = true,
        description = {"Write the memory timeline page of a memory snapshot: one self-contained HTML file (no network)",
                "with the active memory timeline coloured by allocation site, the allocator state at any moment",
                "and the headline figures (peak allocated, peak reserved, fragmentation at peak, OOMs)."})
final class VizCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "snapshot pickle (torch.cuda.memory._dump_snapshot) or JSON, also gzip-compressed (.pickle.gz, .json.gz)")
    Path file;

    @Option(names = {"-o", "--output"}, paramLabel = "HTML",
            description = "the page to write (default: the snapshot's name with .html, in the current folder)")
    Path output;

    @Option(names = "--device", paramLabel = "N",
            description = "device index (default: the first device with a trace, else the first with segments)")
    Integer device;

    @Option(names = "--max-entries", paramLabel = "N", defaultValue = "" + MemoryTimeline.DEFAULT_MAX_ENTRIES,
            description = "draw the N largest allocations one by one and sum the rest into a summary band (default: ${DEFAULT-VALUE})")
    int maxEntries;

    private final PrintStream out = System.out;

    @Override
    public Integer call() throws IOException {
        if (maxEntries < 1) {
            throw new UserException("--max-entries: expected a positive number, got " + maxEntries);
        }
        MemorySnapshot snapshot = ReplayCommand.read(file);
        int d = device != null ? device : RunFolder.timelineDevice(snapshot);
        if (!snapshot.devices().contains(d)) {
            throw new UserException("--device " + d + ": " + file.getFileName() + " has no segments and no trace for device "
                    + d + (snapshot.devices().isEmpty() ? " (the snapshot is empty)" : " (devices: " + snapshot.devices() + ")"));
        }
        Path target = output != null ? output : Path.of(stem(file) + ".html");
        MemoryTimeline timeline = MemoryTimeline.of(snapshot, d, maxEntries);
        write(timeline, file.getFileName().toString() + (snapshot.devices().size() > 1 ? " · device " + d : ""), target);
        Headline h = timeline.headline();
        out.printf(Locale.ROOT, "wrote %s (device %d: %,d entries, %,d allocations, %,d drawn one by one)%n", target, d,
                h.entries(), h.allocs(), timeline.bands().size());
        out.printf(Locale.ROOT, "  peak allocated %s, peak reserved %s, reserved-unallocated at peak %s, OOMs %d%n",
                FormatSize.formatSize(h.peakAllocated()), FormatSize.formatSize(h.peakReserved()),
                FormatSize.formatSize(h.fragmentationAtPeak()), h.ooms());
        if (timeline.maxEntries() < maxEntries) {
            out.printf(Locale.ROOT, "  note: only the %,d largest allocations get a band of their own (not %,d): more would need over"
                    + " %,d band vertices%n", timeline.maxEntries(), maxEntries, MemoryTimeline.VERTEX_BUDGET);
        }
        if (timeline.inconsistencies() > 0) {
            out.printf("  warning: %d entries did not fit the reconstructed state (first: %s)%n", timeline.inconsistencies(),
                    timeline.firstInconsistency());
        }
        return 0;
    }

    /**
     * Writes a page, turning file-system failures into one clear line.
     *
     * @param timeline the timeline
     * @param title    the page title
     * @param target   the HTML file
     */
    static void write(MemoryTimeline timeline, String title, Path target) {
        Path parent = target.toAbsolutePath().getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            throw new UserException(target + ": cannot write the page: folder " + parent + " does not exist");
        }
        if (Files.isDirectory(target)) {
            throw new UserException(target + ": cannot write the page: it is a folder (expected an .html file)");
        }
        try {
            TimelinePage.write(timeline, title, target);
        } catch (AccessDeniedException e) {
            throw new UserException(target + ": cannot write the page: permission denied");
        } catch (NoSuchFileException e) {
            throw new UserException(target + ": cannot write the page: no such folder");
        } catch (FileSystemException e) {
            throw new UserException(target + ": cannot write the page: " + (e.getReason() != null ? e.getReason() : e.getMessage()));
        } catch (IOException e) {
            throw new UserException(target + ": cannot write the page: " + e.getMessage());
        }
    }

    private static String stem(Path file) {
        String name = file.getFileName().toString();
        if (name.endsWith(".gz")) {
            name = name.substring(0, name.length() - 3);
        }
        int dot = name.lastIndexOf('.');
        return dot > 0 ? name.substring(0, dot) : name;
    }
}
