/**
 * The {@code vram4j} command line (picocli). Exports nothing: it is run, not depended on. Its command classes
 * are opened to picocli (options are injected by reflection) and Jackson (JSON reports).
 */
module io.vram4j.cli {
    requires io.vram4j.tensor;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires me.tongfei.progressbar;

    opens io.vram4j.cli to info.picocli, com.fasterxml.jackson.databind;
}
