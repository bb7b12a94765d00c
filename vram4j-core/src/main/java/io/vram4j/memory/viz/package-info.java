/**
 * The memory timeline page behind {@code vram4j viz}: {@link io.vram4j.memory.viz.MemoryTimeline} computes, from a
 * snapshot's device trace, the active memory timeline (each allocation a band stacked over time, coloured by its
 * allocation site, as PyTorch's {@code memory_viz} "Active Memory Timeline"), the allocator state at any moment and
 * the headline figures; {@link io.vram4j.memory.viz.TimelinePage} writes it as one self-contained HTML file.
 */
package io.vram4j.memory.viz;
