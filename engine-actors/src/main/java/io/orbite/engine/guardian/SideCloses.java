package io.orbite.engine.guardian;

import io.orbite.engine.guardian.EngineGuardian.CloseRequester;
import io.orbite.engine.guardian.EngineGuardian.CloseSource;
import io.orbite.engine.guardian.EngineGuardian.Command;
import io.orbite.engine.guardian.EngineGuardian.ListenerStopped;
import io.orbite.engine.guardian.EngineGuardian.RequesterDrained;
import io.orbite.engine.guardian.EngineGuardian.SharedFenced;
import io.orbite.engine.guardian.EngineGuardian.Side;
import io.orbite.engine.guardian.EngineGuardian.SideClosed;
import io.orbite.engine.guardian.EngineGuardian.TransportSideClosed;
import io.orbite.engine.registry.Registry;
import io.orbite.engine.segment.SegmentTable;
import io.orbite.engine.spi.TransportCommand;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.javadsl.ActorContext;

/**
 * The directional closes (C8) the {@link EngineGuardian} runs while the engine runs, one step per
 * message to the guardian, never polling. {@link CloseRequester} fences the admission gate and the
 * SegmentTable, waits on the gate's drain signal until the caller's deadline, closes every
 * transport's requester lanes, then waits at most {@link EngineGuardian#RECEIPTS_AFTER_CLOSE} for
 * their last receipts. {@link CloseSource} stops the listener, closes every transport's source
 * lanes, then has the Registry fence the ranges shared with same-host peers. A shutdown overtakes
 * the closes under way ({@link #overtaken}). Used on the guardian's thread only.
 */
final class SideCloses {
  private final ActorContext<Command> ctx;
  private final GuardianChildren children;
  private final String identity;

  /** How long the Registry may take to fence the shared ranges: its window and some margin. */
  private final Duration fenceSharedTimeout;

  /** Side closes under way, by reply address; a shutdown answers them all at once. */
  private final Map<ActorRef<SideClosed>, Side> underWay = new HashMap<>();

  /** Side closes waiting for their transports: reply address to transports still to answer. */
  private final Map<ActorRef<SideClosed>, Integer> transportsLeft = new HashMap<>();

  /**
   * @param identity the engine's identity, as logs name it
   * @param destructionWindow the engine's destruction window, the Registry's fence's bound
   */
  SideCloses(
      ActorContext<Command> ctx,
      GuardianChildren children,
      String identity,
      Duration destructionWindow) {
    this.ctx = ctx;
    this.children = children;
    this.identity = identity;
    this.fenceSharedTimeout = destructionWindow.plusSeconds(30);
  }

  void closeRequester(CloseRequester m) {
    underWay.put(m.replyTo(), Side.REQUESTER);
    // At once, and no message to Admission (it reports the gate's state): nothing to dead-letter.
    children.gate().fence("the requester side is closed");
    children
        .segmentTable()
        .tell(new SegmentTable.Fence("the requester side of this engine is closed"));
    ctx.pipeToSelf(
        drainedBy(m.deadlineNanos()), (ok, failure) -> new RequesterDrained(m.replyTo(), false));
  }

  /**
   * Completes when no task is charged any more (the gate is fenced) or at {@code deadlineNanos},
   * whichever comes first; waits on the gate's own signal, never polls.
   */
  private CompletableFuture<Void> drainedBy(long deadlineNanos) {
    return children
        .gate()
        .whenDrained()
        .toCompletableFuture()
        .copy()
        .completeOnTimeout(
            null, Math.max(0, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
  }

  /** Admitted work drained (or its deadline passed): close the lanes; or, after them, answer. */
  void requesterDrained(RequesterDrained m) {
    if (!m.lanesClosed()) {
      closeTransports(Side.REQUESTER, m.replyTo());
      return;
    }
    underWay.remove(m.replyTo());
    m.replyTo().tell(new SideClosed(Side.REQUESTER, 0));
  }

  void closeSource(CloseSource m) {
    underWay.put(m.replyTo(), Side.SOURCE);
    children.stopControl(() -> new ListenerStopped(m.replyTo()));
  }

  void listenerStopped(ListenerStopped m) {
    closeTransports(Side.SOURCE, m.replyTo());
  }

  /** Closes one direction's lanes in every transport; each answers when its threads have ended. */
  private void closeTransports(Side side, ActorRef<SideClosed> replyTo) {
    Map<?, ActorRef<TransportCommand>> transports = children.transports();
    transports
        .values()
        .forEach(
            ref ->
                ctx.ask(
                    TransportCommand.SideClosed.class,
                    ref,
                    GuardianChildren.TRANSPORT_TIMEOUT,
                    to ->
                        side == Side.REQUESTER
                            ? new TransportCommand.CloseRequesterSide(to)
                            : new TransportCommand.CloseSourceSide(to),
                    (ok, failure) -> new TransportSideClosed(replyTo, side, 1)));
    transportsLeft.put(replyTo, transports.size());
    if (transports.isEmpty()) {
      transportSideClosed(new TransportSideClosed(replyTo, side, 0));
    }
  }

  /** One transport answered: once all have, the close takes its last step. */
  void transportSideClosed(TransportSideClosed m) {
    int left = transportsLeft.merge(m.replyTo(), -m.left(), Integer::sum);
    if (left > 0) {
      return;
    }
    transportsLeft.remove(m.replyTo());
    if (m.side() == Side.REQUESTER) {
      // The lanes have ended, but their last receipts may still be on their way to the batches. A
      // task still in flight after this wait is held by a worker that did not let go; its batch's
      // watchdog quarantines it.
      ctx.pipeToSelf(
          drainedBy(System.nanoTime() + EngineGuardian.RECEIPTS_AFTER_CLOSE.toNanos()),
          (ok, failure) -> new RequesterDrained(m.replyTo(), true));
    } else {
      // Same-host peers copy through shared memory without any lane: fence them out too.
      ctx.ask(
          Registry.SharedFenced.class,
          children.registry(),
          fenceSharedTimeout,
          Registry.FenceShared::new,
          (ok, failure) -> new SharedFenced(m.replyTo(), ok == null ? -1 : ok.stillCopying()));
    }
  }

  void sharedFenced(SharedFenced m) {
    if (m.stillCopying() < 0) {
      ctx.getLog()
          .error(
              "engine {}: closeSource: the Registry is quarantined and could not fence the ranges"
                  + " shared with same-host peers (owed() lists it)",
              identity);
    } else if (m.stillCopying() > 0) {
      ctx.getLog()
          .warn(
              "engine {}: closeSource: {} shared range(s) still being copied by a same-host peer"
                  + " after the destruction window; no new copy can start",
              identity,
              m.stillCopying());
    }
    underWay.remove(m.replyTo());
    m.replyTo().tell(new SideClosed(Side.SOURCE, m.stillCopying()));
  }

  /** The whole engine closes now: every side close under way is answered at once. */
  void overtaken() {
    underWay.forEach((replyTo, side) -> replyTo.tell(new SideClosed(side, 0)));
    underWay.clear();
  }
}
