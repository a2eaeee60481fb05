package io.orbite.cluster;

import io.orbite.config.DirectoryConfig;
import java.time.Duration;
import org.apache.pekko.cluster.ddata.typed.javadsl.Replicator;

/** The Distributed Data consistency levels that {@code directory.*Consistency} name. */
final class Consistency {
  private Consistency() {}

  /** {@code directory.writeConsistency} with {@code directory.consistencyTimeoutMillis}. */
  static Replicator.WriteConsistency write(DirectoryConfig config) {
    Duration timeout = Duration.ofMillis(config.consistencyTimeoutMillis());
    return switch (config.writeConsistency()) {
      case "local" -> Replicator.writeLocal();
      case "all" -> new Replicator.WriteAll(timeout);
      default -> new Replicator.WriteMajority(timeout);
    };
  }

  /** {@code directory.readConsistency} with {@code directory.consistencyTimeoutMillis}. */
  static Replicator.ReadConsistency read(DirectoryConfig config) {
    Duration timeout = Duration.ofMillis(config.consistencyTimeoutMillis());
    return switch (config.readConsistency()) {
      case "local" -> Replicator.readLocal();
      case "all" -> new Replicator.ReadAll(timeout);
      default -> new Replicator.ReadMajority(timeout);
    };
  }
}
