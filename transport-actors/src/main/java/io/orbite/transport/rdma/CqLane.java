package io.orbite.transport.rdma;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.spi.ReceiptBatcher;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.transport.lane.LaneAgent;
import io.orbite.transport.lane.LaneIdle;
import io.orbite.transport.lane.LaneRuntime;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.collections.LongObjConsumer;
import org.agrona.concurrent.IdleStrategy;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One CQ of a rail and the lane that polls it, on the lane runtime ({@link LaneAgent}): every QP of
 * the rail that this lane serves, requester or source, completes here, and this lane's thread is
 * the only one that posts on those QPs, so their work-request accounting needs no lock. Other
 * threads hand it work through {@link #submit} (a task to run on the lane) and it wakes at once.
 *
 * <p>This class is the CQ runtime: the cycle, the completion table (each work request's id and what
 * learns of its completion), the poll, the completion channel's events and the lane's fault. What
 * is posted and why is its roles': the {@link RequesterPoster} (grant requests, payload and
 * completion posts in priority order, C14), the {@link SourceWindows} (window binds and completion
 * receives) and the {@link QpCloser} (QPs to ERR, flushed, destroyed).
 *
 * <p>A cycle: take what was handed over (the whole inbox at once, run outside its lock); at most
 * once per millisecond the deadline sweep ({@link RequesterPoster#sweep}); ask grants for queued
 * slices; poll up to 32 completions; finish closing QPs whose work requests all came back (or whose
 * deadline passed); then post the pass's completion SENDs (one per QP), deliver the pass's
 * receipts, one call per batch, and flush the control links it wrote to. A lane with nothing that
 * can complete parks for up to 50 ms ("quiet"), else it backs off to 1 ms parks (at once, without
 * spinning, when its provider wakes it on each completion: {@link Verbs#wakeOnCompletion}); work
 * handed over unparks it. With completion events on, an idle lane sleeps on its channel for those
 * times instead, woken by a completion's event too. After a close it keeps cycling while QPs are
 * still closing.
 *
 * <p>Every work request is signalled, so a QP's send-queue debt is exact. A requester QP holds at
 * most {@code maxSendWr / 4} slices (a payload WR each, and at most one completion SEND each: one
 * SEND per QP per pass names that pass's slices), so its debt stays at most half its send queue.
 *
 * <p>Why this file is over 500 lines: the cycle, the completion table, the id slab of the
 * completion SENDs and the lane's stop and release share the lane thread's state; its roles
 * (requester, source, closer) are already classes of their own.
 */
final class CqLane extends LaneAgent<Runnable> {
  private static final Logger LOG = LoggerFactory.getLogger(CqLane.class);

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

  private static final int POLL_BATCH = 32;
  private static final long MAX_PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  final Rail rail;
  final int index;
  final Verbs verbs;
  final Verbs.Cq cq;

  /**
   * The CQ's completion channel's events ({@code rdma.completionEvents}); a channel is destroyed
   * after the CQ at release, and one whose destroy fails is kept.
   */
  final CompletionEvents events;

  final int slicesPerQp;

  /** How the post queues of this lane's QPs age (C14). */
  final Duration aging;

  final boolean agingPerEntry;

  /** The QPs on this lane's CQ not destroyed yet, and their CQ entries. */
  final LaneQps qps;

  /** Requester slices: grant requests, posts, completions, deadlines. */
  final RequesterPoster requester;

  /** Source windows: binds and completion receives. */
  final SourceWindows windows;

  /** QPs to ERR, flushed, destroyed. */
  final QpCloser closer;

  /** What the pass's ended slices and parents give back to their budgets, at its end. */
  final LaneReleases releases = new LaneReleases();

  /** Chunks of {@link #idSlab}: one per completion SEND that may be out at once on this lane. */
  static final int ID_CHUNKS = 1024;

  /**
   * The ids completion SENDs carry, {@link RdmaWire#COMPLETION_RECEIVE_BYTES} per chunk: a SEND
   * holds its chunk from its post until its completion (or its QP's destroy), since the device
   * reads it as the SEND executes.
   */
  final MemorySegment idSlab;

  final Verbs.Mr idMr;

  /** Free chunks of {@link #idSlab} (a stack; lane thread only). */
  private final int[] freeChunks = new int[ID_CHUNKS];

  private int freeChunkCount;

  private final Arena arena = Arena.ofShared();
  private final Long2ObjectHashMap<Completion> pending = new Long2ObjectHashMap<>();

  /**
   * Whether the provider wakes this lane as it queues each completion on its CQ ({@link
   * Verbs#wakeOnCompletion}: the software provider does): an idle pass then parks at once, since
   * neither a completion nor handed work can wait for it; else it spins briefly, yields, then
   * parks.
   */
  private final boolean completionWakes;

  /** Posted receives among {@link #pending} (lane thread only). */
  private int receives;

  private long nextWrId = 1;

  /** The control links this pass wrote to, each once (a lane writes to few). */
  private final List<ControlLink> dirty = new ArrayList<>(4);

  private final Verbs.Wc[] wcs = new Verbs.Wc[POLL_BATCH];
  private final IdleStrategy idle = LaneIdle.strategy(MAX_PARK_NANOS);
  private int idlePasses;

  /** The inbox's spare deque: the whole inbox is taken by one swap (lane thread only). */
  private ArrayDeque<Runnable> spare = new ArrayDeque<>(256);

  private volatile String faulted;

  /** The actor that owns this lane's lifecycle ({@link CqLaneOwner}), told when the CQ fails. */
  private volatile ActorRef<CqLaneOwner.Command> owner;

  /** What {@link #release} answered: it runs once and is never retried (spec 001). */
  private List<String> released;

  CqLane(
      Rail rail,
      int index,
      Verbs.Cq cq,
      Verbs.CompChannel channel,
      int maxSendWr,
      Duration aging,
      boolean agingPerEntry) {
    super("rdma " + rail.device + " lane " + index, SWEEP_NANOS);
    this.aging = aging;
    this.agingPerEntry = agingPerEntry;
    this.rail = rail;
    this.index = index;
    this.verbs = rail.verbs;
    this.cq = cq;
    this.qps = new LaneQps(rail.cqes());
    this.slicesPerQp = Math.max(1, maxSendWr / 4);
    this.idSlab = arena.allocate((long) ID_CHUNKS * RdmaWire.COMPLETION_RECEIVE_BYTES, 64);
    this.idMr = verbs.regMr(rail.pd, idSlab, Ibv.ACCESS_LOCAL_WRITE).value();
    for (int i = 0; i < ID_CHUNKS; i++) {
      freeChunks[i] = ID_CHUNKS - 1 - i;
    }
    this.freeChunkCount = ID_CHUNKS;
    this.requester = new RequesterPoster(this);
    this.windows = new SourceWindows(this);
    this.closer = new QpCloser(this);
    this.events = new CompletionEvents(verbs, cq, channel);
    this.completionWakes = verbs.wakeOnCompletion(cq, this::wake);
  }

  /** Starts the lane's thread, {@code orbite-rdma-<device>-lane-<i>}, on the lane runtime. */
  void start() {
    LaneRuntime.start("orbite-" + name().replace(' ', '-'), this);
  }

  /** Runs {@code work} on the lane thread, soon; refused (false) once the lane has stopped. */
  boolean submit(Runnable work) {
    if (!offer(work)) {
      return false;
    }
    wake();
    return true;
  }

  /**
   * Names the owner to tell when the CQ fails; a fault before this is seen by the owner itself
   * ({@link #faulted}).
   */
  void owner(ActorRef<CqLaneOwner.Command> ref) {
    owner = ref;
  }

  private void tellOwner(String why) {
    ActorRef<CqLaneOwner.Command> o = owner;
    if (o != null) {
      o.tell(new CqLaneOwner.Faulted(this, why));
    }
  }

  /** Whether the caller runs on this lane's thread (its pass flushes what it writes). */
  boolean onLaneThread() {
    return Thread.currentThread() == thread();
  }

  /** Why the lane stopped working (its CQ failed), or null. */
  String faulted() {
    return faulted;
  }

  /** Counts {@code qp} as one of this lane's QPs until it is destroyed. */
  void adopt(RcQp qp) {
    qps.add(qp);
    String f = faulted;
    if (f != null) {
      qp.life.stop(f, ErrorKind.UNAVAILABLE); // made just as the lane faulted: never posted on
    }
  }

  /**
   * Whether this lane faulted and every QP on its CQ was destroyed since (a destroy is the native
   * proof that no work request of that QP can still touch memory or complete into the CQ): only
   * then may the lane be reclaimed.
   */
  boolean nativelyDrained() {
    return faulted != null && qps.none();
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
    for (RcQp qp : List.copyOf(qps.live())) {
      qp.life.stop(why, ErrorKind.UNAVAILABLE);
      RcQp.QpOwner o = qp.owner;
      if (o != null) {
        o.qpFailed(qp, why); // or it is closing it already
      } else {
        closer.close(List.of(qp), why, () -> {}); // not handed to its owner yet
      }
    }
  }

  // ---------------------------------------------------------------- the cycle

  /** Takes the whole inbox by one swap and runs it outside the inbox's lock, oldest first. */
  @Override
  protected int takeInbox() {
    ArrayDeque<Runnable> taken = inbox.swap(spare);
    int n = taken.size();
    Runnable r;
    while ((r = taken.poll()) != null) {
      r.run();
    }
    spare = taken;
    return n;
  }

  @Override
  protected void take(Runnable item) {
    item.run();
  }

  @Override
  protected int sweep(long nowNanos) {
    return requester.sweep(nowNanos);
  }

  @Override
  protected int pass(long nowNanos) {
    int work = requester.pump(nowNanos);
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
    if (n > 0 && events.on() && faulted == null) {
      // An event is raised only for a completion: none can be pending after a pass that polled
      // none, so an empty channel is not asked (each empty answer is an allocation).
      events.take();
    }
    if (closer.busy()) {
      work += closer.finishClosing();
    }
    return work;
  }

  /**
   * Posts the pass's completion SENDs, gives back what its ended slices held, delivers its
   * receipts, then flushes the control links the pass wrote to.
   */
  @Override
  protected void endPass() {
    requester.postCompletionSends();
    releases.giveBack(); // before the receipts: a receipt is seen with its charge returned
    receipts.flush();
    if (!dirty.isEmpty()) {
      for (int i = 0; i < dirty.size(); i++) {
        dirty.get(i).flush();
      }
      dirty.clear();
    }
  }

  /** Running, and after a close while QPs are still closing or work still waits. */
  @Override
  protected boolean keepRunning() {
    return lifecycle.running() || closer.busy() || inbox.count() != 0;
  }

  @Override
  protected void idle(int work) {
    idlePasses = work > 0 ? 0 : idlePasses + 1;
    boolean settled = idlePasses > QUIET_AFTER_PASSES;
    if (settled && events.on() && faulted == null && inbox.count() == 0 && !closer.busy()) {
      // Completion events: block on the channel. Every pass since the CQ was armed polled it
      // empty, so a completion raises an event, and work handed over unparks the thread. A quiet
      // lane waits up to 50 ms, one with work posted 1 ms (the deadline sweep's period).
      events.sleep(quiet() ? QUIET_PARK_NANOS : MAX_PARK_NANOS);
    } else if (settled && quiet()) {
      // Nothing can complete: sleep until work is handed over (submit unparks), not 1 ms.
      LockSupport.parkNanos(this, QUIET_PARK_NANOS);
    } else if (completionWakes && work == 0) {
      // A completion or handed work unparks it: no spin, which takes a core its peers need.
      LockSupport.parkNanos(this, MAX_PARK_NANOS);
    } else {
      idle.idle(work);
    }
  }

  /**
   * Whether nothing can happen on this lane until work is handed to it: its inbox, post queues and
   * closing QPs are empty, nothing is posted but receives, and no window is open on its QPs (a
   * completion SEND lands only in a receive of a QP with a window open).
   */
  private boolean quiet() {
    return inbox.count() == 0
        && requester.idle()
        && !closer.busy()
        && pending.size() == receives
        && windows.open() == 0;
  }

  /**
   * The cycle ended. Work handed over after its last look at the inbox runs now, as the cycle would
   * have run it, and the QPs it closed finish closing (each within its close deadline); slices
   * still queued then fail, never sent. A lane that failed runs nothing more.
   */
  @Override
  protected void drain(Throwable cause, List<Runnable> unstarted) {
    if (cause != null) {
      LOG.error("{}: failed: {}", name(), cause.toString(), cause);
      return;
    }
    for (Runnable r : unstarted) {
      r.run();
    }
    while (closer.busy()) {
      pass(System.nanoTime());
      endPass();
      if (closer.busy()) {
        LockSupport.parkNanos(MAX_PARK_NANOS);
      }
    }
    requester.failQueued(name() + " has stopped");
  }

  /** A lane that failed is faulted: its owner is told, as for a failed CQ. */
  @Override
  protected void ended(Throwable cause) {
    if (cause != null) {
      faulted = "lane failed: " + cause;
      tellOwner(faulted);
    }
  }

  // ---------------------------------------------------------------- the completion table

  /** A WR id for {@code c}, pending until its completion comes (or its QP is destroyed). */
  long track(Completion c) {
    long id = nextWrId++;
    pending.put(id, c);
    if (c.receive()) {
      receives++;
    }
    return id;
  }

  /** Removes WR {@code id}'s completion from the table; null when it is not there. */
  Completion take(long id) {
    Completion c = pending.remove(id);
    if (c != null && c.receive()) {
      receives--;
    }
    return c;
  }

  /** Whether any WR is pending. */
  boolean anyPending() {
    return !pending.isEmpty();
  }

  /**
   * Hands each pending WR to {@code each} (lane thread; {@code each} must not change the table).
   */
  void forEachPending(LongObjConsumer<Completion> each) {
    pending.forEachLong(each);
  }

  /** The ids of {@code qp}'s pending WRs, in post order. */
  List<Long> pendingOf(RcQp qp) {
    List<Long> ids = new ArrayList<>();
    pending.forEachLong(
        (id, c) -> {
          if (c.qp() == qp) {
            ids.add(id);
          }
        });
    ids.sort(null);
    return ids;
  }

  /** A free chunk of {@link #idSlab}, taken; -1 when every chunk is held by a SEND still out. */
  int takeChunk() {
    return freeChunkCount == 0 ? -1 : freeChunks[--freeChunkCount];
  }

  /** Gives chunk {@code c} back: its SEND completed, or can never execute now. */
  void giveChunk(int c) {
    freeChunks[freeChunkCount++] = c;
  }

  /** {@code link} was written to in this pass: flushed at its end. */
  void wrote(ControlLink link) {
    for (int i = 0; i < dirty.size(); i++) {
      if (dirty.get(i) == link) {
        return;
      }
    }
    dirty.add(link);
  }

  /** The receipts of the pass in progress (for owners that fail work on the lane thread). */
  ReceiptBatcher receipts() {
    return receipts;
  }

  // ---------------------------------------------------------------- stop and release

  /** Stops the lane once its closing QPs are done; what is queued still runs. */
  void stop() {
    close();
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
      failed.add(name() + ": ibv_dereg_mr errno " + rc);
    }
    events.ackAll();
    rc = verbs.destroyCq(cq);
    if (rc != 0) {
      failed.add(name() + ": ibv_destroy_cq errno " + rc);
    } else if ((rc = events.destroy()) != 0) {
      failed.add(name() + ": ibv_destroy_comp_channel errno " + rc);
    }
    if (failed.isEmpty()) {
      arena.close();
    }
    released = List.copyOf(failed);
    return released;
  }
}
