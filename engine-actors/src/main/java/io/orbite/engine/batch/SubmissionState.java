package io.orbite.engine.batch;

import io.orbite.engine.Notification;
import io.orbite.engine.NotificationResult;
import io.orbite.engine.SubmissionStatus;
import io.orbite.engine.spi.NotificationSender;
import io.orbite.engine.spi.PeerSegment;
import java.util.concurrent.CompletableFuture;

/**
 * The tasks one {@code submit} admitted, counted down as they end, and the notification attached to
 * them. Every field is guarded by the monitor of the {@link BatchCore} that made it: what a
 * submission's await, completion or status costs is what its own tasks cost, however many tasks the
 * batch holds.
 */
public final class SubmissionState {
  /** The batch index of the first task. */
  final int first;

  /** How many tasks the submission admitted. */
  final int count;

  /** The ledger generation it belongs to: a {@code reset} ends its access to the ledger. */
  final long generation;

  /** Tasks not yet terminal. */
  int pending;

  /** Tasks that ended without completing (their notification, if any, is never sent). */
  int failed;

  /** The first task that failed, for the detail of a notification not sent. */
  int firstFailed = -1;

  /** Callers blocked in {@link BatchCore#await(SubmissionState, long)} on this submission. */
  int blockedAwaits;

  /** The future of {@link BatchCore#completion(SubmissionState)}, made on first demand. */
  CompletableFuture<SubmissionStatus> completion;

  /** The attached notification, or null. */
  final Notification notification;

  /** The peer the notification goes to (every request of the submission names it), or null. */
  final PeerSegment peer;

  /** Sends the notification once every task completed; null when none is attached. */
  final NotificationSender sender;

  /** What became of the notification. */
  NotificationResult notificationResult;

  SubmissionState(
      int first,
      int count,
      long generation,
      Notification notification,
      PeerSegment peer,
      NotificationSender sender) {
    this.first = first;
    this.count = count;
    this.generation = generation;
    this.pending = count;
    this.notification = notification;
    this.peer = peer;
    this.sender = sender;
    this.notificationResult =
        notification == null ? NotificationResult.NONE : NotificationResult.PENDING;
  }

  /** The batch index of the submission's first task. */
  public int first() {
    return first;
  }

  /** How many tasks it admitted. */
  public int count() {
    return count;
  }

  /** Every task is terminal and the notification, if any, is decided. */
  boolean done() {
    return pending == 0 && notificationResult.state() != NotificationResult.State.PENDING;
  }
}
