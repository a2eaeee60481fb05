package io.orbite.cluster;

import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * An engine's membership in the cluster's peer directory (SKELETON: the agreed signatures of issue
 * 40; helper B builds the bodies).
 */
public final class PeerDirectory implements AutoCloseable {
  private PeerDirectory() {}

  /**
   * Joins {@code engine} (spawned in a clustered ActorSystem) to the directory.
   *
   * @param engine the engine
   * @return the directory
   */
  public static PeerDirectory join(TransferEngine engine) {
    throw new UnsupportedOperationException("issue 40: not built yet");
  }

  /**
   * Opens the current incarnation of the engine named {@code engineName}, checked through Describe.
   *
   * @param engineName the engine's name
   * @return a stage with the segment
   */
  public CompletionStage<RemoteSegment> openAsync(String engineName) {
    throw new UnsupportedOperationException("issue 40: not built yet");
  }

  /**
   * Blocking form of {@link #openAsync}.
   *
   * @param engineName the engine's name
   * @param timeout how long to wait
   * @return the segment
   */
  public RemoteSegment open(String engineName, Duration timeout) {
    throw new UnsupportedOperationException("issue 40: not built yet");
  }

  /**
   * The region {@code regionName} that engine {@code engineName} published.
   *
   * @param engineName the engine's name
   * @param regionName the region's name
   * @return the region
   */
  public DirectoryRegion region(String engineName, String regionName) {
    throw new UnsupportedOperationException("issue 40: not built yet");
  }

  /**
   * What is published now, as this replica sees it.
   *
   * @return the entries, in name order
   */
  public List<DirectoryEntry> members() {
    throw new UnsupportedOperationException("issue 40: not built yet");
  }

  /**
   * The directory's changes about other engines.
   *
   * @return a source of changes
   */
  public Source<DirectoryChange, NotUsed> changes() {
    throw new UnsupportedOperationException("issue 40: not built yet");
  }

  /** Removes this engine's entry and leaves the directory. */
  @Override
  public void close() {
    throw new UnsupportedOperationException("issue 40: not built yet");
  }
}
