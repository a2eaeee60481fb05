package io.orbite.engine.batch;

import io.orbite.engine.spi.Lifecycle;

/**
 * One allocation of a batch, from {@code allocateBatch} to {@code free}: the handle a caller holds
 * presents its id on every call. A batch kept for reuse is leased again under a new lease; an ended
 * lease never comes back, so a handle of an earlier allocation finds the batch freed.
 */
final class BatchLease {
  /**
   * Where a lease stands; it only moves forward:
   *
   * <pre>
   *   LEASED ──► FREED ──► RETIRED
   *      │                    ▲
   *      └────────────────────┘
   * </pre>
   *
   * <p>{@code LEASED}: its handle submits, awaits, resets and frees. {@code FREED}: the handle let
   * it go and the batch waits in the engine's pool for its next lease. {@code RETIRED}: the batch
   * was not kept for reuse (the pool was full, or the engine closes) and its owner actor stops;
   * terminal.
   */
  enum State implements Lifecycle.Stage<State> {
    LEASED,
    FREED,
    RETIRED;

    @Override
    public boolean mayMoveTo(State next) {
      return Lifecycle.forward(this, next);
    }

    @Override
    public boolean terminal() {
      return this == RETIRED;
    }
  }

  final long id;
  final Lifecycle<State> state = new Lifecycle<>(State.LEASED);

  BatchLease(long id) {
    this.id = id;
  }
}
