package io.orbite.engine.batch;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.Route;
import io.orbite.engine.Transport;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.EngineTally.Count;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.engine.spi.TaskWork;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Failover across transports ({@code retry.maxTransportFailovers}): a task the engine routed itself
 * to SHM or RDMA, which that transport failed drained with nothing posted, runs once more on the
 * segment's own TCP channel, to the same incarnation, within its deadline.
 *
 * <p>The rule ({@link #decide}) is pure: a READ after a failure of a kind that says the transport,
 * not the request, failed ({@link #kindFailsOver}); a WRITE only when no receipt of it says it may
 * have changed the peer's bytes (effect {@code NONE}: SHM and RDMA report {@code NONE} for a WRITE
 * only when nothing of it was posted); never once the batch was cancelled, the deadline passed, or
 * the attempts are spent; never for a kind that names the request or the peer's incarnation
 * (EPOCH_MISMATCH: the peer was replaced, C3), a cancel, a deadline or a protocol breach. A request
 * that named its transport is never moved: only {@code UNSPEC} tasks are candidates ({@link
 * #candidate}).
 *
 * <p>The table keeps, for each candidate, the work it was dispatched with and its segment, so that
 * the retry can be handed to the segment's TCP channel ({@link PeerSegment#failover}) by the thread
 * that delivered the failed attempt's last receipt, outside the batch's monitor: a channel's {@code
 * dispatch} only queues, so no lane thread waits on it and no actor's mailbox is involved. Guarded
 * by the owning {@link BatchCore}'s monitor.
 */
final class TransportFailover {
  private static final Logger LOG = LoggerFactory.getLogger(TransportFailover.class);

  /** A task to hand to {@code channel} again, once the batch's monitor is released. */
  record Retry(TaskWork work, PeerChannel channel) {}

  private final int maxFailovers;
  private final int capacity;
  private final EngineTally counters;

  /**
   * Per task index: the work, segment and first channel of a candidate; made on the first
   * candidate.
   */
  private TaskWork[] work;

  private PeerSegment[] segment;
  private PeerChannel[] first;

  TransportFailover(int maxFailovers, int capacity, EngineTally counters) {
    this.maxFailovers = maxFailovers;
    this.capacity = capacity;
    this.counters = counters;
  }

  /**
   * Whether a failure of {@code kind} on {@code from} says the transport failed the task, not the
   * request or the peer's incarnation: UNAVAILABLE (the transport closed under it, a lane faulted)
   * and PEER_LOST (its connection to the peer ended) on SHM and RDMA; on SHM also
   * PERMISSION_DENIED, which the requester decides alone from the lock state of a mapping it could
   * not use (an allocation fenced or unmappable here), while over TCP the source checks the
   * request's authority itself and its answer stands.
   */
  static boolean kindFailsOver(Transport from, ErrorKind kind) {
    return switch (from) {
      case SHM ->
          kind == ErrorKind.UNAVAILABLE
              || kind == ErrorKind.PEER_LOST
              || kind == ErrorKind.PERMISSION_DENIED;
      case RDMA -> kind == ErrorKind.UNAVAILABLE || kind == ErrorKind.PEER_LOST;
      default -> false;
    };
  }

  /**
   * Whether a task routed by {@code routing} may fail over at all: the engine chose its transport
   * (UNSPEC), and chose SHM or RDMA.
   */
  static boolean candidate(PeerSegment.Routing routing) {
    Transport t = routing.channel().transport();
    return routing.route() != Route.REQUESTED && (t == Transport.SHM || t == Transport.RDMA);
  }

  /**
   * The rule, for a task whose every receipt of its attempt on {@code from} has arrived, the first
   * failure among them being {@code kind}.
   *
   * @param op the task's direction
   * @param from the transport of the failed attempt
   * @param kind the task's failure
   * @param vetoed whether any of its failure receipts named a kind {@link #kindFailsOver} refuses
   * @param effectNone whether no receipt said the peer's bytes were, or may have been, changed
   * @param attempts the transports it was handed to so far
   * @param maxFailovers {@code retry.maxTransportFailovers}
   * @param deadlineNanos its deadline ({@link System#nanoTime()})
   * @param nowNanos now
   * @param cancelled whether its batch was cancelled
   * @return true when it runs again
   */
  static boolean decide(
      Op op,
      Transport from,
      ErrorKind kind,
      boolean vetoed,
      boolean effectNone,
      int attempts,
      int maxFailovers,
      long deadlineNanos,
      long nowNanos,
      boolean cancelled) {
    if (kind == null || vetoed || cancelled || attempts > maxFailovers) {
      return false;
    }
    if (!kindFailsOver(from, kind) || nowNanos - deadlineNanos >= 0) {
      return false;
    }
    // A READ changes nothing at the peer; a WRITE only when nothing of it was posted (C6).
    return op == Op.READ || effectNone;
  }

  /** Whether the engine was configured to fail over at all. */
  boolean enabled() {
    return maxFailovers > 0;
  }

  /**
   * Remembers candidate task {@code i}: its work, the segment it was routed on and the channel it
   * was handed to.
   */
  void remember(int i, TaskWork w, PeerSegment s, PeerChannel channel) {
    if (work == null) {
      work = new TaskWork[capacity];
      segment = new PeerSegment[capacity];
      first = new PeerChannel[capacity];
    }
    work[i] = w;
    segment[i] = s;
    first[i] = channel;
  }

  /**
   * Tasks {@code head .. head + count - 1} were merged into {@code w}: when the leader was a
   * candidate, the merged transfer is what runs again; the members do not run on their own.
   */
  void merged(int head, TaskWork w, int count) {
    if (work == null) {
      return;
    }
    if (work[head] != null) {
      work[head] = w;
    }
    for (int j = head + 1; j < head + count; j++) {
      forget(j);
    }
  }

  /** Forgets task {@code i} (it ended, or its index is reused). */
  void forget(int i) {
    if (work != null) {
      work[i] = null;
      segment[i] = null;
      first[i] = null;
    }
  }

  /**
   * Decides for task {@code i}, which {@code ledger} left {@link
   * TaskLedger.Outcome#DRAINED_FAILED}: when it runs again, starts it over on its segment's TCP
   * channel in the ledger, counts the failover and adds the retry to {@code out}, for the caller to
   * hand over once it released the batch's monitor. Under that monitor.
   *
   * @return true when the task runs again; false when the caller ends it with its failure
   */
  boolean tryFailOver(TaskLedger ledger, int i, boolean cancelled, long nowNanos, List<Retry> out) {
    TaskWork w = work == null ? null : work[i];
    if (w == null
        || !decide(
            ledger.op(i),
            ledger.transport(i),
            ledger.error(i),
            ledger.vetoed(i),
            ledger.effectNone(i),
            ledger.attempts(i),
            maxFailovers,
            ledger.deadlineNanos(i),
            nowNanos,
            cancelled)) {
      return false;
    }
    PeerSegment.Routing routing = segment[i].failover(first[i]);
    if (routing.channel() == null || routing.channel().transport() != Transport.TCP) {
      return false;
    }
    ledger.failOver(i, routing.channel().transport(), routing.route());
    counters.increment(Count.TRANSPORT_FAILOVERS);
    out.add(new Retry(w, routing.channel()));
    return true;
  }

  /**
   * Hands tasks that failed over to their channel, on the thread that delivered their failed
   * attempt's last receipt (a lane's, or a submitter's), outside the batch's monitor: a channel's
   * dispatch only queues frames, and may deliver a refusal on this thread, which takes the monitor
   * again. Their receipt counts are then recorded as a dispatch's are ({@link BatchCore#sealed}); a
   * channel that throws fails its task as never sent, as {@link RunDispatcher} does.
   */
  static void handOver(BatchCore core, List<Retry> again, EngineTally counters) {
    int[] owed = new int[again.size()];
    TaskWork[] work = new TaskWork[again.size()];
    List<PeerChannel> touched = new ArrayList<>(1);
    for (int k = 0; k < again.size(); k++) {
      Retry r = again.get(k);
      PeerChannel channel = r.channel();
      work[k] = r.work();
      owed[k] = -1;
      try {
        counters.dispatched(channel.transport(), 1, r.work().lengthBytes());
        owed[k] = channel.dispatch(r.work());
      } catch (RuntimeException e) {
        LOG.error(
            "batch {}: failover of task {} to {} failed: {}",
            core.name(),
            r.work().taskIndex(),
            channel.transport(),
            e.toString(),
            e);
        core.failUnsent(
            r.work().taskIndex(),
            "the " + channel.transport() + " transport refused the failed-over task: " + e);
      }
      if (!touched.contains(channel)) {
        touched.add(channel);
      }
    }
    for (PeerChannel channel : touched) {
      channel.flush();
    }
    core.sealed(work, owed);
  }
}
