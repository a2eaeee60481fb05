package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.spi.Lifecycle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The lifecycle of one RC QP ({@link RcQp}) as one state value, moved forward by compare-and-set
 * and readable by any thread with one volatile read:
 *
 * <pre>
 *   CONNECTING ──► READY ──► BROKEN ──► RETIRING ──► DESTROY_CLAIMED ──┬──► DESTROYED
 *                                                                     └──► KEPT
 * </pre>
 *
 * <p>Each state before DESTROY_CLAIMED may also skip ahead to any later one up to it (a paused
 * rail's QP is BROKEN without ever being READY; a QP never posted on is claimed for its destroy
 * from wherever it stands), and only a claimed destroy ends in DESTROYED or KEPT.
 *
 * <p>{@code CONNECTING}: made (its CQ entries reserved, counted on its lane), not yet connected to
 * the peer's QP. {@code READY}: connected; work is posted on it. {@code BROKEN}: nothing new is
 * posted on it: it erred, its lane faulted, its owner is closing it, or its rail was paused while
 * it connected. {@code RETIRING}: it alone is being retired by its owner (to ERR, flushed, then
 * destroyed on its lane), so that its slot can be repaired. {@code DESTROY_CLAIMED}: the one call
 * of {@code ibv_destroy_qp} was claimed (by its lane, or by its owner for a QP never posted on), so
 * it is never called twice (spec 001). {@code DESTROYED}: the destroy succeeded, the native proof
 * that none of its work requests can still touch memory. {@code KEPT}: the destroy failed; the QP
 * is kept for good with what it holds, never destroyed again.
 *
 * <p>The first move out of READY (or CONNECTING) records why, and which error kind the work it held
 * gets while its channel is still active: {@code PEER_LOST} when a work request of it failed on the
 * wire (its connection to the peer is gone, as a TCP lane's broken connection), else {@code
 * UNAVAILABLE}. Racing movers (the lane, the monitor, the owner, a repair) never undo each other;
 * {@link #settled} completes once it is DESTROYED or KEPT.
 */
final class QpLifecycle {
  /** Where a QP stands; the order of the constants is the only order a QP moves in. */
  enum State implements Lifecycle.Stage<State> {
    CONNECTING,
    READY,
    BROKEN,
    RETIRING,
    DESTROY_CLAIMED,
    DESTROYED,
    KEPT;

    /** DESTROYED and KEPT: nothing moves a QP out of them. */
    @Override
    public boolean terminal() {
      return this == DESTROYED || this == KEPT;
    }

    /** Forward, and only a claimed destroy ends in DESTROYED or KEPT. */
    @Override
    public boolean mayMoveTo(State next) {
      return Lifecycle.forward(this, next) && (!next.terminal() || this == DESTROY_CLAIMED);
    }
  }

  /** Why the QP stopped taking work, and the kind its work gets while the channel is active. */
  private record Stop(String reason, ErrorKind kind) {}

  private final Lifecycle<State> state = new Lifecycle<>(State.CONNECTING);
  private final AtomicReference<Stop> stop = new AtomicReference<>();
  private final CompletableFuture<State> settled = new CompletableFuture<>();

  /** The state now. */
  State state() {
    return state.state();
  }

  /** Whether work may be posted on it: CONNECTING or READY. */
  boolean takesWork() {
    return state.state().ordinal() <= State.READY.ordinal();
  }

  /** Whether it stopped taking work (BROKEN or later). */
  boolean stopped() {
    return !takesWork();
  }

  /** Whether it is retiring alone, or its destroy was claimed, or it ended. */
  boolean retiringOrLater() {
    return state.state().ordinal() >= State.RETIRING.ordinal();
  }

  /** Whether its destroy was claimed (or it ended). */
  boolean destroyClaimed() {
    return state.state().ordinal() >= State.DESTROY_CLAIMED.ordinal();
  }

  /** Whether it was destroyed. */
  boolean destroyed() {
    return state.is(State.DESTROYED);
  }

  /** CONNECTING → READY; false when it stopped meanwhile. */
  boolean connected() {
    return state.moveTo(State.READY);
  }

  /**
   * Stops it taking work (→ BROKEN), recording why if it is the first stop.
   *
   * @return true when this call moved it
   */
  boolean stop(String reason, ErrorKind kind) {
    stop.compareAndSet(null, new Stop(reason, kind));
    return state.moveTo(State.BROKEN);
  }

  /**
   * Claims its retirement alone (→ RETIRING), recording why if it is the first stop.
   *
   * @return true for the one caller that retires it; false when it is retiring or closing already
   */
  boolean retire(String reason, ErrorKind kind) {
    stop.compareAndSet(null, new Stop(reason, kind));
    return state.moveTo(State.RETIRING);
  }

  /** Claims the one destroy call (→ DESTROY_CLAIMED): true for the first caller only. */
  boolean claimDestroy() {
    return state.moveTo(State.DESTROY_CLAIMED);
  }

  /** The claimed destroy ended: DESTROYED when {@code ok}, else KEPT for good. */
  void destroyEnded(boolean ok) {
    State end = ok ? State.DESTROYED : State.KEPT;
    if (state.moveTo(end)) {
      settled.complete(end);
    }
  }

  /** Completes with DESTROYED or KEPT once the QP settled. */
  CompletableFuture<State> settled() {
    return settled;
  }

  /** Why it stopped taking work; null while it takes work. */
  String reason() {
    if (takesWork()) {
      return null;
    }
    Stop s = stop.get();
    return s == null ? "its QP was destroyed" : s.reason();
  }

  /** The kind the work it held gets while its channel is active: PEER_LOST or UNAVAILABLE. */
  ErrorKind kind() {
    Stop s = stop.get();
    return s == null ? ErrorKind.UNAVAILABLE : s.kind();
  }

  @Override
  public String toString() {
    return state.toString();
  }
}
