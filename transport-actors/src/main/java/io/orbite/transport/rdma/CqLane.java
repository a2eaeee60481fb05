package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.transport.lane.LaneIdle;
import io.orbite.transport.lane.LaneLifecycle;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.IdleStrategy;

/**
 * One CQ of a rail and the lane thread that polls it: every QP of the rail that this lane serves,
 * requester or source, completes here, and this thread is the only one that posts on those QPs, so
 * their work-request accounting needs no lock. Other threads hand it work through {@link #submit}
 * (a task to run on the lane) and it wakes at once.
 *
 * <p>A pass: run what was handed over; ask grants for queued slices in priority order ({@link
 * PostQueue}, C14: HIGH first, aged work promoted after {@code rdma.priorityAgingMillis}; posted
 * work is never preempted, and completions, receives and cleanup never wait in the queue); poll up
 * to 32 completions; finish closing QPs whose work requests all came back (or whose deadline
 * passed); deliver the pass's receipts, one call per batch; flush the control links it wrote to.
 *
 * <p>Every work request is signalled, so a QP's send-queue debt is exact. A requester QP holds at
 * most {@code maxSendWr / 4} slices (two WRs each: the payload, then the completion SEND), so its
 * debt stays at most half its send queue.
 */
final class CqLane implements Runnable {
  /** How a lane learns what became of one work request. */
  interface Completion {
    /** The QP the WR was posted on. */
    RcQp qp();

    void completed(CqLane lane, Verbs.Wc wc);

    /** The QP was destroyed with this WR unanswered: it will never complete. */
    void abandoned(CqLane lane, String why);

    /** Whether it is a posted receive (a source QP's, waiting for a completion SEND). */
    default boolean receive() {
      return false;
    }
  }

  /**
   * How long a quiet lane parks (nothing queued, closing or posted but receives, and no window open
   * on its QPs, so no completion can come): work handed to it unparks it at once.
   */
  private static final long QUIET_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /** Idle passes in a row before a quiet lane parks for {@link #QUIET_PARK_NANOS}. */
  private static final int QUIET_AFTER_PASSES = 256;

  /** Posted receives among {@link #pending} (lane thread only). */
  private int receives;

  /**
   * Windows bound (or being bound) on this lane's source QPs and not yet released: each may see a
   * completion SEND land in a receive at any time, so the lane must keep looking at its CQ.
   */
  final java.util.concurrent.atomic.AtomicInteger openWindows =
      new java.util.concurrent.atomic.AtomicInteger();

  private static final int POLL_BATCH = 32;
  private static final long CLOSE_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(5);
  private static final long MAX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  final Rail rail;
  final int index;
  final Verbs verbs;
  final Verbs.Cq cq;

  /**
   * The CQ's completion channel ({@code rdma.completionEvents}), or null: CQs without one are
   * polled only. Destroyed after the CQ at release; one whose destroy fails is kept.
   */
  final Verbs.CompChannel channel;

  /** Completion events taken from {@link #channel} and acknowledged (the lane row's figure). */
  final java.util.concurrent.atomic.LongAdder cqEvents =
      new java.util.concurrent.atomic.LongAdder();

  /**
   * Events taken and not acknowledged yet (lane thread only; acknowledged in batches, all at
   * release).
   */
  private int unacked;

  final String name;
  final int slicesPerQp;
  final LaneLifecycle lifecycle = new LaneLifecycle();

  private final ConcurrentLinkedQueue<Runnable> inbox = new ConcurrentLinkedQueue<>();

  /** The requester QPs of this lane with slices queued. */
  private final Set<RcQp> queued = java.util.Collections.newSetFromMap(new IdentityHashMap<>());

  private final Long2ObjectHashMap<Completion> pending = new Long2ObjectHashMap<>();
  private final Map<RcQp, Long> closing = new IdentityHashMap<>();
  private final List<CloseWaiter> afterClose = new ArrayList<>();
  private final Set<ControlLink> dirty =
      java.util.Collections.newSetFromMap(new IdentityHashMap<>());
  private final ReceiptBatcher receipts = new ReceiptBatcher();
  private final Verbs.Wc[] wcs = new Verbs.Wc[POLL_BATCH];
  private final Arena arena = Arena.ofShared();

  /** The 8 bytes a completion SEND carries inline (a slice id), written just before each post. */
  private final MemorySegment idSlot;

  private final Verbs.Mr idMr;
  private long nextWrId = 1;
  private volatile Thread thread;
  private volatile String faulted;

  /** The actor that owns this lane's lifecycle ({@link CqLaneOwner}), told when the CQ fails. */
  private volatile org.apache.pekko.actor.typed.ActorRef<CqLaneOwner.Command> owner;

  /**
   * The QPs on this lane's CQ that were not destroyed yet (any thread adds, the lane and the owners
   * that destroy a never-used QP remove): the one record of a rail's undestroyed QPs. A faulted
   * lane is natively drained once it is empty, and only then may it be reclaimed; the monitor reads
   * the same sets to find the QPs made under a fenced route ({@link Rail#drained}, {@link
   * Rail#retireOld}).
   */
  private final Set<RcQp> live = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /** What {@link #release} answered: it runs once and is never retried (spec 001). */
  private List<String> released;

  /** How the post queues of this lane's QPs age (C14). */
  final java.time.Duration aging;

  final boolean agingPerEntry;

  CqLane(
      Rail rail,
      int index,
      Verbs.Cq cq,
      Verbs.CompChannel channel,
      int maxSendWr,
      java.time.Duration aging,
      boolean agingPerEntry) {
    this.channel = channel;
    this.aging = aging;
    this.agingPerEntry = agingPerEntry;
    this.rail = rail;
    this.index = index;
    this.verbs = rail.verbs;
    this.cq = cq;
    this.cqCapacity = rail.cqes();
    this.name = "rdma " + rail.device + " lane " + index;
    this.slicesPerQp = Math.max(1, maxSendWr / 4);
    this.idSlot = arena.allocate(64, 64);
    this.idMr = verbs.regMr(rail.pd, idSlot, Ibv.ACCESS_LOCAL_WRITE).value();
    if (channel != null) {
      verbs.reqNotifyCq(cq, false); // armed: the first completion raises an event
    }
  }

  /** Most events taken before they are acknowledged in one call. */
  private static final int ACK_BATCH = 64;

  /**
   * With a completion channel, after a pass that polled completions: takes its pending events
   * (non-blocking), acknowledges them in batches, and arms the CQ again after any, so the next
   * completion raises one (the CQ itself is polled by the pass either way, so no completion waits
   * on an event; an event raised after its completion was polled is taken after the next one).
   */
  private int takeEvents() {
    int n = 0;
    while (verbs.getCqEvent(channel).ok()) {
      n++;
      if (++unacked >= ACK_BATCH) {
        verbs.ackCqEvents(cq, unacked);
        unacked = 0;
      }
    }
    if (n > 0) {
      cqEvents.add(n);
      verbs.reqNotifyCq(cq, false);
    }
    return n;
  }

  void start() {
    Thread t =
        Thread.ofPlatform().daemon().name("orbite-" + name.replace(' ', '-')).unstarted(this);
    thread = t;
    t.start();
  }

  /** Runs {@code work} on the lane thread, soon; refused (false) once the lane has stopped. */
  boolean submit(Runnable work) {
    if (lifecycle.state().terminal()) {
      return false;
    }
    inbox.add(work);
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
    return true;
  }

  /**
   * Names the owner to tell when the CQ fails; a fault before this is seen by the owner itself
   * ({@link #faulted}).
   */
  void owner(org.apache.pekko.actor.typed.ActorRef<CqLaneOwner.Command> ref) {
    owner = ref;
  }

  private void tellOwner(String why) {
    var o = owner;
    if (o != null) {
      o.tell(new CqLaneOwner.Faulted(this, why));
    }
  }

  /** The lane's thread, once started. */
  Thread thread() {
    return thread;
  }

  /** Why the lane stopped working (its CQ failed), or null. */
  String faulted() {
    return faulted;
  }

  /** Counts {@code qp} as one of this lane's QPs until it is destroyed. */
  void adopt(RcQp qp) {
    live.add(qp);
    if (faulted != null && qp.broken == null) {
      qp.broken = faulted; // made just as the lane faulted: never posted on
    }
  }

  /**
   * Destroys {@code qp}, on which nothing was ever posted (its owner could not connect it), from
   * the owner's thread; a failed destroy keeps it counted here (never retried). A QP whose lane
   * claimed its destroy first (the lane faulted, or the monitor had it retired) is left to the
   * lane.
   *
   * @return 0, or the errno of the destroy
   */
  int destroyUnused(RcQp qp) {
    if (!qp.claimDestroy()) {
      return 0; // its lane is closing it (it faulted, or the monitor retired it): not twice
    }
    int rc = verbs.destroyQp(qp.qp);
    if (rc == 0) {
      qp.destroyed = true;
      live.remove(qp);
      releaseCqes(qp.qp);
    }
    return rc;
  }

  /** Entries of this lane's CQ ({@code rdma.maxCqes}, at most the device's {@code max_cqe}). */
  final int cqCapacity;

  /**
   * CQ entries reserved by the QPs on this CQ: each reserves every WR it could have outstanding at
   * once (a flush completes each of them), so the CQ can never overrun. Charged before a QP is
   * made, returned when it is destroyed; a QP whose destroy failed keeps its share.
   */
  private final java.util.concurrent.atomic.AtomicInteger cqReserved =
      new java.util.concurrent.atomic.AtomicInteger();

  /** Each made QP's reservation, by its handle. */
  private final java.util.concurrent.ConcurrentHashMap<Long, Integer> cqOf =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** Reserves {@code n} CQ entries for a QP about to be made; false when the CQ lacks them. */
  boolean reserveCqes(int n) {
    while (true) {
      int now = cqReserved.get();
      if (n > cqCapacity - now) {
        return false;
      }
      if (cqReserved.compareAndSet(now, now + n)) {
        return true;
      }
    }
  }

  /** The QP made with an {@link #reserveCqes} of {@code n}: its share, until it is destroyed. */
  void recordCqes(Verbs.Qp qp, int n) {
    cqOf.put(qp.handle(), n);
  }

  /** Returns a reservation whose QP was never made. */
  void cancelCqes(int n) {
    cqReserved.addAndGet(-n);
  }

  /** {@code qp} was destroyed: its CQ entries are free again. */
  void releaseCqes(Verbs.Qp qp) {
    Integer n = cqOf.remove(qp.handle());
    if (n != null) {
      cqReserved.addAndGet(-n);
    }
  }

  /** CQ entries reserved now, for the owner view. */
  int reservedCqes() {
    return cqReserved.get();
  }

  /** The QPs on this lane's CQ not destroyed yet (a live view; any thread may read it). */
  java.util.Collection<RcQp> liveQps() {
    return java.util.Collections.unmodifiableSet(live);
  }

  /**
   * Whether this lane faulted and every QP on its CQ was destroyed since (a destroy is the native
   * proof that no work request of that QP can still touch memory or complete into the CQ): only
   * then may the lane be reclaimed.
   */
  boolean nativelyDrained() {
    return faulted != null && live.isEmpty();
  }

  /**
   * The CQ failed (on the lane thread): the lane is faulted for good. Nothing more is posted on it,
   * and every QP on it is handed to its owner to retire (to ERR, destroyed at once: its completions
   * can no longer be read, so waiting for them proves nothing). A QP whose destroy fails keeps its
   * work requests pending, so their tasks end UNQUIESCED with their loans and charges, and the lane
   * is then never reclaimed.
   */
  private void fault(String why) {
    if (faulted != null) {
      return;
    }
    faulted = why;
    rail.lanesFaulted.increment();
    tellOwner(why);
    for (RcQp qp : List.copyOf(live)) {
      if (qp.broken == null) {
        qp.broken = why;
      }
      RcQp.QpOwner owner = qp.owner;
      if (owner != null) {
        owner.qpFailed(qp, why); // or it is closing it already
      } else {
        close(List.of(qp), why, () -> {}); // not handed to its owner yet
      }
    }
  }

  // ---------------------------------------------------------------- the duty cycle

  @Override
  public void run() {
    IdleStrategy idle = LaneIdle.strategy(MAX_PARK_NANOS);
    try {
      int idlePasses = 0;
      while (lifecycle.state().ordinal() < LaneLifecycle.State.CLOSING.ordinal()
          || !closing.isEmpty()
          || !inbox.isEmpty()) {
        int work = pass();
        idlePasses = work > 0 ? 0 : idlePasses + 1;
        if (idlePasses > QUIET_AFTER_PASSES && quiet()) {
          // Nothing can complete: sleep until work is handed over (submit unparks), not 1 ms.
          LockSupport.parkNanos(this, QUIET_PARK_NANOS);
        } else {
          idle.idle(work);
        }
      }
    } catch (RuntimeException | Error e) {
      faulted = "lane failed: " + e;
      tellOwner(faulted);
      throw e;
    } finally {
      lifecycle.moveTo(LaneLifecycle.State.CLOSED);
    }
  }

  private int pass() {
    int work = 0;
    Runnable r;
    while ((r = inbox.poll()) != null) {
      r.run();
      work++;
    }
    work += pump();
    work += sweepDeadlines();
    int n = faulted == null ? verbs.pollCq(cq, wcs) : 0;
    if (n < 0) {
      fault("ibv_poll_cq on " + rail.device + " failed: errno " + -n);
      n = 0;
    }
    for (int i = 0; i < n; i++) {
      Verbs.Wc wc = wcs[i];
      wcs[i] = null;
      Completion c = take(wc.wrId());
      if (c != null) {
        c.completed(this, wc);
      }
    }
    work += n;
    if (n > 0 && channel != null && faulted == null) {
      // An event is raised only for a completion: none can be pending after a pass that polled
      // none, so an empty channel is not asked (each empty answer is an allocation).
      takeEvents();
    }
    if (!closing.isEmpty()) {
      work += finishClosing();
    }
    receipts.flush();
    if (!dirty.isEmpty()) {
      for (ControlLink link : dirty) {
        link.flush();
      }
      dirty.clear();
    }
    return work;
  }

  /** A WR id for {@code c}, pending until its completion comes (or its QP is destroyed). */
  private long track(Completion c) {
    long id = nextWrId++;
    pending.put(id, c);
    if (c.receive()) {
      receives++;
    }
    return id;
  }

  /** Removes WR {@code id}'s completion from {@link #pending}; null when it is not there. */
  private Completion take(long id) {
    Completion c = pending.remove(id);
    if (c != null && c.receive()) {
      receives--;
    }
    return c;
  }

  /**
   * Whether nothing can happen on this lane until work is handed to it: its inbox, post queues and
   * closing QPs are empty, nothing is posted but receives, and no window is open on its QPs (a
   * completion SEND lands only in a receive of a QP with a window open).
   */
  private boolean quiet() {
    return inbox.isEmpty()
        && queued.isEmpty()
        && closing.isEmpty()
        && pending.size() == receives
        && openWindows.get() == 0;
  }

  void wrote(ControlLink link) {
    dirty.add(link);
  }

  // ---------------------------------------------------------------- requester slices

  /**
   * Queues {@code s} (on the lane thread) at its task's priority on its QP, waiting since {@code
   * handedAtNanos}, when it was handed to this lane: a slice that sat in the inbox while the lane
   * was busy (or held) has waited that long too. Stamps never go back in this lane's order of
   * offers (two callers can hand work in the other order of their clocks), so each tier of a post
   * queue stays in time order and its head stays its oldest.
   */
  void enqueue(Slice s, long handedAtNanos) {
    long at = stamped && handedAtNanos - lastStamp < 0 ? lastStamp : handedAtNanos;
    lastStamp = at;
    stamped = true;
    s.qp.queue.offer(s, s.work.priority(), at);
    queued.add(s.qp);
  }

  /** The latest stamp {@link #enqueue} gave, once it gave one (lane thread only). */
  private long lastStamp;

  private boolean stamped;

  /** Deadline sweeps run at most this often (each pass looks at the clock, not at every slice). */
  private static final long SWEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  private long lastSweep;
  private boolean swept;

  /** Slices with their payload posted and past their deadline, found by a sweep (reused). */
  private final List<Slice> expired = new ArrayList<>();

  /**
   * At most once per millisecond: fails every queued slice whose batch was cancelled or whose
   * deadline passed, never sent ({@code CANCELLED}, {@code TIMEOUT}, effect {@code NONE}); and
   * retires each QP on which a slice's payload is still out past its deadline, as TCP closes a lane
   * with a frame on the wire past its deadline: the QP goes to ERR and is destroyed, so the drain
   * proves what it touched, and only then does the slice fail {@code TIMEOUT} (a READ {@code NONE},
   * a WRITE {@code UNKNOWN}: C5, C6). Neither counts against the rail pair.
   */
  private int sweepDeadlines() {
    if (queued.isEmpty() && pending.isEmpty()) {
      return 0;
    }
    long now = System.nanoTime();
    if (swept && now - lastSweep < SWEEP_NANOS) {
      return 0;
    }
    swept = true;
    lastSweep = now;
    int failed = 0;
    if (!queued.isEmpty()) {
      var it = queued.iterator();
      while (it.hasNext()) {
        RcQp qp = it.next();
        failed +=
            qp.queue.removeIf(
                sl -> sl.work.sink().cancelled() || now - sl.work.deadlineNanos() > 0,
                sl -> failUnsent(sl, now));
        if (qp.queue.isEmpty()) {
          it.remove();
        }
      }
    }
    if (!pending.isEmpty()) {
      pending.forEachLong(
          (id, c) -> {
            if (c instanceof PayloadDone d
                && !d.s.finished()
                && !d.s.payloadCompleted
                && now - d.s.work.deadlineNanos() > 0) {
              expired.add(d.s);
            }
          });
      for (Slice sl : expired) {
        if (!sl.qp.retiring) {
          sl.channel.pastDeadline();
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
  private void failUnsent(Slice sl, long now) {
    if (sl.work.sink().cancelled()) {
      sl.fail(
          receipts,
          ErrorKind.CANCELLED,
          "the batch was cancelled before this slice was sent",
          false);
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
  private int pump() {
    if (queued.isEmpty()) {
      return 0;
    }
    long now = System.nanoTime();
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

  private void ask(Slice s) {
    RcQp qp = s.qp;
    if (qp.broken != null) {
      s.fail(receipts, ErrorKind.UNAVAILABLE, s.channel.label() + ": " + qp.broken, false);
      return;
    }
    long now = System.nanoTime();
    if (s.work.sink().cancelled() || now - s.work.deadlineNanos() > 0) {
      failUnsent(s, now);
      return;
    }
    s.takeSlot();
    s.stage = Slice.Stage.ASKED;
    if (!s.channel.askGrant(s)) {
      s.fail(
          receipts,
          ErrorKind.UNAVAILABLE,
          s.channel.label() + ": the control link closed (never sent)",
          false);
      return;
    }
    wrote(s.channel.link());
  }

  /** Asks for {@code qp}'s next queued slices while it has room (after one finished, too). */
  private int next(RcQp qp) {
    int asked = 0;
    while (qp.slicesInFlight < slicesPerQp) {
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
    if (qp.broken != null) {
      s.fail(receipts, ErrorKind.UNAVAILABLE, s.channel.label() + ": " + qp.broken, false);
      next(qp);
      return;
    }
    VerbsResult<Verbs.Mr> mr = rail.mrs.mrFor(s.work.local());
    if (!mr.ok()) {
      s.fail(receipts, ErrorKind.INVALID_ARGUMENT, "local memory: " + mr.describe(), false);
      next(qp);
      return;
    }
    long local = s.work.local().address() + s.work.localOffset() + s.offsetInTask;
    boolean read = s.work.op() == Op.READ;
    Completion payload = new PayloadDone(s);
    Completion send = new SendDone(s);
    long payloadId = track(payload);
    long sendId = track(send);
    rail.hooks.beforeRdmaPost(name, qp.qp.qpNum(), payloadId, !read);
    if (qp.broken != null || s.channel.closedBecause() != null) {
      // The endpoint broke while the hook held the lane: the payload was never posted.
      untrack(sendId);
      untrack(payloadId);
      s.fail(
          receipts,
          ErrorKind.UNAVAILABLE,
          s.channel.label()
              + ": "
              + (qp.broken != null ? qp.broken : s.channel.closedBecause())
              + " (never sent)",
          false);
      next(qp);
      return;
    }
    idSlot.set(ValueLayout.JAVA_LONG, 0, s.id);
    Verbs.PostResult posted =
        verbs.postSend(
            qp.qp,
            List.of(
                Verbs.SendWr.rdma(
                    payloadId,
                    read ? Ibv.WR_RDMA_READ : Ibv.WR_RDMA_WRITE,
                    Ibv.SEND_SIGNALED,
                    List.of(new Verbs.Sge(local, (int) s.length, mr.value().lkey())),
                    g.addr(),
                    g.rkey()),
                Verbs.SendWr.send(
                    sendId,
                    Ibv.SEND_SIGNALED | Ibv.SEND_INLINE | Ibv.SEND_FENCE,
                    List.of(new Verbs.Sge(idSlot.address(), 8, idMr.lkey())))));
    if (!posted.posted()) {
      untrack(sendId);
      if (posted.badIndex() == 0) {
        untrack(payloadId);
        s.fail(
            receipts,
            ErrorKind.UNAVAILABLE,
            "ibv_post_send on " + qp.rail.device + ": errno " + posted.errno(),
            true);
        next(qp);
      } else {
        qp.posted(1);
        s.postedAt = System.nanoTime();
        s.channel.selector().posted(rail.index, s.length, s.postedAt);
        s.payloadPosted = true;
        s.stage = Slice.Stage.POSTED;
        // No SEND behind it: the payload's own completion gives the slot back.
      }
      s.channel.qpFailed(qp, "ibv_post_send refused the completion SEND: errno " + posted.errno());
      return;
    }
    qp.posted(2);
    s.postedAt = System.nanoTime();
    s.channel.selector().posted(rail.index, s.length, s.postedAt);
    s.payloadPosted = true;
    s.sendPosted = true;
    s.stage = Slice.Stage.POSTED;
  }

  private void untrack(long wrId) {
    take(wrId);
  }

  private final class PayloadDone implements Completion {
    private final Slice s;

    PayloadDone(Slice s) {
      this.s = s;
    }

    @Override
    public RcQp qp() {
      return s.qp;
    }

    @Override
    public void completed(CqLane lane, Verbs.Wc wc) {
      s.qp.debt--;
      s.payloadCompleted = true;
      if (!s.sendPosted) {
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
      if (!s.sendPosted) {
        s.releaseSlot();
      }
      failAbandoned(s, why);
    }
  }

  private final class SendDone implements Completion {
    private final Slice s;

    SendDone(Slice s) {
      this.s = s;
    }

    @Override
    public RcQp qp() {
      return s.qp;
    }

    @Override
    public void completed(CqLane lane, Verbs.Wc wc) {
      s.qp.debt--;
      s.releaseSlot();
      if (wc.status() == Ibv.WC_SUCCESS) {
        s.sendDone = true;
        s.succeedIfDone(receipts);
        next(s.qp);
        return;
      }
      failFromWc(s, wc, true);
    }

    @Override
    public void abandoned(CqLane lane, String why) {
      s.releaseSlot();
      if (s.payloadCompleted) {
        failAbandoned(s, why);
      }
    }
  }

  /**
   * Fails {@code s}, whose QP was destroyed with its WRs unanswered. On a faulted lane that is the
   * lane's own failure, not the wire's: UNAVAILABLE naming it, not counted against the rail pair.
   */
  private void failAbandoned(Slice s, String why) {
    String lane = faulted;
    if (System.nanoTime() - s.work.deadlineNanos() > 0) {
      // Past its deadline (its QP was retired for it, or failed meanwhile): the drain is proven
      // now; a deadline is no fault of the rail pair.
      s.fail(
          receipts,
          ErrorKind.TIMEOUT,
          s.channel.label() + ": the deadline passed with its payload on the wire: " + why,
          false);
    } else if (lane != null) {
      s.fail(
          receipts,
          ErrorKind.UNAVAILABLE,
          s.channel.label() + ": " + name + ": " + lane + "; " + why,
          false);
    } else {
      s.fail(receipts, ErrorKind.PEER_LOST, s.channel.label() + ": " + why, true);
    }
  }

  /**
   * A WR of {@code s} failed: the slice fails, unless this was its completion SEND and its payload
   * WR has not completed yet (its completion was lost, or is still to come): then the failure waits
   * for that WR's completion or its abandonment when the QP is destroyed, since until then the
   * payload may still touch the task's memory (C5: QP destruction precedes the drain receipt).
   */
  private void failFromWc(Slice s, Verbs.Wc wc, boolean fromSend) {
    boolean flushed = wc.status() == Ibv.WC_WR_FLUSH_ERR;
    ErrorKind kind =
        switch (wc.status()) {
          case Ibv.WC_REM_ACCESS_ERR -> ErrorKind.PERMISSION_DENIED;
          case Ibv.WC_WR_FLUSH_ERR -> ErrorKind.UNAVAILABLE;
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
    s.channel.qpFailed(s.qp, why);
    next(s.qp);
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

  // ---------------------------------------------------------------- source grants

  /**
   * Binds a fresh window for {@code g} (on the lane thread) and answers the requester when the bind
   * completed. The grant holds its registration's loan from here on.
   */
  void bind(SourceSession session, Grant g) {
    RcQp qp = g.qp;
    if (qp.broken != null) {
      session.refuse(this, g, ErrorKind.UNAVAILABLE, qp.broken);
      return;
    }
    VerbsResult<Verbs.Mr> mr = rail.mrs.mrFor(g.registration);
    if (!mr.ok()) {
      session.refuse(this, g, ErrorKind.UNAVAILABLE, mr.describe());
      return;
    }
    VerbsResult<Verbs.Mw> mw = verbs.allocMw(rail.pd, Ibv.MW_TYPE_2);
    if (!mw.ok()) {
      session.refuse(this, g, ErrorKind.RESOURCE_EXHAUSTED, mw.describe());
      return;
    }
    g.mw = mw.value();
    g.rkey = Ibv.incRkey(g.mw.rkey());
    int access = g.op == Op.READ ? Ibv.ACCESS_REMOTE_READ : Ibv.ACCESS_REMOTE_WRITE;
    long addr = g.registration.segment().address() + g.offset;
    long id =
        track(
            new Completion() {
              @Override
              public RcQp qp() {
                return qp;
              }

              @Override
              public void completed(CqLane lane, Verbs.Wc wc) {
                qp.debt--;
                if (wc.status() == Ibv.WC_SUCCESS) {
                  g.bound = true;
                  session.bound(lane, g, addr);
                } else {
                  session.refuse(lane, g, ErrorKind.UNAVAILABLE, "bind status " + wc.status());
                  session.qpFailed(qp, "a window bind failed: status " + wc.status());
                }
              }

              @Override
              public void abandoned(CqLane lane, String why) {
                session.refuse(lane, g, ErrorKind.UNAVAILABLE, why);
              }
            });
    Verbs.PostResult posted =
        verbs.postSend(
            qp.qp,
            List.of(
                Verbs.SendWr.bindMw(
                    id,
                    Ibv.SEND_SIGNALED,
                    new Verbs.MwBind(g.mw, g.rkey, mr.value(), addr, g.length, access))));
    if (!posted.posted()) {
      untrack(id);
      session.refuse(
          this, g, ErrorKind.RESOURCE_EXHAUSTED, "ibv_post_send: errno " + posted.errno());
      return;
    }
    qp.posted(1);
    // Open until it is released: its completion SEND may land in a receive at any time.
    g.countedOpen = true;
    openWindows.incrementAndGet();
  }

  /** Posts receive {@code slot} of {@code qp}'s completion slab (on the lane thread). */
  boolean postReceive(
      SourceSession session, RcQp qp, MemorySegment slab, Verbs.Mr slabMr, int slot) {
    long id =
        track(
            new Completion() {
              @Override
              public RcQp qp() {
                return qp;
              }

              @Override
              public void completed(CqLane lane, Verbs.Wc wc) {
                if (wc.status() == Ibv.WC_SUCCESS) {
                  long grantId = slab.get(ValueLayout.JAVA_LONG, slot * 8L);
                  // The slot's receive is posted again first, so that the ACK the session answers
                  // also says the QP is ready for the next completion SEND.
                  if (qp.broken == null) {
                    postReceive(session, qp, slab, slabMr, slot);
                  }
                  session.completionArrived(lane, qp, grantId);
                } else if (wc.status() != Ibv.WC_WR_FLUSH_ERR) {
                  session.qpFailed(qp, "a receive failed: status " + wc.status());
                }
              }

              @Override
              public void abandoned(CqLane lane, String why) {}

              @Override
              public boolean receive() {
                return true;
              }
            });
    Verbs.PostResult r =
        verbs.postRecv(
            qp.qp,
            List.of(
                new Verbs.RecvWr(
                    id, List.of(new Verbs.Sge(slab.address() + slot * 8L, 8, slabMr.lkey())))));
    if (!r.posted()) {
      untrack(id);
      return false;
    }
    return true;
  }

  // ---------------------------------------------------------------- closing QPs

  /**
   * Closes {@code qps} (on the lane thread): nothing more is posted on them, they move to ERR so
   * the provider flushes their work requests, and each is destroyed once all of them came back, or
   * after 5 s (a completion that never comes); their unanswered WRs are then abandoned. {@code
   * then} runs on the lane after the last one was destroyed (or its destroy failed and it was
   * kept).
   */
  void close(List<RcQp> qps, String reason, Runnable then) {
    long deadline = System.nanoTime() + CLOSE_DEADLINE_NANOS;
    for (RcQp qp : qps) {
      if (qp.broken == null) {
        qp.broken = reason;
      }
      if (qp.destroyAttempted() || closing.containsKey(qp)) {
        continue; // destroyed (or kept after a failed destroy) already, or on its way: never twice
      }
      verbs.modifyQp(qp.qp, Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE);
      closing.put(qp, deadline);
      Slice queuedSlice;
      while ((queuedSlice = qp.queue.poll()) != null) {
        queuedSlice.fail(receipts, ErrorKind.UNAVAILABLE, reason + " (never sent)", false);
      }
      queued.remove(qp);
    }
    afterClose.add(new CloseWaiter(List.copyOf(qps), then));
    finishClosing();
    runFinishedWaiters();
  }

  private record CloseWaiter(List<RcQp> qps, Runnable then) implements Runnable {
    @Override
    public void run() {
      then.run();
    }
  }

  /** The QPs whose destroy failed: kept, never destroyed twice (spec 001). */
  final List<RcQp> undestroyed = new ArrayList<>();

  private int finishClosing() {
    int done = 0;
    long now = System.nanoTime();
    var it = closing.entrySet().iterator();
    while (it.hasNext()) {
      var e = it.next();
      RcQp qp = e.getKey();
      if (qp.debt > 0 && now - e.getValue() < 0 && faulted == null) {
        continue;
      }
      it.remove();
      done++;
      if (!qp.claimDestroy()) {
        continue; // its owner destroyed it unused meanwhile (it never carried work)
      }
      int rc = verbs.destroyQp(qp.qp);
      if (rc == 0) {
        qp.destroyed = true;
        live.remove(qp);
        releaseCqes(qp.qp);
      } else {
        undestroyed.add(qp);
      }
      if (rc != 0) {
        // The QP lives on, and may still touch its WRs' memory: they stay pending, with no
        // receipt, so their tasks go UNQUIESCED (loans and charges kept) unless a completion
        // still comes.
        continue;
      }
      abandonAll(qp);
    }
    if (done > 0) {
      runFinishedWaiters();
    }
    return done;
  }

  /** The pending WRs of {@code qp}, just destroyed: abandoned, in post order. */
  private void abandonAll(RcQp qp) {
    List<Long> ids = new ArrayList<>();
    pending.forEachLong(
        (id, c) -> {
          if (c.qp() == qp) {
            ids.add(id);
          }
        });
    ids.sort(null);
    for (long id : ids) {
      take(id).abandoned(this, "its QP was destroyed before this work request completed");
    }
  }

  private void runFinishedWaiters() {
    List<CloseWaiter> ready = new ArrayList<>();
    var waiters = afterClose.iterator();
    while (waiters.hasNext()) {
      CloseWaiter w = waiters.next();
      if (w.qps().stream().noneMatch(closing::containsKey)) {
        waiters.remove();
        ready.add(w);
      }
    }
    // Run after the scan: a waiter may close more QPs on this lane.
    ready.forEach(CloseWaiter::run);
  }

  /** The receipts of the pass in progress (for owners that fail work on the lane thread). */
  ReceiptBatcher receipts() {
    return receipts;
  }

  /** Stops the lane once its closing QPs are done; what is queued still runs. */
  void stop() {
    lifecycle.moveTo(LaneLifecycle.State.CLOSING);
    Thread t = thread;
    if (t != null) {
      LockSupport.unpark(t);
    }
  }

  /** Whether the lane's thread has ended (or never started). */
  boolean ended() {
    Thread t = thread;
    return t == null || !t.isAlive();
  }

  /** Waits for the lane thread to end; true when it did within {@code millis}. */
  boolean join(long millis) {
    Thread t = thread;
    if (t == null) {
      return true;
    }
    try {
      t.join(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return !t.isAlive();
  }

  /**
   * Releases the lane's own native objects after its thread ended: its id slot's MR, then the CQ
   * (its taken events acknowledged first, as {@code ibv_destroy_cq} requires), then its completion
   * channel, only once the CQ on it is gone (spec 001: a channel with a CQ on it is busy).
   *
   * @return what could not be released, or empty
   */
  List<String> release() {
    if (released != null) {
      return released;
    }
    List<String> failed = new ArrayList<>();
    int rc = verbs.deregMr(idMr);
    if (rc != 0) {
      failed.add(name + ": ibv_dereg_mr errno " + rc);
    }
    if (channel != null && unacked > 0) {
      verbs.ackCqEvents(cq, unacked);
      unacked = 0;
    }
    rc = verbs.destroyCq(cq);
    if (rc != 0) {
      failed.add(name + ": ibv_destroy_cq errno " + rc);
    } else if (channel != null) {
      rc = verbs.destroyCompChannel(channel);
      if (rc != 0) {
        failed.add(name + ": ibv_destroy_comp_channel errno " + rc);
      }
    }
    if (failed.isEmpty()) {
      arena.close();
    }
    released = List.copyOf(failed);
    return released;
  }
}
