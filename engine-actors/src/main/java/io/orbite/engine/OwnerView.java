package io.orbite.engine;

import java.util.List;
import java.util.Map;

/**
 * What the engine's owner board knew at one instant ({@link TransferEngine#ownerView()}): every
 * live owner actor with its state and charges, the owners that stopped (newest first, at most 64),
 * and the peer table. Each part is consistent on its own. The dashboard and the metrics read only
 * this and {@link EngineCounters}.
 *
 * @param version increases on every change; a reader can skip work when it did not move
 * @param owners the live owners, by path
 * @param retired the owners that stopped, newest first
 * @param peers the segment table's entries
 */
public record OwnerView(
    long version, List<Owner> owners, List<Retired> retired, List<PeerEntry> peers) {

  /** Copies the lists, so that a view never changes after it was taken. */
  public OwnerView {
    owners = List.copyOf(owners);
    retired = List.copyOf(retired);
    peers = List.copyOf(peers);
  }

  /** The coarse state classes metrics count owners by (each {@link OwnerState} is in one). */
  public enum StateClass {
    /** Working, or setting up to. */
    ACTIVE,
    /** Letting its work finish. */
    DRAINING,
    /** Refusing new work, or closed. */
    FENCED,
    /** Keeping what it holds because it could not prove its workers let go. */
    QUARANTINED,
    /** Off by configuration: it refuses work saying so, and holds nothing. */
    OFF;

    /**
     * Its name in lower case, as the metrics' labels show it.
     *
     * @return for example {@code "fenced"}
     */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * One live owner.
   *
   * @param path its place in the supervision tree, for example {@code
   *     engine/transport-tcp/endpoint-4000-1f-1}
   * @param kind the actor's class, for example {@code TcpEndpoint}
   * @param state its behaviour now
   * @param charges what it holds, by name (tasks, bytes, loans, lanes...)
   * @param detail a short explanation (why fenced, which peer...), may be empty
   * @param sinceMillis when it entered this state (epoch milliseconds)
   */
  public record Owner(
      String path,
      String kind,
      OwnerState state,
      Map<String, Long> charges,
      String detail,
      long sinceMillis) {
    /**
     * The coarse class of its state.
     *
     * @return {@code state().stateClass()}
     */
    public StateClass stateClass() {
      return state.stateClass();
    }
  }

  /**
   * An owner that stopped, with the last state it reported.
   *
   * @param path its place in the supervision tree
   * @param kind the actor's class
   * @param lastState the last state it reported
   * @param detail its last explanation, may be empty
   * @param atMillis when it stopped (epoch milliseconds)
   */
  public record Retired(
      String path, String kind, OwnerState lastState, String detail, long atMillis) {}
}
