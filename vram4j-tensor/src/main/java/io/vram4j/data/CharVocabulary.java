package io.vram4j.data;

import java.util.Arrays;
import java.util.TreeSet;

/**
 * The characters of a text, sorted by code, as a character-level language model's tokens (as in nanoGPT's
 * {@code shakespeare_char}: {@code chars = sorted(set(text))}, {@code stoi}, {@code itos}). Immutable and
 * thread-safe.
 */
public final class CharVocabulary {
    private final char[] chars;
    private final int[] index = new int[Character.MAX_VALUE + 1];

    private CharVocabulary(char[] chars) {
        this.chars = chars;
        Arrays.fill(index, -1);
        for (int i = 0; i < chars.length; i++) {
            index[chars[i]] = i;
        }
    }

    /**
     * @param text any text with at least two distinct characters
     * @return the vocabulary of its characters
     * @throws IllegalArgumentException when the text has fewer than two distinct characters
     */
    public static CharVocabulary of(CharSequence text) {
        TreeSet<Character> set = new TreeSet<>();
        for (int i = 0; i < text.length(); i++) {
            set.add(text.charAt(i));
        }
        if (set.size() < 2) {
            throw new IllegalArgumentException("the text needs at least two distinct characters, it has " + set.size());
        }
        char[] c = new char[set.size()];
        int i = 0;
        for (char ch : set) {
            c[i++] = ch;
        }
        return new CharVocabulary(c);
    }

    /** @return the number of tokens */
    public int size() {
        return chars.length;
    }

    /**
     * @param c a character
     * @return its token, or -1 when it is not in the vocabulary
     */
    public int encode(char c) {
        return index[c];
    }

    /**
     * @param token a token in {@code [0, size())}
     * @return its character
     */
    public char decode(int token) {
        return chars[token];
    }

    /**
     * @param text characters of the vocabulary
     * @return their tokens
     * @throws IllegalArgumentException naming the first character that is not in the vocabulary
     */
    public int[] encode(CharSequence text) {
        int[] out = new int[text.length()];
        for (int i = 0; i < out.length; i++) {
            int t = index[text.charAt(i)];
            if (t < 0) {
                throw new IllegalArgumentException("character '" + text.charAt(i) + "' (U+"
                        + String.format("%04X", (int) text.charAt(i)) + ") at " + i + " is not in the vocabulary");
            }
            out[i] = t;
        }
        return out;
    }
}
