package io.orbite.engine.security;

/**
 * Who the other end of a connection proved to be in its handshake.
 *
 * @param name the engine name it gave; proven only when {@code nameProven}
 * @param epoch the epoch it gave, bound into its proof
 * @param nameProven whether it signed the exchange with the key this engine holds for {@code name}
 *     (a shared secret alone proves membership, not a name)
 */
public record AuthenticatedPeer(String name, long epoch, boolean nameProven) {
  /**
   * The name this peer proved, for allow-lists.
   *
   * @return {@link #name()} when proven, else null
   */
  public String provenName() {
    return nameProven ? name : null;
  }
}
