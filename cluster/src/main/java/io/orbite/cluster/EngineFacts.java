package io.orbite.cluster;

import io.orbite.config.DirectoryConfig;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the directory reads from and asks of its engine, in one place: whether it runs and is ready,
 * what it publishes, and the hint it passes on when a peer's entry changed ({@code checkPeer}).
 */
final class EngineFacts {
  private static final Logger LOG = LoggerFactory.getLogger(EngineFacts.class);

  private EngineFacts() {}

  /** Whether the engine runs (no close has begun). */
  static boolean running(TransferEngine engine) {
    return engine.owed().phase() == EngineOwed.Phase.RUNNING;
  }

  /** Whether the engine is ready to be listed (its application marked it so). */
  static boolean ready(TransferEngine engine) {
    return engine.isReady();
  }

  /** The transports the engine serves peers on. */
  static List<String> transports(TransferEngine engine) {
    List<String> transports = new ArrayList<>(List.of("TCP"));
    if (engine.config().shm().enabled()) {
      transports.add("SHM");
    }
    if (engine.config().rdma().enabled()) {
      transports.add("RDMA");
    }
    return transports;
  }

  /**
   * The engine's named regions that its {@code directory.publish} lets it publish, leaving out
   * every region with an allow-list: the directory is read by every member, and such a region is
   * meant to be known only to the peers it names (they find it in Describe, which hides it from the
   * others).
   */
  static List<DirectoryRegion> publishedRegions(TransferEngine engine) {
    DirectoryConfig publish = engine.config().directory();
    List<DirectoryRegion> regions = new ArrayList<>();
    for (RegisteredMemory memory : engine.localRegions()) {
      if (memory.allowedPeers() != null) {
        continue;
      }
      memory
          .name()
          .filter(publish::publishes)
          .ifPresent(
              name ->
                  regions.add(
                      new DirectoryRegion(
                          name, memory.regionId(), memory.lengthBytes(), memory.access())));
    }
    regions.sort(Comparator.comparing(DirectoryRegion::name));
    return regions;
  }

  /** The engine name the segment's Describe answer gave ("" when the peer did not send one). */
  static String describedName(RemoteSegment segment) {
    return segment.engineName();
  }

  /**
   * Tells the engine that the peer at {@code endpoint} may have restarted or gone: it Describes the
   * endpoint and fences or closes its entries there (the directory is a hint, Describe the
   * authority).
   */
  static void checkPeer(TransferEngine engine, String endpoint, String reason) {
    LOG.info("directory of {}: {}; checking {}", engine.config().name(), reason, endpoint);
    engine
        .checkPeer(endpoint, reason)
        .whenComplete(
            (check, failure) -> {
              if (failure != null) {
                LOG.debug(
                    "directory of {}: checking {} failed: {}",
                    engine.config().name(),
                    endpoint,
                    failure.toString());
              } else if (!check.fenced().isEmpty() || !check.lost().isEmpty()) {
                LOG.info(
                    "directory of {}: {} answers {}; fenced {}, lost {}",
                    engine.config().name(),
                    endpoint,
                    check.answering(),
                    check.fenced(),
                    check.lost());
              }
            });
  }
}
