package io.orbite.engine;

/** Where a task stands. Terminal states never change again. */
public enum TaskState {
  /** Admitted and not yet terminal: workers may still touch its memory. */
  PENDING,
  /** Every slice confirmed (C4). */
  COMPLETED,
  /** Failed after local drain (C5): no worker can still touch its memory. */
  FAILED,
  /** Drain could not be proven within the destruction window; memory and charges retained. */
  UNQUIESCED;

  /**
   * Whether this state is final.
   *
   * @return true for COMPLETED, FAILED and UNQUIESCED; false for PENDING
   */
  public boolean isTerminal() {
    return this != PENDING;
  }
}
