/**
 * The host device ({@code host}): real off-heap memory of this process, obtained with {@code mmap} through the
 * Foreign Function &amp; Memory API, with a GPU-like capacity and real virtual memory for expandable segments.
 * Linux only. See {@link io.vram4j.device.host.HostDevice}.
 */
package io.vram4j.device.host;
