package io.vram4j.data;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CharCorpusTest {
    @TempDir
    Path dir;

    @Test
    void bundledTextIsTheJargonFileExcerpt() {
        CharCorpus c = CharCorpus.bundled();
        assertEquals(CharCorpus.Origin.BUNDLED, c.origin());
        assertEquals(400_616, c.text().length());
        assertTrue(c.text().contains("hacker"));
        assertEquals(96, c.vocabulary().size());
        assertEquals(c.text().length(), c.trainText().length() + c.validationText().length());
        assertEquals((int) (c.text().length() * 0.9), c.trainText().length());
    }

    @Test
    void readsAPlainOrGzippedFile() throws IOException {
        String text = "It was the best of times, it was the worst of times, it was the age of wisdom.\n";
        Path plain = Files.writeString(dir.resolve("t.txt"), text);
        Path gz = dir.resolve("t.txt.gz");
        try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(gz))) {
            out.write(text.getBytes(StandardCharsets.UTF_8));
        }
        assertEquals(text, CharCorpus.resolve(plain).text());
        assertEquals(text, CharCorpus.resolve(gz).text());
        assertEquals(CharCorpus.Origin.FILE, CharCorpus.resolve(plain).origin());
    }

    @Test
    void badFilesAreNamedInTheError() throws IOException {
        Path missing = dir.resolve("nope.txt");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CharCorpus.resolve(missing));
        assertTrue(e.getMessage().contains("nope.txt"), e.getMessage());
        Path latin1 = dir.resolve("latin1.txt");
        byte[] bytes = new byte[100];
        java.util.Arrays.fill(bytes, (byte) 'a');
        bytes[50] = (byte) 0xE9;
        Files.write(latin1, bytes);
        e = assertThrows(IllegalArgumentException.class, () -> CharCorpus.resolve(latin1));
        assertTrue(e.getMessage().contains("not UTF-8"), e.getMessage());
        Path tiny = Files.writeString(dir.resolve("tiny.txt"), "too short");
        e = assertThrows(IllegalArgumentException.class, () -> CharCorpus.resolve(tiny));
        assertTrue(e.getMessage().contains("tiny.txt") && e.getMessage().contains("at least 64"), e.getMessage());
    }

    @Test
    void fortuneFilesWithAnIndexAreJoinedWithoutSeparators() throws IOException {
        Files.writeString(dir.resolve("wisdom"), "A penny saved is a penny earned.\n%\nHaste makes waste.\n%\n");
        Files.writeString(dir.resolve("wisdom.dat"), "index");
        Files.writeString(dir.resolve("notes"), "no index beside me, so I am left out\n");
        String t = CharCorpus.readFortunes(dir);
        assertEquals("A penny saved is a penny earned.\n\nHaste makes waste.\n\n", t);
    }

    @Test
    void datasetWindowsAreShiftedByTheStride() {
        CharVocabulary v = CharVocabulary.of("abcdefgh");
        CharDataset d = new CharDataset("abcdefgh", v, 3, 2, "t");
        assertEquals(3, d.size()); // starts 0, 2, 4 (a window needs 4 characters)
        assertEquals(4, d.features());
        assertEquals(8, d.numClasses());
        float[] x = new float[4];
        d.copyFeatures(2, x, 0);
        assertArrayEquals(new float[] {4, 5, 6, 7}, x);
        assertEquals(7, d.label(2));
        assertThrows(IndexOutOfBoundsException.class, () -> d.copyFeatures(3, x, 0));
        assertThrows(IllegalArgumentException.class, () -> new CharDataset("abc", v, 3, 1, "short"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> v.encode("abz"));
        assertTrue(e.getMessage().contains("'z'"), e.getMessage());
    }
}
