package io.orbite.engine.registry;

import java.util.Map;

/**
 * The registrations currently visible to peers, as last published by the {@link Registry} actor.
 * Lane threads read it without locks; only the Registry writes it.
 */
public final class RegistryView {
  private volatile Map<Long, Registration> visible = Map.of();

  /** The registration a peer may address by {@code regionId}, or {@code null}. */
  public Registration lookup(long regionId) {
    return visible.get(regionId);
  }

  public Map<Long, Registration> snapshot() {
    return visible;
  }

  void publish(Map<Long, Registration> next) {
    visible = Map.copyOf(next);
  }
}
