package io.orbite.engine.spi;

import java.util.Map;

/**
 * The registrations currently visible to peers, as last published by the {@link Registry} actor.
 * Lane threads read it without locks; only the Registry writes it.
 */
public final class RegistryView {
  private volatile Map<Long, Registration> visible = Map.of();
  private volatile io.orbite.engine.wire.SharedHost sharedHost;

  /**
   * This incarnation's shared-memory identity, published in Describe beside the registrations that
   * are exported through SHM; {@code null} when the engine exports nothing.
   */
  public io.orbite.engine.wire.SharedHost sharedHost() {
    return sharedHost;
  }

  /** Set once by the engine at start, before any peer can describe it. */
  public void publishSharedHost(io.orbite.engine.wire.SharedHost host) {
    this.sharedHost = host;
  }

  /** The registration a peer may address by {@code regionId}, or {@code null}. */
  public Registration lookup(long regionId) {
    return visible.get(regionId);
  }

  public Map<Long, Registration> snapshot() {
    return visible;
  }

  public void publish(Map<Long, Registration> next) {
    visible = Map.copyOf(next);
  }
}
