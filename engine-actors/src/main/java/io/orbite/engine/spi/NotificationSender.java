package io.orbite.engine.spi;

import io.orbite.engine.Notification;
import io.orbite.engine.NotificationResult;
import java.util.concurrent.CompletableFuture;

/**
 * Sends notifications to peer engines: the requester side of {@code Engine.notify(segment, tag,
 * bytes)} and of notifications attached to submissions. Thread-safe; it never blocks the calling
 * thread on I/O.
 */
public interface NotificationSender {
  /**
   * Checks a notification against this engine's bounds before anything is sent.
   *
   * @throws io.orbite.engine.TransferException INVALID_ARGUMENT naming the bound exceeded
   */
  void check(Notification notification);

  /**
   * Sends {@code notification} once to the incarnation {@code peer} names; never sends it twice.
   *
   * @return completes (never exceptionally) with DELIVERED, REFUSED, NOT_SENT or UNKNOWN
   */
  CompletableFuture<NotificationResult> send(PeerSegment peer, Notification notification);
}
