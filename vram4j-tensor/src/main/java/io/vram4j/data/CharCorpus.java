package io.vram4j.data;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

/**
 * English text for the character-level language model, split into a training part (the first 90%) and a
 * validation part (the rest), as nanoGPT's {@code shakespeare_char} preparation does.
 *
 * <p>{@link #resolve(Path)} finds the text, in this order:
 * <ol>
 *   <li>a UTF-8 text file given by the user ({@code --data FILE}; {@code .gz} is decompressed);</li>
 *   <li>the fortune cookies of Debian's {@code fortunes} package in {@link #FORTUNES_DIR} (every data file that
 *       has its {@code .dat} index beside it; the {@code %} separator lines become blank lines);</li>
 *   <li>the bundled excerpt of the public-domain Jargon File 4.4.7 (400,616 characters; see
 *       {@code io/vram4j/data/text/README.md}).</li>
 * </ol>
 *
 * @param origin where the text came from
 * @param location the file, folder or class-path resource
 * @param text the whole text
 */
public record CharCorpus(Origin origin, String location, String text) {
    /** Where Debian's {@code fortunes} package installs its cookie files. */
    public static final Path FORTUNES_DIR = Path.of("/usr/share/games/fortunes");
    /** Class-path resource of the bundled text. */
    public static final String BUNDLED = "/io/vram4j/data/text/jargon-lexicon.txt.gz";
    /** Fraction of the text used for training; the rest is the validation set. */
    public static final double TRAIN_FRACTION = 0.9;

    /** Where a corpus comes from. */
    public enum Origin {
        /** a file the user named */
        FILE,
        /** Debian's {@code fortunes} package */
        FORTUNES,
        /** the text bundled in the jar */
        BUNDLED
    }

    /** Checks for nulls and a usable text. */
    public CharCorpus {
        Objects.requireNonNull(origin, "origin");
        Objects.requireNonNull(location, "location");
        Objects.requireNonNull(text, "text");
        if (text.length() < 64) {
            throw new IllegalArgumentException(location + ": the text has " + text.length()
                    + " characters; a language model needs at least 64");
        }
    }

    /**
     * @param file a text file, or null to use the fortunes or the bundled text
     * @return the corpus
     * @throws IllegalArgumentException when {@code file} does not exist, cannot be read, is not UTF-8 or is too
     *     short (the message names the file)
     */
    public static CharCorpus resolve(Path file) {
        if (file != null) {
            return new CharCorpus(Origin.FILE, file.toString(), readFile(file));
        }
        if (Files.isDirectory(FORTUNES_DIR)) {
            String fortunes = readFortunes(FORTUNES_DIR);
            if (fortunes.length() >= 64) {
                return new CharCorpus(Origin.FORTUNES, FORTUNES_DIR.toString(), fortunes);
            }
        }
        return bundled();
    }

    /** @return the bundled Jargon File excerpt */
    public static CharCorpus bundled() {
        try (InputStream in = CharCorpus.class.getResourceAsStream(BUNDLED)) {
            if (in == null) {
                throw new IllegalStateException("the bundled text " + BUNDLED + " is missing from the class path");
            }
            return new CharCorpus(Origin.BUNDLED, BUNDLED, decode(new GZIPInputStream(in).readAllBytes(), BUNDLED));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the bundled text " + BUNDLED + ": " + e.getMessage(), e);
        }
    }

    static String readFile(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException(file + ": no such file (expected a UTF-8 text file, optionally .gz)");
        }
        try (InputStream raw = Files.newInputStream(file)) {
            InputStream in = file.getFileName().toString().endsWith(".gz") ? new GZIPInputStream(raw) : raw;
            return decode(in.readAllBytes(), file.toString());
        } catch (IOException e) {
            throw new IllegalArgumentException(file + ": cannot read: " + e.getMessage(), e);
        }
    }

    /** Concatenates the cookie files of a fortune folder (those with a {@code .dat} index), in name order. */
    static String readFortunes(Path dir) {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.filter(p -> Files.isRegularFile(p) && !Files.isSymbolicLink(p))
                    .filter(p -> !p.getFileName().toString().contains("."))
                    .filter(p -> Files.exists(p.resolveSibling(p.getFileName() + ".dat")))
                    .sorted().forEach(files::add);
        } catch (IOException e) {
            return "";
        }
        StringBuilder sb = new StringBuilder();
        for (Path p : files) {
            String t;
            try {
                t = decode(Files.readAllBytes(p), p.toString());
            } catch (IOException | IllegalArgumentException e) {
                continue; // a cookie file in another encoding: leave it out
            }
            for (String line : t.split("\n", -1)) {
                sb.append(line.equals("%") ? "" : line).append('\n');
            }
        }
        return sb.toString().replaceAll("\n{3,}", "\n\n");
    }

    private static String decode(byte[] bytes, String where) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(java.nio.ByteBuffer.wrap(bytes)).toString()
                    .replace("\r\n", "\n");
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException(where + ": not UTF-8 text (" + e.getMessage() + ")", e);
        }
    }

    /** @return e.g. {@code "bundled Jargon File 4.4.7 excerpt (400,616 characters)"} */
    public String describe() {
        String what = switch (origin) {
            case FILE -> location;
            case FORTUNES -> "fortune cookies in " + location;
            case BUNDLED -> "bundled Jargon File 4.4.7 excerpt (public domain)";
        };
        return what + String.format(java.util.Locale.ROOT, " (%,d characters)", text.length());
    }

    /** @return the vocabulary of the whole text */
    public CharVocabulary vocabulary() {
        return CharVocabulary.of(text);
    }

    /** @return the first {@link #TRAIN_FRACTION} of the text */
    public String trainText() {
        return text.substring(0, split());
    }

    /** @return the rest of the text, the validation part */
    public String validationText() {
        return text.substring(split());
    }

    private int split() {
        return (int) (text.length() * TRAIN_FRACTION);
    }
}
