package io.orbite.engine;

import io.orbite.engine.notify.InboxSource;
import io.orbite.engine.notify.NotificationInbox;
import io.orbite.engine.notify.Notifier;
import io.orbite.engine.notify.NotifyReceiver;
import io.orbite.engine.spi.PeerSegment;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The facade's notification calls ({@link Engine#notifyAsync}, {@link Engine#notifications()}, the
 * polls): the argument checks, the close gate, and the engine's {@link Notifier} and inbox behind
 * them. Kept apart from {@link TransferEngine} so that the facade stays one page of delegations.
 */
final class EngineNotifications {
  private final Notifier notifier;
  private final NotifyReceiver receiver;
  private final CallGate calls;
  private final Executor completions;

  EngineNotifications(
      Notifier notifier, NotifyReceiver receiver, CallGate calls, Executor completions) {
    this.notifier = notifier;
    this.receiver = receiver;
    this.calls = calls;
    this.completions = completions;
  }

  Notifier notifier() {
    return notifier;
  }

  /** The segment, checked as the call's argument; throws INVALID_ARGUMENT naming what is wrong. */
  private static PeerSegment peerOf(RemoteSegment segment) {
    if (segment == null) {
      throw invalid("segment must not be null");
    }
    if (!(segment instanceof PeerSegment peer)) {
      throw invalid("segment is not one an OrbiTE engine opened: " + segment.getClass().getName());
    }
    if (peer.channel().transport() == Transport.FILE) {
      throw invalid(segment.label() + " is a file segment: there is no peer to notify");
    }
    if (segment.isClosed()) {
      throw invalid(
          "segment " + segment.label() + " was closed; open the segment again to notify it");
    }
    return peer;
  }

  /** Checks everything, then sends; the raw future completes on the link's thread. */
  private CompletableFuture<NotificationResult> send(
      RemoteSegment segment, String tag, byte[] bytes) {
    TransferException closed = calls.closedError("notify");
    if (closed != null) {
      throw closed;
    }
    String requester = notifier.requesterClosed();
    if (requester != null) {
      throw new TransferException(ErrorKind.UNAVAILABLE, "notify: " + requester);
    }
    PeerSegment peer = peerOf(segment);
    if (tag == null) {
      throw invalid("tag must not be null");
    }
    Notification n = Notification.of(tag, bytes);
    notifier.check(n);
    return notifier.send(peer, n);
  }

  CompletionStage<NotificationResult> notifyAsync(RemoteSegment segment, String tag, byte[] bytes) {
    CompletableFuture<NotificationResult> f;
    try {
      f = send(segment, tag, bytes);
    } catch (TransferException e) {
      return CompletableFuture.failedFuture(e);
    }
    // Callers' stages never run on a link's thread.
    return f.isDone() ? f : f.thenApplyAsync(r -> r, completions);
  }

  NotificationResult notifyBlocking(RemoteSegment segment, String tag, byte[] bytes) {
    return Batch.join(
        send(segment, tag, bytes),
        Duration.ofMillis(notifier.resultWithinMillis()),
        "notify " + (segment == null ? "null" : segment.label()));
  }

  Source<ReceivedNotification, NotUsed> notifications() {
    TransferException closed = calls.closedError("notifications");
    if (closed != null) {
      throw closed;
    }
    return Source.fromGraph(new InboxSource(inbox()));
  }

  List<ReceivedNotification> poll(int max) {
    TransferException closed = calls.closedError("pollNotifications");
    if (closed != null) {
      throw closed;
    }
    if (max < 1) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT, "pollNotifications: max must be positive, got " + max);
    }
    return inbox().drain(max);
  }

  Optional<ReceivedNotification> poll(Duration timeout) {
    TransferException closed = calls.closedError("pollNotification");
    if (closed != null) {
      throw closed;
    }
    if (timeout == null || timeout.isNegative()) {
      throw new TransferException(
          ErrorKind.INVALID_ARGUMENT,
          "pollNotification: timeout must be zero or positive, got " + timeout);
    }
    try {
      return Optional.ofNullable(inbox().poll(timeout.toNanos()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferException(ErrorKind.CANCELLED, "pollNotification interrupted");
    }
  }

  private NotificationInbox inbox() {
    return receiver.inbox();
  }

  /** The requester side closed (C8): the links end, and nothing more is sent. */
  void closeRequester() {
    notifier.close();
  }

  /** The engine closes: nothing more is sent, and the inbox refuses from now on. */
  void close() {
    notifier.close();
    receiver.close();
  }

  private static TransferException invalid(String what) {
    return new TransferException(ErrorKind.INVALID_ARGUMENT, "notify: " + what);
  }
}
