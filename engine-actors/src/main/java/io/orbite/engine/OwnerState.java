package io.orbite.engine;

/**
 * Where an owner actor stands, as the owner view, the dashboard and the metrics show it: one value
 * per behaviour an owner can be in, each in one coarse {@link OwnerView.StateClass}.
 */
public enum OwnerState {
  /** Setting up: connecting lanes, proving a peer's memory. */
  OPENING(OwnerView.StateClass.ACTIVE),
  /** Doing its work (an endpoint, the segment table). */
  ACTIVE(OwnerView.StateClass.ACTIVE),
  /** A transport or the control service accepting work. */
  SERVING(OwnerView.StateClass.ACTIVE),
  /** Admitting (Admission), or a leased batch. */
  OPEN(OwnerView.StateClass.ACTIVE),
  /** The guardian or a ring lane running. */
  RUNNING(OwnerView.StateClass.ACTIVE),
  /** A freed batch kept for reuse. */
  POOLED(OwnerView.StateClass.ACTIVE),
  /** Letting its in-flight work finish before it ends. */
  DRAINING(OwnerView.StateClass.DRAINING),
  /** Stopping its children. */
  STOPPING(OwnerView.StateClass.DRAINING),
  /** Closing its lanes or files. */
  CLOSING(OwnerView.StateClass.DRAINING),
  /** Refusing new work: its peer incarnation was replaced, or its side of the engine is closed. */
  FENCED(OwnerView.StateClass.FENCED),
  /** Closed: nothing more runs through it. */
  CLOSED(OwnerView.StateClass.FENCED),
  /** Stopped serving (the control service after closeSource). */
  STOPPED(OwnerView.StateClass.FENCED),
  /**
   * Off by configuration (a transport whose {@code enabled} key is false): it refuses work saying
   * so, and holds nothing. Not a fault, so not shown as fenced.
   */
  OFF(OwnerView.StateClass.OFF),
  /**
   * Could not prove its workers let go, or hit an unexpected exception: what it holds stays held.
   */
  QUARANTINED(OwnerView.StateClass.QUARANTINED);

  private final OwnerView.StateClass stateClass;

  OwnerState(OwnerView.StateClass stateClass) {
    this.stateClass = stateClass;
  }

  /**
   * The coarse class metrics count it in.
   *
   * @return its class
   */
  public OwnerView.StateClass stateClass() {
    return stateClass;
  }

  /**
   * Its name in lower case, as the dashboard and the metrics' labels show it.
   *
   * @return for example {@code "fenced"}
   */
  public String label() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
