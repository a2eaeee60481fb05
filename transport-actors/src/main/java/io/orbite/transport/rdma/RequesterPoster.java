package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.transport.lane.Unsendable;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * The requester side of one CQ lane, confined to the lane's thread: the slices queued on the lane's
 * QPs, their grant requests in priority order ({@code PostQueue}, C14: HIGH first, aged work
 * promoted after {@code rdma.priorityAgingMillis}; posted work is never preempted, and completions,
 * receives and cleanup never wait in the queue), their payload and completion posts, and their
 * completions, ACKs and deadlines.
 *
 * <p>A slice whose channel closed, or whose QP was retired, fails with its channel's kind ({@link
 * RdmaChannel#kindFor}): the gate's once it closed (a lost peer PEER_LOST, a local close
 * UNAVAILABLE, a fence EPOCH_MISMATCH), else its QP's (PEER_LOST when the QP's connection failed on
 * the wire).
 *
 * <p>Why this file is over 500 lines: a slice's whole requester side on the lane (queue, grant
 * request, post, the pass's completion SENDs, each completion and its failure's kind) is one state
 * machine over the slice's fields; split, each part would reach into the others'.
 */
final class RequesterPoster {
  private final CqLane lane;
  private final ReceiptBatcher receipts;

  /** The requester QPs of this lane with slices queued. */
  private final Set<RcQp> queued = Collections.newSetFromMap(new IdentityHashMap<>());

  /** The QPs this pass posted payloads on whose completion SEND is still to be posted. */
  private final List<RcQp> awaitingSend = new ArrayList<>();

  /** The latest stamp {@link #enqueue} gave, once it gave one. */
  private long lastStamp;

  private boolean stamped;

  /** Slices with their payload posted and past their deadline, found by a sweep (reused). */
  private final List<Slice> expired = new ArrayList<>();

  RequesterPoster(CqLane lane) {
    this.lane = lane;
    this.receipts = lane.receipts();
  }

  /** Whether no slice is queued on the lane. */
  boolean idle() {
    return queued.isEmpty() && awaitingSend.isEmpty();
  }

  /**
   * Queues {@code s} at its task's priority on its QP, waiting since {@code handedAtNanos}, when it
   * was handed to this lane: a slice that sat in the inbox while the lane was busy (or held) has
   * waited that long too. Stamps never go back in this lane's order of offers (two callers can hand
   * work in the other order of their clocks), so each tier of a post queue stays in time order and
   * its head stays its oldest.
   */
  void enqueue(Slice s, long handedAtNanos) {
    long at = stamped && handedAtNanos - lastStamp < 0 ? lastStamp : handedAtNanos;
    lastStamp = at;
    stamped = true;
    s.qp.queue.offer(s, s.work.priority(), at);
    queued.add(s.qp);
  }

  /**
   * The deadline sweep (the lane runs it at most once per millisecond): fails every queued slice
   * that is {@link Unsendable} (its batch cancelled, or its deadline passed), never sent; and
   * retires each QP on which a slice's payload is still out past its deadline, as TCP closes a lane
   * with a frame on the wire past its deadline: the QP goes to ERR and is destroyed, so the drain
   * proves what it touched, and only then does the slice fail {@code TIMEOUT} (a READ {@code NONE},
   * a WRITE {@code UNKNOWN}: C5, C6). Neither counts against the rail pair.
   */
  int sweep(long now) {
    if (queued.isEmpty() && !lane.anyPending()) {
      return 0;
    }
    int failed = 0;
    if (!queued.isEmpty()) {
      var it = queued.iterator();
      while (it.hasNext()) {
        RcQp qp = it.next();
        failed +=
            qp.queue.removeIf(
                sl -> Unsendable.applies(sl.work.sink(), sl.work.deadlineNanos(), now),
                sl -> failUnsendable(sl, now));
        if (qp.queue.isEmpty()) {
          it.remove();
        }
      }
    }
    if (lane.anyPending()) {
      lane.forEachPending(
          (id, c) -> {
            if (c instanceof PayloadDone d
                && !d.s.finished()
                && !d.s.payloadCompleted
                && now - d.s.work.deadlineNanos() > 0) {
              expired.add(d.s);
            }
          });
      for (Slice sl : expired) {
        if (!sl.qp.life.retiringOrLater()) {
          sl.channel.counters().slicesPastDeadline.increment();
          sl.channel.qpFailed(
              sl.qp,
              "slice "
                  + sl.id
                  + " passed its deadline with its payload on the wire; the QP is retired so that"
                  + " its drain is proven");
        }
      }
      failed += expired.size();
      expired.clear();
    }
    return failed;
  }

  /** Fails queued slice {@code sl}, never sent: its batch was cancelled or its deadline passed. */
  private void failUnsendable(Slice sl, long now) {
    ErrorKind kind = Unsendable.check(sl.work.sink(), sl.work.deadlineNanos(), now);
    if (kind == ErrorKind.CANCELLED) {
      sl.fail(receipts, kind, "the batch was cancelled before this slice was sent", false);
    } else {
      sl.fail(
          receipts,
          ErrorKind.TIMEOUT,
          sl.channel.label()
              + ": the deadline passed "
              + TimeUnit.NANOSECONDS.toMillis(now - sl.work.deadlineNanos())
              + " ms before this slice was sent (never sent)",
          false);
    }
  }

  /** Asks grants for queued slices, each QP's in priority order, while it has room. */
  int pump(long now) {
    if (queued.isEmpty()) {
      return 0;
    }
    int asked = 0;
    var it = queued.iterator();
    while (it.hasNext()) {
      RcQp qp = it.next();
      qp.queue.promote(now);
      asked += next(qp);
      if (qp.queue.size() == 0) {
        it.remove();
      }
    }
    return asked;
  }

  /**
   * Fails every slice still queued on {@code qp}, never sent, with its channel's kind, and forgets
   * the QP: it is closing.
   */
  void dropQueued(RcQp qp, String reason) {
    Slice s;
    while ((s = qp.queue.poll()) != null) {
      s.fail(receipts, s.channel.kindFor(qp.life.kind()), reason + " (never sent)", false);
    }
    queued.remove(qp);
  }

  /** Fails every slice still queued on the lane, never sent: the lane has stopped. */
  void failQueued(String why) {
    for (RcQp qp : List.copyOf(queued)) {
      dropQueued(qp, why);
    }
  }

  private void ask(Slice s) {
    RcQp qp = s.qp;
    if (qp.broken()) {
      failBroken(s, qp);
      return;
    }
    long now = System.nanoTime();
    if (Unsendable.applies(s.work.sink(), s.work.deadlineNanos(), now)) {
      failUnsendable(s, now);
      return;
    }
    s.takeSlot();
    s.stage = Slice.Stage.ASKED;
    if (!s.channel.ledger().ask(s)) {
      s.fail(
          receipts,
          s.channel.kindFor(ErrorKind.PEER_LOST),
          s.channel.label() + ": the control link closed (never sent)",
          false);
      return;
    }
    lane.wrote(s.channel.link());
  }

  /** Fails {@code s} because its QP {@code qp} broke, with the kind the QP stopped with. */
  private void failBroken(Slice s, RcQp qp) {
    s.fail(
        receipts,
        s.channel.kindFor(qp.life.kind()),
        s.channel.label() + ": " + qp.brokenWhy(),
        false);
  }

  /** Asks for {@code qp}'s next queued slices while it has room (after one finished, too). */
  private int next(RcQp qp) {
    int asked = 0;
    while (qp.slicesInFlight < lane.slicesPerQp) {
      Slice s = qp.queue.poll();
      if (s == null) {
        break;
      }
      ask(s);
      asked++;
    }
    return asked;
  }

  /** The source answered slice {@code s}'s request (on the lane thread). */
  void granted(Slice s, RdmaWire.Grant g) {
    if (s.finished()) {
      return; // failed meanwhile (its QP closed); the source releases the window with its session
    }
    if (g.status() != 0) {
      ErrorKind kind = ErrorKind.fromCode(g.status());
      s.fail(
          receipts,
          kind == null ? ErrorKind.PROTOCOL : kind,
          s.channel.label() + " refused the slice: " + g.detail(),
          false);
      next(s.qp);
      return;
    }
    RcQp qp = s.qp;
    if (qp.broken()) {
      failBroken(s, qp);
      next(qp);
      return;
    }
    Rail rail = lane.rail;
    VerbsResult<Verbs.Mr> mr = rail.mrs.mrFor(s.work.local());
    if (!mr.ok()) {
      s.fail(receipts, ErrorKind.INVALID_ARGUMENT, "local memory: " + mr.describe(), false);
      next(qp);
      return;
    }
    long local = s.work.local().address() + s.work.localOffset() + s.offsetInTask;
    boolean read = s.work.op() == Op.READ;
    long payloadId = lane.track(new PayloadDone(s));
    rail.hooks.beforeRdmaPost(lane.name(), qp.qp.qpNum(), payloadId, !read);
    if (qp.broken() || !s.channel.gate().active()) {
      // The endpoint broke while the hook held the lane: the payload was never posted.
      lane.take(payloadId);
      s.fail(
          receipts,
          s.channel.kindFor(qp.life.kind()),
          s.channel.label()
              + ": "
              + (qp.broken() ? qp.brokenWhy() : s.channel.gate().refusal())
              + " (never sent)",
          false);
      next(qp);
      return;
    }
    Verbs.PostResult posted =
        lane.verbs.postSend(
            qp.qp,
            List.of(
                Verbs.SendWr.rdma(
                    payloadId,
                    read ? Ibv.WR_RDMA_READ : Ibv.WR_RDMA_WRITE,
                    Ibv.SEND_SIGNALED,
                    List.of(new Verbs.Sge(local, (int) s.length, mr.value().lkey())),
                    g.addr(),
                    g.rkey())));
    if (!posted.posted()) {
      lane.take(payloadId);
      s.fail(
          receipts,
          s.channel.kindFor(ErrorKind.UNAVAILABLE),
          "ibv_post_send on " + qp.rail.device + ": errno " + posted.errno(),
          true);
      next(qp);
      return;
    }
    qp.posted(1);
    s.postedAt = System.nanoTime();
    s.channel.selector().posted(rail.index, s.length, s.postedAt);
    s.payloadPosted = true;
    s.sendPending = true;
    s.stage = Slice.Stage.POSTED;
    // Its completion SEND goes with those of the other slices this pass posts on the QP.
    if (qp.awaitingSend.isEmpty()) {
      awaitingSend.add(qp);
    }
    qp.awaitingSend.add(s);
    if (qp.awaitingSend.size() >= RdmaWire.MAX_COMPLETION_IDS) {
      postCompletionSend(qp);
    }
  }

  /** Posts, on each QP this pass posted payloads on, one completion SEND naming those slices. */
  void postCompletionSends() {
    if (awaitingSend.isEmpty()) {
      return;
    }
    for (int i = 0; i < awaitingSend.size(); i++) {
      RcQp qp = awaitingSend.get(i);
      if (!qp.awaitingSend.isEmpty()) {
        postCompletionSend(qp);
      }
    }
    awaitingSend.removeIf(qp -> qp.awaitingSend.isEmpty());
  }

  /**
   * Posts one fenced completion SEND on {@code qp} naming every slice whose payload waits for it:
   * fenced, it does not start before an earlier RDMA READ on the QP completed. A QP that broke, or
   * a refused post, leaves those slices without a SEND: each gives its slot back once its payload
   * came back, and fails when its QP is destroyed without the source's ACK. With no chunk free
   * (every one held by a SEND still out) the slices wait for the next pass.
   */
  private void postCompletionSend(RcQp qp) {
    List<Slice> covered = qp.awaitingSend;
    if (qp.broken()) {
      noSend(covered);
      covered.clear();
      return;
    }
    while (!covered.isEmpty()) {
      int chunk = lane.takeChunk();
      if (chunk < 0) {
        return;
      }
      int n = Math.min(covered.size(), RdmaWire.MAX_COMPLETION_IDS);
      List<Slice> head = covered.subList(0, n);
      Slice[] slices = head.toArray(new Slice[n]);
      head.clear();
      if (!postCompletionSend(qp, slices, chunk)) {
        return;
      }
    }
  }

  /**
   * Posts one completion SEND on {@code qp} naming {@code slices} (at most {@link
   * RdmaWire#MAX_COMPLETION_IDS}) from chunk {@code chunk} of the lane's slab.
   *
   * @return false when the post was refused: the QP is being retired, and no slice still waiting on
   *     it gets a SEND
   */
  private boolean postCompletionSend(RcQp qp, Slice[] slices, int chunk) {
    int n = slices.length;
    long at = (long) chunk * RdmaWire.COMPLETION_RECEIVE_BYTES;
    for (int i = 0; i < n; i++) {
      lane.idSlab.set(ValueLayout.JAVA_LONG, at + i * 8L, slices[i].id);
    }
    long sendId = lane.track(new SendDone(qp, slices, chunk));
    Verbs.PostResult posted =
        lane.verbs.postSend(
            qp.qp,
            List.of(
                Verbs.SendWr.send(
                    sendId,
                    Ibv.SEND_SIGNALED | Ibv.SEND_FENCE,
                    List.of(new Verbs.Sge(lane.idSlab.address() + at, n * 8, lane.idMr.lkey())))));
    if (!posted.posted()) {
      lane.take(sendId);
      lane.giveChunk(chunk);
      noSend(List.of(slices));
      noSend(qp.awaitingSend);
      qp.awaitingSend.clear();
      qp.owner.qpFailed(qp, "ibv_post_send refused the completion SEND: errno " + posted.errno());
      return false;
    }
    qp.posted(1);
    slices[0].channel.counters().completionSends.increment();
    for (Slice s : slices) {
      s.sendPending = false;
      s.sendPosted = true;
    }
    return true;
  }

  /** {@code slices} get no completion SEND: each gives its slot back once its payload came back. */
  private void noSend(List<Slice> slices) {
    for (Slice s : slices) {
      s.sendPending = false;
      if (s.payloadCompleted) {
        s.releaseSlot();
      }
    }
  }

  /**
   * The source's receipt for slice {@code s} came (on the lane thread): it succeeds once its own
   * WRs completed too; a refusal fails it (its WRs completed: nothing of it touches memory now).
   */
  void acked(Slice s, RdmaWire.Ack a) {
    if (s.finished()) {
      return;
    }
    if (a.status() != 0) {
      ErrorKind kind = ErrorKind.fromCode(a.status());
      s.fail(
          receipts,
          kind == null ? ErrorKind.PROTOCOL : kind,
          s.channel.label() + " did not confirm the slice: " + a.detail(),
          false);
      return;
    }
    s.acked = true;
    s.succeedIfDone(receipts);
  }

  /**
   * A completion of one of slice {@code s}'s WRs, on whichever QP the slice is on now: each pays
   * one WR of that QP's debt.
   */
  private abstract static class SliceCompletion implements CqLane.Completion {
    final Slice s;

    SliceCompletion(Slice s) {
      this.s = s;
    }

    @Override
    public RcQp qp() {
      return s.qp;
    }

    @Override
    public final void completed(CqLane lane, Verbs.Wc wc) {
      s.qp.debt--;
      done(wc);
    }

    /** The WR completed with {@code wc}. */
    abstract void done(Verbs.Wc wc);
  }

  private final class PayloadDone extends SliceCompletion {
    PayloadDone(Slice s) {
      super(s);
    }

    @Override
    void done(Verbs.Wc wc) {
      s.payloadCompleted = true;
      if (!s.sendPosted && !s.sendPending) {
        s.releaseSlot();
      }
      if (wc.status() == Ibv.WC_SUCCESS) {
        s.payloadDone = true;
        if (s.deferredKind != null) {
          // Its completion SEND failed first; the payload has let go of the memory only now.
          s.fail(receipts, s.deferredKind, s.deferredDetail, true);
        } else {
          s.succeedIfDone(receipts);
        }
        return;
      }
      failFromWc(s, wc, false);
    }

    @Override
    public void abandoned(CqLane lane, String why) {
      s.payloadCompleted = true;
      if (!s.sendPosted && !s.sendPending) {
        s.releaseSlot();
      }
      failAbandoned(s, why);
    }
  }

  /** The completion of one completion SEND, for every slice it named. */
  private final class SendDone implements CqLane.Completion {
    private final RcQp qp;
    private final Slice[] slices;
    private final int chunk;

    SendDone(RcQp qp, Slice[] slices, int chunk) {
      this.qp = qp;
      this.slices = slices;
      this.chunk = chunk;
    }

    @Override
    public RcQp qp() {
      return qp;
    }

    @Override
    public void completed(CqLane lane, Verbs.Wc wc) {
      qp.debt--;
      lane.giveChunk(chunk);
      for (Slice s : slices) {
        s.releaseSlot();
        if (wc.status() == Ibv.WC_SUCCESS) {
          s.sendDone = true;
          s.succeedIfDone(receipts);
        } else {
          failFromWc(s, wc, true);
        }
      }
      next(qp);
    }

    @Override
    public void abandoned(CqLane lane, String why) {
      lane.giveChunk(chunk);
      for (Slice s : slices) {
        s.releaseSlot();
        if (s.payloadCompleted) {
          failAbandoned(s, why);
        }
      }
    }
  }

  /**
   * Fails {@code s}, whose QP was destroyed with its WRs unanswered. On a faulted lane that is the
   * lane's own failure, not the wire's: UNAVAILABLE naming it, not counted against the rail pair.
   */
  private void failAbandoned(Slice s, String why) {
    String faulted = lane.faulted();
    if (System.nanoTime() - s.work.deadlineNanos() > 0) {
      // Past its deadline (its QP was retired for it, or failed meanwhile): the drain is proven
      // now; a deadline is no fault of the rail pair.
      s.fail(
          receipts,
          ErrorKind.TIMEOUT,
          s.channel.label() + ": the deadline passed with its payload on the wire: " + why,
          false);
    } else if (faulted != null) {
      s.fail(
          receipts,
          ErrorKind.UNAVAILABLE,
          s.channel.label() + ": " + lane.name() + ": " + faulted + "; " + why,
          false);
    } else {
      s.fail(
          receipts, s.channel.kindFor(ErrorKind.PEER_LOST), s.channel.label() + ": " + why, true);
    }
  }

  /**
   * A WR of {@code s} failed: the slice fails, unless this was its completion SEND and its payload
   * WR has not completed yet (its completion was lost, or is still to come): then the failure waits
   * for that WR's completion or its abandonment when the QP is destroyed, since until then the
   * payload may still touch the task's memory (C5: QP destruction precedes the drain receipt). A WR
   * that failed on the wire lost the QP's connection: the QP is retired PEER_LOST, and what it held
   * (flushed) fails so too; a flushed WR fails with the kind its QP was retired with.
   */
  private void failFromWc(Slice s, Verbs.Wc wc, boolean fromSend) {
    boolean flushed = wc.status() == Ibv.WC_WR_FLUSH_ERR;
    ErrorKind kind =
        switch (wc.status()) {
          case Ibv.WC_REM_ACCESS_ERR -> ErrorKind.PERMISSION_DENIED;
          case Ibv.WC_WR_FLUSH_ERR -> s.channel.kindFor(s.qp.life.kind());
          default -> ErrorKind.PEER_LOST;
        };
    String why = "completion status " + wc.status() + (flushed ? " (flushed)" : "");
    String detail = s.channel.label() + " on " + s.qp.rail.device + ": " + why;
    boolean late = System.nanoTime() - s.work.deadlineNanos() > 0;
    if (late && flushed) {
      // Flushed by the retirement its deadline started (or another one after its deadline).
      kind = ErrorKind.TIMEOUT;
      detail = s.channel.label() + ": the deadline passed with its payload on the wire: " + why;
    }
    if (fromSend && !s.payloadCompleted) {
      if (s.deferredKind == null) {
        s.deferredKind = kind;
        s.deferredDetail = detail;
      }
    } else if (!s.finished()) {
      s.fail(receipts, kind, detail, !flushed && !late);
    }
    s.channel.qpFailed(
        s.qp,
        why,
        flushed || wc.status() == Ibv.WC_REM_ACCESS_ERR
            ? ErrorKind.UNAVAILABLE
            : ErrorKind.PEER_LOST);
    next(s.qp);
  }
}
