package io.orbite.engine.spi;

import java.util.Map;

/**
 * The registrations currently visible to peers, as last published by the {@link Registry} actor.
 * Lane threads read it without locks; only the Registry writes it.
 */
public final class RegistryView {
  private volatile Map<Long, Registration> visible = Map.of();
  private volatile io.orbite.engine.wire.SharedHost sharedHost;
  private volatile String engineName = "";

  /**
   * Whether Describe answers say this engine is ready. Written after the registrations it covers
   * were published, and read by a Describe answer before their snapshot, so an answer that says
   * ready lists every range registered before {@link #markReady()} (both fields are volatile).
   */
  private volatile boolean ready = true;

  /**
   * The engine's name, published in Describe; {@code ""} until the engine sets it at start.
   *
   * @return the name
   */
  public String engineName() {
    return engineName;
  }

  /**
   * Set once by the engine at start, before any peer can describe it.
   *
   * @param name the engine's {@code EngineConfig.name}
   */
  public void publishEngineName(String name) {
    this.engineName = name;
  }

  /**
   * Whether Describe answers say this engine is ready.
   *
   * @return true unless the engine started with {@code listen.readyAtStart} off and has not been
   *     marked ready since
   */
  public boolean ready() {
    return ready;
  }

  /**
   * Set once at start, before any peer can describe the engine, from {@code listen.readyAtStart}.
   *
   * @param readyAtStart false to answer "not ready" until {@link #markReady()}
   */
  public void startReady(boolean readyAtStart) {
    this.ready = readyAtStart;
  }

  /**
   * Marks the engine ready from now on (idempotent): later Describe answers say ready, with every
   * range whose registration completed before this call.
   */
  public void markReady() {
    this.ready = true;
  }

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
