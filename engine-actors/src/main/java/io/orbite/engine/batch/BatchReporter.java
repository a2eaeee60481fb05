package io.orbite.engine.batch;

import io.orbite.engine.OwnerState;
import io.orbite.engine.view.OwnerBoard;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * Publishes one batch's state and charges to the owner view from the thread that changed it (a
 * caller or a lane): at once on a state change, else at most every 50 ms while receipts stream in;
 * a report skipped meanwhile is made up by the batch's actor a moment later ({@code Refresh}), so
 * the view never stays behind. The state is derived from the batch's lease and ledger, never kept
 * beside them. Used under the batch's monitor.
 */
final class BatchReporter {
  /**
   * The owner view is refreshed at most this often while tasks run, and at once on a state change.
   */
  private static final long REPORT_EVERY_NANOS = 50_000_000L;

  /** The owner view's charges of a batch whose ledger is empty. */
  private static final Map<String, Long> NO_CHARGES =
      Map.of(
          "tasks",
          0L,
          "pendingTasks",
          0L,
          "inflightBytes",
          0L,
          "owedReceipts",
          0L,
          "loans",
          0L,
          "heldTasks",
          0L);

  private final OwnerBoard board;
  private final TaskLedger ledger;

  /** The actor's key in the owner view and the batch's detail line, made at its first report. */
  private String key;

  private String detail;
  private OwnerState reportedState;
  private long reportedAtNanos;
  private boolean refreshAsked;

  BatchReporter(OwnerBoard board, TaskLedger ledger) {
    this.board = board;
    this.ledger = ledger;
  }

  /** The actor made up a skipped report: the next skip asks it again. */
  void refreshed() {
    refreshAsked = false;
  }

  /**
   * Publishes the batch's state ({@code pooled}, {@code open} or {@code quarantined}) and charges:
   * at once when forced or when the state changed, else at most every 50 ms.
   *
   * @param actor the batch's owner actor (null before it is bound: nothing is published)
   * @param leased whether a lease holds the batch
   * @param force publish now
   */
  void report(ActorRef<BatchActor.Command> actor, boolean leased, boolean force) {
    if (actor == null) {
      return;
    }
    OwnerState state =
        !leased ? OwnerState.POOLED : ledger.held() > 0 ? OwnerState.QUARANTINED : OwnerState.OPEN;
    long now = System.nanoTime();
    if (!force && state == reportedState && now - reportedAtNanos < REPORT_EVERY_NANOS) {
      if (!refreshAsked) {
        refreshAsked = true;
        actor.tell(BatchActor.Refresh.INSTANCE);
      }
      return;
    }
    reportedState = state;
    reportedAtNanos = now;
    if (key == null) {
      key = board.key(actor);
      detail = "capacity " + ledger.capacity();
    }
    // A lease and a free find the ledger empty: their report shares one map of zeros.
    board.publish(
        key,
        "BatchActor",
        state,
        ledger.size() == 0 && ledger.loansHeld() == 0 && ledger.owedReceipts() == 0
            ? NO_CHARGES
            : Map.of(
                "tasks", (long) ledger.size(),
                "pendingTasks", (long) ledger.pending(),
                "inflightBytes", ledger.pendingBytes(),
                "owedReceipts", ledger.owedReceipts(),
                "loans", (long) ledger.loansHeld(),
                "heldTasks", (long) ledger.held()),
        detail);
  }
}
