/**
 * Data for training: an {@link io.vram4j.data.IdxReader IDX reader} (MNIST format, gzipped or plain),
 * {@link io.vram4j.data.ImageDataset image data sets} normalized on the fly,
 * {@link io.vram4j.data.FashionMnist Fashion-MNIST} with a bundled subset, and a
 * {@link io.vram4j.data.DataLoader DataLoader} that batches, shuffles (seeded) and prefetches on a background
 * thread. Batches are plain Java arrays: the loader never touches device memory; the trainer copies each batch
 * into tensors it owns.
 */
package io.vram4j.data;
