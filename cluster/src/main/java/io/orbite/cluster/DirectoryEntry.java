package io.orbite.cluster;

import io.orbite.engine.SegmentDescriptor;
import java.util.List;
import java.util.Optional;

/**
 * What one engine publishes in the directory: its name, its incarnation (endpoint and epoch), its
 * transports and its named regions, and the cluster member it runs in. Never memory contents or
 * keys. A hint: opening it is checked through Describe, the authority (C3).
 *
 * @param name the engine's name ({@code EngineConfig.name}), the directory's key
 * @param segment the incarnation: where it listens and its epoch
 * @param transports the transports it serves ({@code "TCP"}, {@code "SHM"}, {@code "RDMA"})
 * @param regions its published named regions, in name order
 * @param member the cluster member's address ({@code pekko://system@host:port})
 */
public record DirectoryEntry(
    String name,
    SegmentDescriptor segment,
    List<String> transports,
    List<DirectoryRegion> regions,
    String member) {
  /** Copies the lists. */
  public DirectoryEntry {
    transports = List.copyOf(transports);
    regions = List.copyOf(regions);
  }

  /**
   * The published region named {@code regionName}.
   *
   * @param regionName the region's name
   * @return the region, or empty when this entry does not publish it
   */
  public Optional<DirectoryRegion> region(String regionName) {
    return regions.stream().filter(r -> r.name().equals(regionName)).findFirst();
  }
}
