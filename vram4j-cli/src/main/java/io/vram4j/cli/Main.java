package io.vram4j.cli;

/** Entry point of the {@code vram4j} command line. */
public final class Main {
    private Main() {
    }

    /** @param args command-line arguments */
    public static void main(String[] args) {
        System.out.println("vram4j");
    }
}
