package io.orbite.engine.view;

/**
 * Where an owner actor stands, as the owner view, the dashboard and the metrics show it: one value
 * per behaviour an owner can be in, each in one coarse {@link OwnerBoard.StateClass}.
 */
public enum OwnerState {
  /** Setting up: connecting lanes, proving a peer's memory. */
  OPENING(OwnerBoard.StateClass.ACTIVE),
  /** Doing its work (an endpoint, the segment table). */
  ACTIVE(OwnerBoard.StateClass.ACTIVE),
  /** A transport or the control service accepting work. */
  SERVING(OwnerBoard.StateClass.ACTIVE),
  /** Admitting (Admission), or a leased batch. */
  OPEN(OwnerBoard.StateClass.ACTIVE),
  /** The guardian or a ring lane running. */
  RUNNING(OwnerBoard.StateClass.ACTIVE),
  /** A freed batch kept for reuse. */
  POOLED(OwnerBoard.StateClass.ACTIVE),
  /** Letting its in-flight work finish before it ends. */
  DRAINING(OwnerBoard.StateClass.DRAINING),
  /** Stopping its children. */
  STOPPING(OwnerBoard.StateClass.DRAINING),
  /** Closing its lanes or files. */
  CLOSING(OwnerBoard.StateClass.DRAINING),
  /** Refusing new work: its peer incarnation was replaced, or its side of the engine is closed. */
  FENCED(OwnerBoard.StateClass.FENCED),
  /** Closed: nothing more runs through it. */
  CLOSED(OwnerBoard.StateClass.FENCED),
  /** Stopped serving (the control service after closeSource). */
  STOPPED(OwnerBoard.StateClass.FENCED),
  /**
   * Could not prove its workers let go, or hit an unexpected exception: what it holds stays held.
   */
  QUARANTINED(OwnerBoard.StateClass.QUARANTINED);

  private final OwnerBoard.StateClass stateClass;

  OwnerState(OwnerBoard.StateClass stateClass) {
    this.stateClass = stateClass;
  }

  /** The coarse class metrics count it in. */
  public OwnerBoard.StateClass stateClass() {
    return stateClass;
  }

  /** Its name in lower case, as the dashboard and the metrics' labels show it ({@code fenced}). */
  public String label() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
