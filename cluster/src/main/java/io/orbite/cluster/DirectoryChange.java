package io.orbite.cluster;

import java.time.Instant;

/**
 * A change of the directory as this engine's replica saw it ({@link PeerDirectory#changes()}).
 * Changes about other engines only; events carry no authority (C3).
 */
public sealed interface DirectoryChange {
  /**
   * The engine the change is about.
   *
   * @return its name
   */
  String name();

  /**
   * When this replica saw it.
   *
   * @return the wall-clock time
   */
  Instant at();

  /**
   * An engine appeared under a name this replica did not list.
   *
   * @param name the engine's name
   * @param at when
   * @param entry what it published
   */
  record Joined(String name, Instant at, DirectoryEntry entry) implements DirectoryChange {}

  /**
   * The same incarnation published something else (its regions or transports).
   *
   * @param name the engine's name
   * @param at when
   * @param previous what it published before
   * @param entry what it publishes now
   */
  record Updated(String name, Instant at, DirectoryEntry previous, DirectoryEntry entry)
      implements DirectoryChange {}

  /**
   * A new incarnation (another epoch, or another endpoint) publishes under the name: this engine's
   * entries for the previous one are checked and fenced.
   *
   * @param name the engine's name
   * @param at when
   * @param previous the incarnation listed before
   * @param entry the one listed now
   */
  record Restarted(String name, Instant at, DirectoryEntry previous, DirectoryEntry entry)
      implements DirectoryChange {}

  /**
   * The entry disappeared: its engine closed, or its member left or was removed from the cluster.
   *
   * @param name the engine's name
   * @param at when
   * @param previous what was listed
   * @param reason why, as far as this replica knows
   */
  record Removed(String name, Instant at, DirectoryEntry previous, String reason)
      implements DirectoryChange {}
}
