package io.orbite.qualification.example;

import java.util.Random;

/**
 * The layered KV cache of the layer-by-layer phase: {@code requests} requests of {@code layers}
 * layers of {@code pages} pages of {@code pageBytes} each. On the prefill side a request's layers
 * lie one after another and a layer's pages are adjacent, so that a layer's READs are contiguous on
 * the source; request {@code r} holds pattern {@link #contentSeed(int)} from position 0 over its
 * whole span. On the decode side every layer lands after a guard gap of 1..4096 bytes, its pages
 * adjacent too, so that request merging applies within a layer and never across one.
 *
 * @param requests requests in the layered region
 * @param layers layers per request
 * @param pages pages per layer
 * @param pageBytes bytes per page
 * @param seed the seed of contents and gaps
 */
record KvLayers(int requests, int layers, int pages, long pageBytes, long seed) {
  KvLayers {
    if (requests < 1 || layers < 1 || pages < 1 || pageBytes < 1) {
      throw new IllegalArgumentException(
          "layered requests, layers, pages and page size must be >= 1");
    }
    if ((long) requests * layers * pages > 65_536) {
      throw new IllegalArgumentException(
          "at most 65,536 layer pages (requests x layers x pages: one batch holds them), got "
              + (long) requests * layers * pages);
    }
    if ((long) requests * layers * pages * pageBytes > (8L << 30)) {
      throw new IllegalArgumentException("the layered region is at most 8 GiB");
    }
  }

  long layerBytes() {
    return pages * pageBytes;
  }

  long requestBytes() {
    return layers * layerBytes();
  }

  /** The prefill's layered region: every request, back to back. */
  long sourceBytes() {
    return requests * requestBytes();
  }

  /** Where layer {@code k} of request {@code r} starts in the prefill's layered region. */
  long sourceOffset(int r, int k) {
    return r * requestBytes() + k * layerBytes();
  }

  /** The pattern seed of request {@code r}'s layers; layer k starts at position k x layerBytes. */
  long contentSeed(int r) {
    return KvPlan.mix(seed ^ 0x6c61796572L, r, -2);
  }

  /**
   * The byte the {@code --corrupt-one-block} hook also damages in the layered region: a middle
   * request, a middle layer, a byte in the middle of a page.
   */
  record Corruption(int request, int layer, long byteInLayer) {
    String name() {
      return "request " + request + " layer " + layer;
    }
  }

  Corruption corruption() {
    return new Corruption((requests - 1) / 2, layers / 2, layerBytes() / 2 + pageBytes / 2 + 1);
  }

  /** The pattern seed of the decode side's guard bytes. */
  long guardSeed() {
    return KvPlan.mix(seed, 0x6c677561L, 0x7264L);
  }

  /**
   * Where each layer lands on the decode side, by {@code r * layers + k}, and the region's size:
   * every layer after a gap of 1..4096 bytes, and a tail guard.
   */
  record Destination(long[] offsets, long bytes) {}

  Destination destination() {
    Random random = new Random(seed ^ 0x6c6179L);
    long[] offsets = new long[requests * layers];
    long at = 0;
    for (int i = 0; i < offsets.length; i++) {
      at += 1 + random.nextInt(4096);
      offsets[i] = at;
      at += layerBytes();
    }
    return new Destination(offsets, at + 4096 + 7);
  }

  /** The arguments that give this layout to {@link PrefillMain} (the seed is the plan's). */
  java.util.List<String> toArgs() {
    return java.util.List.of(
        "--layered",
        Integer.toString(requests),
        Integer.toString(layers),
        Integer.toString(pages),
        Long.toString(pageBytes));
  }
}
