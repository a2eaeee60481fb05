package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An RC queue pair: its state machine, its send and receive queues, and the completions it makes.
 *
 * <p>States: RESET to INIT (needs {@code QP_PORT}, a port of the device), INIT to INIT, INIT to RTR
 * (needs {@code QP_AV} with a soft {@code dgid} and {@code QP_DEST_QPN}), RTR to RTS, RTS to RTS;
 * any state to ERR or to RESET; anything else (SQD, SQE, skipping a step) is {@code EINVAL} and
 * changes nothing. A modify without {@code QP_STATE} stays in the current state by the same rules.
 * The other attributes named in the mask are stored and reported by {@code queryQp}; {@code
 * minRnrTimer}, {@code rnrRetry}, {@code timeout} and {@code retryCnt} drive the wire, the access
 * flags and PSNs are not enforced. RESET drops every outstanding WR without a completion and closes
 * the QP's connections.
 *
 * <p>Posting: {@code postSend} in RESET, INIT or RTR answers {@code EINVAL} at index 0 and posts
 * nothing; in ERR every WR completes {@code WC_WR_FLUSH_ERR} at once. In RTS WRs are checked one by
 * one (opcode, SGE count against {@code maxSendSge}: {@code EINVAL}; an inline WR over {@code
 * maxInlineData}, or whose SGEs do not resolve: {@code EINVAL}; the send queue holding {@code
 * maxSendWr} outstanding WRs: {@code ENOMEM}); the first that fails is the bad index and nothing
 * from it on is posted. A WR is outstanding from its post until it completes, signaled or not: its
 * slot is freed when it completes. Inline data is copied at post time. {@code postRecv} in RESET
 * answers {@code EINVAL}; in ERR every WR completes flushed; otherwise {@code maxRecvSge} and
 * {@code maxRecvWr} bound it the same way.
 *
 * <p>Completions: send-queue WRs complete strictly in post order; a successful one makes a CQE only
 * when {@code SEND_SIGNALED} or {@code sqSigAll}; an error always makes one. Entering ERR (by a
 * modify, an error, a fault, a lost connection) completes every outstanding send WR and then every
 * posted receive {@code WC_WR_FLUSH_ERR}, in order, after the erroring WR's own CQE, and closes the
 * QP's connections. Guarded by the provider's lock, except the requester's socket I/O. The local
 * memory its SGEs name is resolved by its {@link SoftBuffers}.
 */
final class SoftQp {
  /** A posted send WR and what post time resolved for it. */
  static final class SendItem {
    final Verbs.SendWr wr;
    final byte[] inline;

    /** Run on the posting thread ({@link SoftRequester#runsAtPost}), never seen by the QP's. */
    boolean ranAtPost;

    final SoftMemory.Window window;
    final SoftMemory.Region region;
    boolean done;

    SendItem(Verbs.SendWr wr, byte[] inline, SoftMemory.Window window, SoftMemory.Region region) {
      this.wr = wr;
      this.inline = inline;
      this.window = window;
      this.region = region;
    }
  }

  final long handle;
  final int qpNum;
  final SoftPd pd;
  final SoftDevice device;
  final SoftCq sendCq;
  final SoftCq recvCq;
  final Verbs.QpInitAttr caps;
  final Verbs.Qp record;
  final ReentrantLock lock;
  final Condition changed;
  final SoftFaults faults;
  final SoftHandles handles;
  final ArrayDeque<SendItem> sq = new ArrayDeque<>();
  final ArrayDeque<Verbs.RecvWr> rq = new ArrayDeque<>();
  final Set<SoftResponder.Connection> serving = new LinkedHashSet<>();
  final SoftBuffers buffers;
  final SoftRequester requester;

  int state = Ibv.QPS_RESET;
  boolean destroyed;
  int port;
  int accessFlags;
  int pkeyIndex;
  int pathMtu = Ibv.MTU_1024;
  int destQpNum;
  int rqPsn;
  int sqPsn;
  int maxRdAtomic;
  int maxDestRdAtomic;
  int minRnrTimer;
  int timeout = 14;
  int retryCnt = 7;
  int rnrRetry = 7;
  Verbs.AddressVector av;

  SoftQp(
      long handle,
      int qpNum,
      SoftPd pd,
      SoftDevice device,
      Verbs.QpInitAttr caps,
      SoftCq sendCq,
      SoftCq recvCq,
      ReentrantLock lock,
      SoftFaults faults,
      SoftHandles handles) {
    this.handle = handle;
    this.qpNum = qpNum;
    this.pd = pd;
    this.device = device;
    this.caps = caps;
    this.sendCq = sendCq;
    this.recvCq = recvCq;
    this.lock = lock;
    this.changed = lock.newCondition();
    this.faults = faults;
    this.handles = handles;
    this.record = new Verbs.Qp(handle, pd.record, qpNum);
    this.buffers = new SoftBuffers(device.memory, pd);
    this.requester = new SoftRequester(this);
  }

  /** The GID this QP sends from: its port's entry at its address vector's {@code sgidIndex}. */
  Verbs.Gid sourceGid() {
    return av == null ? Verbs.Gid.ZERO : device.gid(port, av.sgidIndex());
  }

  /** Whether {@link #sourceGid} is a valid entry now (a connected QP whose entry went invalid). */
  boolean sourceGidValid() {
    return av == null || !sourceGid().equals(Verbs.Gid.ZERO);
  }

  // ---------------------------------------------------------------- state machine

  int modify(Verbs.QpAttr a, int mask) {
    int target = (mask & Ibv.QP_STATE) != 0 ? a.qpState() : state;
    if (!legal(state, target)) {
      return Errno.EINVAL.number();
    }
    if ((mask & Ibv.QP_PORT) != 0 && (a.portNum() < 1 || a.portNum() > device.portCount())) {
      return Errno.EINVAL.number();
    }
    if (target == Ibv.QPS_INIT && state == Ibv.QPS_RESET && (mask & Ibv.QP_PORT) == 0) {
      return Errno.EINVAL.number();
    }
    if (target == Ibv.QPS_RTR && state == Ibv.QPS_INIT) {
      int needed = Ibv.QP_AV | Ibv.QP_DEST_QPN;
      if ((mask & needed) != needed || a.av() == null || SoftGid.decode(a.av().dgid()).isEmpty()) {
        return Errno.EINVAL.number();
      }
      if (device.gid(port, a.av().sgidIndex()).equals(Verbs.Gid.ZERO)) {
        return Errno.EINVAL.number(); // the source GID it names is not a valid entry
      }
    }
    if ((mask & Ibv.QP_AV) != 0 && a.av() == null) {
      return Errno.EINVAL.number();
    }
    apply(a, mask);
    if (target == Ibv.QPS_ERR) {
      toError();
    } else if (target == Ibv.QPS_RESET) {
      reset();
    } else {
      state = target;
    }
    changed.signalAll();
    return 0;
  }

  private static boolean legal(int from, int to) {
    return switch (to) {
      case Ibv.QPS_RESET, Ibv.QPS_ERR -> true;
      case Ibv.QPS_INIT -> from == Ibv.QPS_RESET || from == Ibv.QPS_INIT;
      case Ibv.QPS_RTR -> from == Ibv.QPS_INIT;
      case Ibv.QPS_RTS -> from == Ibv.QPS_RTR || from == Ibv.QPS_RTS;
      default -> false;
    };
  }

  private void apply(Verbs.QpAttr a, int mask) {
    if ((mask & Ibv.QP_PORT) != 0) {
      port = a.portNum();
    }
    if ((mask & Ibv.QP_ACCESS_FLAGS) != 0) {
      accessFlags = a.qpAccessFlags();
    }
    if ((mask & Ibv.QP_PKEY_INDEX) != 0) {
      pkeyIndex = a.pkeyIndex();
    }
    if ((mask & Ibv.QP_AV) != 0) {
      av = a.av();
    }
    if ((mask & Ibv.QP_PATH_MTU) != 0) {
      pathMtu = a.pathMtu();
    }
    if ((mask & Ibv.QP_DEST_QPN) != 0) {
      destQpNum = a.destQpNum();
    }
    if ((mask & Ibv.QP_RQ_PSN) != 0) {
      rqPsn = a.rqPsn();
    }
    if ((mask & Ibv.QP_SQ_PSN) != 0) {
      sqPsn = a.sqPsn();
    }
    if ((mask & Ibv.QP_MAX_QP_RD_ATOMIC) != 0) {
      maxRdAtomic = a.maxRdAtomic();
    }
    if ((mask & Ibv.QP_MAX_DEST_RD_ATOMIC) != 0) {
      maxDestRdAtomic = a.maxDestRdAtomic();
    }
    if ((mask & Ibv.QP_MIN_RNR_TIMER) != 0) {
      minRnrTimer = a.minRnrTimer() & 31;
    }
    if ((mask & Ibv.QP_TIMEOUT) != 0) {
      timeout = a.timeout() & 31;
    }
    if ((mask & Ibv.QP_RETRY_CNT) != 0) {
      retryCnt = a.retryCnt() & 7;
    }
    if ((mask & Ibv.QP_RNR_RETRY) != 0) {
      rnrRetry = a.rnrRetry() & 7;
    }
  }

  Verbs.QpAttr query() {
    return new Verbs.QpAttr(
        state,
        pathMtu,
        accessFlags,
        pkeyIndex,
        port,
        destQpNum,
        rqPsn,
        sqPsn,
        maxRdAtomic,
        maxDestRdAtomic,
        minRnrTimer,
        timeout,
        retryCnt,
        rnrRetry,
        av);
  }

  boolean receiving() {
    return !destroyed && (state == Ibv.QPS_RTR || state == Ibv.QPS_RTS);
  }

  /** Enters ERR: flushes the send queue, then the receive queue, in order; closes connections. */
  void toError() {
    if (state == Ibv.QPS_ERR) {
      return;
    }
    state = Ibv.QPS_ERR;
    requester.disconnect();
    closeServing();
    while (!sq.isEmpty()) {
      SendItem item = sq.poll();
      item.done = true;
      sendCq.deliver(this, wc(item.wr.wrId(), Ibv.WC_WR_FLUSH_ERR, wcOpcode(item.wr.opcode()), 0));
    }
    flushReceives();
    changed.signalAll();
  }

  /** ERR with {@code EVENT_QP_FATAL}: the QP's CQ overflowed. */
  void fatal() {
    if (state != Ibv.QPS_ERR && !destroyed) {
      toError();
      pd.context.event(Ibv.EVENT_QP_FATAL, handle);
    }
  }

  /** ERR with {@code EVENT_QP_ACCESS_ERR}: a remote access to this QP was refused. */
  void accessError() {
    if (state != Ibv.QPS_ERR && !destroyed) {
      toError();
      pd.context.event(Ibv.EVENT_QP_ACCESS_ERR, handle);
    }
  }

  private void reset() {
    state = Ibv.QPS_RESET;
    for (SendItem item : sq) {
      item.done = true;
    }
    sq.clear();
    rq.clear();
    requester.disconnect();
    requester.rearm();
    closeServing();
  }

  /** Marks the QP destroyed; its WRs vanish without completions, its connections close. */
  void destroy() {
    destroyed = true;
    for (SendItem item : sq) {
      item.done = true;
    }
    sq.clear();
    rq.clear();
    requester.disconnect();
    closeServing();
    changed.signalAll();
  }

  private void closeServing() {
    for (SoftResponder.Connection c : new ArrayList<>(serving)) {
      c.closeUnlessReplying();
    }
  }

  // ---------------------------------------------------------------- posting

  Verbs.PostResult postSend(List<Verbs.SendWr> wrs) {
    if (state == Ibv.QPS_RESET || state == Ibv.QPS_INIT || state == Ibv.QPS_RTR) {
      return new Verbs.PostResult(Errno.EINVAL.number(), 0);
    }
    int[] failure = faults.takePostSendFailure(qpNum, wrs);
    for (int i = 0; i < wrs.size(); i++) {
      if (failure != null && failure[0] == i) {
        return new Verbs.PostResult(failure[1], i);
      }
      Verbs.SendWr wr = wrs.get(i);
      if (wr == null || wr.sgl() == null) {
        return new Verbs.PostResult(Errno.EINVAL.number(), i);
      }
      if (state == Ibv.QPS_ERR) {
        sendCq.deliver(this, wc(wr.wrId(), Ibv.WC_WR_FLUSH_ERR, wcOpcode(wr.opcode()), 0));
        continue;
      }
      int errno = check(wr);
      if (errno != 0) {
        return new Verbs.PostResult(errno, i);
      }
      byte[] inline = null;
      if ((wr.sendFlags() & Ibv.SEND_INLINE) != 0 && carriesPayload(wr.opcode())) {
        inline = buffers.gather(wr.sgl());
        if (inline == null || inline.length > caps.maxInlineData()) {
          return new Verbs.PostResult(Errno.EINVAL.number(), i);
        }
      }
      if (sq.size() >= caps.maxSendWr()) {
        return new Verbs.PostResult(Errno.ENOMEM.number(), i);
      }
      SoftMemory.Window w = null;
      SoftMemory.Region r = null;
      if (wr.opcode() == Ibv.WR_BIND_MW) {
        w = handles.get(wr.bind().mw().handle(), SoftMemory.Window.class);
        r =
            wr.bind().mr() == null
                ? null
                : handles.get(wr.bind().mr().handle(), SoftMemory.Region.class);
      }
      SendItem item = new SendItem(wr, inline, w, r);
      sq.add(item);
      if (sq.size() == 1 && state == Ibv.QPS_RTS && requester.runsAtPost(item)) {
        continue; // nothing ahead of it and no wire to cross: done on the posting thread
      }
      changed.signalAll();
    }
    return Verbs.PostResult.ALL;
  }

  private int check(Verbs.SendWr wr) {
    switch (wr.opcode()) {
      case Ibv.WR_RDMA_WRITE,
          Ibv.WR_RDMA_WRITE_WITH_IMM,
          Ibv.WR_SEND,
          Ibv.WR_SEND_WITH_IMM,
          Ibv.WR_SEND_WITH_INV,
          Ibv.WR_RDMA_READ,
          Ibv.WR_LOCAL_INV -> {}
      case Ibv.WR_BIND_MW -> {
        if (wr.bind() == null || wr.bind().mw() == null) {
          return Errno.EINVAL.number();
        }
      }
      default -> {
        return Errno.EINVAL.number();
      }
    }
    if (wr.sgl().size() > caps.maxSendSge()) {
      return Errno.EINVAL.number();
    }
    return hasNull(wr.sgl()) ? Errno.EINVAL.number() : 0;
  }

  private static boolean hasNull(List<Verbs.Sge> sgl) {
    for (Verbs.Sge sge : sgl) {
      if (sge == null) {
        return true;
      }
    }
    return false;
  }

  Verbs.PostResult postRecv(List<Verbs.RecvWr> wrs) {
    if (state == Ibv.QPS_RESET) {
      return new Verbs.PostResult(Errno.EINVAL.number(), 0);
    }
    for (int i = 0; i < wrs.size(); i++) {
      Verbs.RecvWr wr = wrs.get(i);
      if (wr == null || wr.sgl() == null || hasNull(wr.sgl())) {
        return new Verbs.PostResult(Errno.EINVAL.number(), i);
      }
      if (state == Ibv.QPS_ERR) {
        recvCq.deliver(this, wc(wr.wrId(), Ibv.WC_WR_FLUSH_ERR, Ibv.WC_RECV, 0));
        continue;
      }
      if (wr.sgl().size() > caps.maxRecvSge()) {
        return new Verbs.PostResult(Errno.EINVAL.number(), i);
      }
      if (rq.size() >= caps.maxRecvWr()) {
        return new Verbs.PostResult(Errno.ENOMEM.number(), i);
      }
      rq.add(wr);
    }
    return Verbs.PostResult.ALL;
  }

  // ---------------------------------------------------------------- completing

  /** Completes the head WR {@code item}: a CQE if it failed, or is signaled. */
  void complete(SendItem item, int status, int byteLen) {
    if (sq.peek() == item) {
      sq.poll();
    } else {
      sq.remove(item);
    }
    item.done = true;
    boolean signaled = caps.sqSigAll() || (item.wr.sendFlags() & Ibv.SEND_SIGNALED) != 0;
    if (status != Ibv.WC_SUCCESS || signaled) {
      sendCq.deliver(this, wc(item.wr.wrId(), status, wcOpcode(item.wr.opcode()), byteLen));
    }
    if (!item.ranAtPost) {
      changed.signalAll(); // a WR run at its post changed nothing the QP's thread waits for
    }
  }

  /** Completes {@code item} with error {@code status}, then enters ERR. */
  void fail(SendItem item, int status) {
    complete(item, status, 0);
    toError();
  }

  void completeRecv(
      Verbs.RecvWr wr, int status, int opcode, int byteLen, int imm, int srcQp, int flags) {
    recvCq.deliver(
        this, new Verbs.Wc(wr.wrId(), status, opcode, 0, byteLen, imm, qpNum, srcQp, flags));
  }

  private void flushReceives() {
    while (!rq.isEmpty()) {
      recvCq.deliver(this, wc(rq.poll().wrId(), Ibv.WC_WR_FLUSH_ERR, Ibv.WC_RECV, 0));
    }
  }

  private Verbs.Wc wc(long wrId, int status, int opcode, int byteLen) {
    return new Verbs.Wc(wrId, status, opcode, 0, byteLen, 0, qpNum, 0, 0);
  }

  static int wcOpcode(int wrOpcode) {
    return switch (wrOpcode) {
      case Ibv.WR_RDMA_WRITE, Ibv.WR_RDMA_WRITE_WITH_IMM -> Ibv.WC_RDMA_WRITE;
      case Ibv.WR_RDMA_READ -> Ibv.WC_RDMA_READ;
      case Ibv.WR_BIND_MW -> Ibv.WC_BIND_MW;
      case Ibv.WR_LOCAL_INV -> Ibv.WC_LOCAL_INV;
      default -> Ibv.WC_SEND;
    };
  }

  static boolean carriesPayload(int wrOpcode) {
    return wrOpcode != Ibv.WR_RDMA_READ
        && wrOpcode != Ibv.WR_BIND_MW
        && wrOpcode != Ibv.WR_LOCAL_INV;
  }
}
