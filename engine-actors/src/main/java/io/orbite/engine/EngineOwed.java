package io.orbite.engine;

import java.util.ArrayList;
import java.util.List;

/**
 * What an engine still has charged: the admission budgets in use (batches not yet freed, tasks and
 * bytes in flight, peer endpoints), the registrations it holds and the loans workers hold on them.
 * Returned by {@link TransferEngine#owed()}; logged when a close does not finish in time.
 *
 * <p>Three phases:
 *
 * <ul>
 *   <li>{@link Phase#RUNNING}: every figure was read just now ({@code live} is true).
 *   <li>{@link Phase#CLOSING}: a close was requested and has not been confirmed (in progress, or it
 *       timed out). Every figure is still read now ({@code live} is true): the budgets come from
 *       the engine's admission gate, which answers without its actors.
 *   <li>{@link Phase#CLOSED}: the engine confirmed its close. Its budgets ended with its actors, so
 *       batches, tasks, bytes and endpoints are 0; {@code registrations} counts ranges whose memory
 *       is still retained because workers held loans on them at close, and {@code loans} those
 *       loans.
 * </ul>
 *
 * @param engine the engine's name and incarnation ({@code name@host:port@epoch})
 * @param phase where the engine is in its life
 * @param live whether the budget figures were read now; always true since they are read from the
 *     engine's admission gate rather than asked of an actor (kept for callers that test it)
 * @param batches batches charged and not yet freed
 * @param tasksInFlight tasks admitted and not yet returned to the budget
 * @param bytesInFlight bytes of those tasks
 * @param endpoints peer endpoints (opened segments) charged
 * @param registrations registered ranges (visible to peers while running; retained after close)
 * @param loans loans workers hold on those ranges
 * @param quarantined owners that could not prove their drain within the destruction window, with
 *     what each retains (C5, C7); they stay listed after close until their workers let go
 */
public record EngineOwed(
    String engine,
    Phase phase,
    boolean live,
    int batches,
    long tasksInFlight,
    long bytesInFlight,
    int endpoints,
    int registrations,
    long loans,
    List<QuarantinedOwner> quarantined) {

  /** Copies {@code quarantined} into an unmodifiable list. */
  public EngineOwed {
    quarantined = List.copyOf(quarantined);
  }

  /** Where the engine is in its life when the figures were taken. */
  public enum Phase {
    /** The engine runs: every figure was read just now. */
    RUNNING,
    /** A close was requested and has not been confirmed (it is in progress, or it timed out). */
    CLOSING,
    /**
     * The engine confirmed its close: only memory retained under loans and quarantined owners
     * remain.
     */
    CLOSED
  }

  /**
   * Whether nothing at all is charged: no batch, task, byte, endpoint, registration, loan or
   * quarantined owner.
   *
   * @return true when every figure is 0 and {@link #quarantined()} is empty, as after a clean close
   */
  public boolean isClear() {
    return batches == 0
        && tasksInFlight == 0
        && bytesInFlight == 0
        && endpoints == 0
        && registrations == 0
        && loans == 0
        && quarantined.isEmpty();
  }

  /**
   * Whether no work is outstanding: no task or byte in flight, no loan and no quarantined owner
   * (batches, endpoints and registrations may remain).
   *
   * @return true when {@link #tasksInFlight()}, {@link #bytesInFlight()} and {@link #loans()} are 0
   *     and {@link #quarantined()} is empty
   */
  public boolean isIdle() {
    return tasksInFlight == 0 && bytesInFlight == 0 && loans == 0 && quarantined.isEmpty();
  }

  /**
   * For example {@code "engine a@127.0.0.1:4000@1f (running): 2 batch(es), 5 task(s) / 1048576 B in
   * flight, 1 endpoint(s), 3 registration(s) with 5 loan(s)"}, followed by one line per quarantined
   * owner.
   */
  @Override
  public String toString() {
    StringBuilder b =
        new StringBuilder("engine ").append(engine).append(" (").append(phase.name().toLowerCase());
    b.append("): ");
    if (isClear()) {
      return b.append(phase == Phase.CLOSED ? "closed, owes nothing" : "owes nothing").toString();
    }
    List<String> parts = new ArrayList<>();
    parts.add(batches + " batch(es)");
    parts.add(tasksInFlight + " task(s) / " + bytesInFlight + " B in flight");
    parts.add(endpoints + " endpoint(s)");
    parts.add(
        registrations
            + (phase == Phase.CLOSED ? " retained registration(s)" : " registration(s)")
            + " with "
            + loans
            + " loan(s)");
    b.append(String.join(", ", parts));
    if (!quarantined.isEmpty()) {
      b.append("; ").append(quarantined.size()).append(" quarantined owner(s):");
      quarantined.forEach(q -> b.append(System.lineSeparator()).append("  ").append(q));
    }
    return b.toString();
  }
}
