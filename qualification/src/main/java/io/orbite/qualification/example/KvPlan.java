package io.orbite.qualification.example;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * The prefill side's KV pool: one region, and where in it each block of each request sits.
 * Everything follows from the parameters, so a run can be repeated.
 *
 * <ul>
 *   <li>Request {@code r} uses one page size for all its blocks, one of {@code page}, {@code
 *       page/2}, {@code page/4}, {@code page/8} (2 MiB .. 256 KiB by default), picked by a hash of
 *       {@code r}: different requests (models, layers, tenants) use different page sizes.
 *   <li>Every block but the last is a full page; the last is partly filled (a prompt rarely ends on
 *       a page boundary), so its length is usually odd.
 *   <li>Blocks sit in the pool in a shuffled order, 4 KiB aligned, with the pool's free space
 *       spread evenly between them, so one request's blocks are scattered over the pool as in a
 *       paged KV cache.
 *   <li>Block {@code b} of request {@code r} holds pattern {@link #contentSeed(int, int)} from
 *       position 0, independent of where it sits.
 * </ul>
 *
 * @param requests number of requests
 * @param blocksPerRequest KV blocks per request
 * @param pageBytes the largest page
 * @param poolBytes the smallest pool; it grows to hold every block when needed
 * @param seed the seed of sizes, placement and contents
 */
public record KvPlan(
    int requests, int blocksPerRequest, long pageBytes, long poolBytes, long seed) {
  /** Smallest accepted {@link #pageBytes()}: 4 KiB (so the smallest page is 512 bytes). */
  public static final long MIN_PAGE_BYTES = 4096;

  /** Where blocks start in the pool: page aligned. */
  public static final long ALIGN = 4096;

  public KvPlan {
    if (requests < 1 || blocksPerRequest < 1) {
      throw new IllegalArgumentException("requests and blocks per request must be >= 1");
    }
    if (pageBytes < MIN_PAGE_BYTES || Long.bitCount(pageBytes) != 1) {
      throw new IllegalArgumentException(
          "page size must be a power of two >= " + MIN_PAGE_BYTES + " B, got " + pageBytes);
    }
    if (poolBytes < 0) {
      throw new IllegalArgumentException("pool size must be >= 0");
    }
    if ((long) requests * blocksPerRequest > 1_000_000) {
      throw new IllegalArgumentException("at most 1,000,000 blocks");
    }
  }

  /** A block chosen for the deliberate corruption test hook, and the byte in it that goes wrong. */
  public record Corruption(int request, int block, long byteInBlock) {
    public String name() {
      return "request " + request + " block " + block;
    }
  }

  public int totalBlocks() {
    return requests * blocksPerRequest;
  }

  /** Bytes the blocks take in the pool, each rounded up to {@link #ALIGN}. */
  public long neededBytes() {
    long sum = 0;
    for (int r = 0; r < requests; r++) {
      for (int b = 0; b < blocksPerRequest; b++) {
        sum += aligned(lengthOf(r, b));
      }
    }
    return sum;
  }

  /** Size of the registered KV region: the pool, or more when the blocks need it. */
  public long regionBytes() {
    return Math.max(aligned(poolBytes), neededBytes());
  }

  private static long aligned(long bytes) {
    return (bytes + ALIGN - 1) / ALIGN * ALIGN;
  }

  /** Request {@code r}'s page size. */
  public long pageOf(int request) {
    return pageBytes >> (mix(seed, request, -1) & 3);
  }

  public long lengthOf(int request, int block) {
    long page = pageOf(request);
    if (block < blocksPerRequest - 1) {
      return page;
    }
    // The tail page is 1/2 .. full.
    return page - Math.floorMod(mix(seed, request, block), page / 2);
  }

  /** The pattern seed of a block's contents. */
  public long contentSeed(int request, int block) {
    return mix(seed ^ 0x6b76L, request, block);
  }

  /** Every block, request by request, placed in the pool region {@code regionId}. */
  public List<KvBlock> blocks(long regionId) {
    int n = totalBlocks();
    // Pool order: a shuffle of all blocks; the free space goes in equal aligned gaps between them.
    List<Integer> order = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      order.add(i);
    }
    Collections.shuffle(order, new Random(seed));
    long gap = (regionBytes() - neededBytes()) / n / ALIGN * ALIGN;
    long[] offsets = new long[n];
    long at = 0;
    for (int i : order) {
      offsets[i] = at;
      at += aligned(lengthOf(i / blocksPerRequest, i % blocksPerRequest)) + gap;
    }
    List<KvBlock> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      int r = i / blocksPerRequest;
      int b = i % blocksPerRequest;
      out.add(new KvBlock(r, b, regionId, offsets[i], lengthOf(r, b), contentSeed(r, b)));
    }
    return out;
  }

  /**
   * The block the {@code --corrupt-one-block} hook damages: a middle request, a middle block, a
   * middle byte.
   */
  public Corruption corruption() {
    int r = (requests - 1) / 2;
    int b = blocksPerRequest / 2;
    return new Corruption(r, b, lengthOf(r, b) / 2 + 1);
  }

  /** A 64-bit mix of {@code (seed, a, b)} (SplitMix64 finaliser). */
  static long mix(long seed, long a, long b) {
    long x =
        seed * 0x9E3779B97F4A7C15L
            + a * 0xC2B2AE3D27D4EB4FL
            + b * 0x165667B19E3779F9L
            + 0x27D4EB2F165667C5L;
    x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
    return x ^ (x >>> 31);
  }

  /** The command line arguments that give this plan to {@link PrefillMain}. */
  List<String> toArgs() {
    return List.of(
        "--requests",
        Integer.toString(requests),
        "--blocks",
        Integer.toString(blocksPerRequest),
        "--page-bytes",
        Long.toString(pageBytes),
        "--pool-bytes",
        Long.toString(poolBytes),
        "--seed",
        Long.toString(seed));
  }
}
