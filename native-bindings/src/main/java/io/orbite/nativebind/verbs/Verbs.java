package io.orbite.nativebind.verbs;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * The RDMA verbs function table the RDMA transport's owners call: devices, contexts, PDs, MRs and
 * memory windows, completion channels and CQs, RC queue pairs, work requests and async events. Two
 * implementations: {@link NativeVerbs} ({@code libibverbs.so.1} through FFM, for hardware) and
 * {@code SoftVerbs} (a software provider with RC semantics whose devices serve one another over
 * sockets, so two processes or two network namespaces are real peers).
 *
 * <p>Every call is fallible and errno-style: it never throws across this boundary. A call that
 * makes something answers a {@link VerbsResult}; one that only acts answers {@code 0} or a positive
 * errno ({@link io.orbite.nativebind.Errno}); {@link #postSend}/{@link #postRecv} answer a {@link
 * PostResult} naming the first work request that was not posted; {@link #pollCq} answers the number
 * of completions written, or a negative errno. Handles are opaque: a native pointer for {@link
 * NativeVerbs}, a table index for the software provider; a handle from one table means nothing to
 * another, and a handle used after its destroy is refused {@code EINVAL} by the software provider
 * (the native library's behaviour there is undefined, so owners never do it).
 *
 * <p>Thread-safety follows libibverbs: calls on different objects may run on any threads; posting
 * and polling one QP or CQ from two threads at once is the caller's to serialise.
 */
public interface Verbs {
  /** A device as listed: its name ({@code mlx5_0}, {@code soft0}) and node GUID. */
  record Device(long handle, String name, long guid) {}

  /** An open device. */
  record Context(long handle, String deviceName) {}

  /** A protection domain. */
  record Pd(long handle, Context context) {}

  /** A memory region: the registered range and the keys that name it. */
  record Mr(long handle, Pd pd, long addr, long length, int lkey, int rkey, int access) {}

  /** A memory window; {@code rkey} is its key now (a type-2 bind gives it a new one). */
  record Mw(long handle, Pd pd, int type, int rkey) {}

  /** A completion channel: its file descriptor is readable when a requested event arrived. */
  record CompChannel(long handle, Context context, int fd) {}

  /** A completion queue of at least {@code cqe} entries. */
  record Cq(long handle, Context context, int cqe) {}

  /** A queue pair; {@code qpNum} is what the peer names it by. */
  record Qp(long handle, Pd pd, int qpNum) {}

  /** A GID: 16 bytes as two big-endian halves. */
  record Gid(long hi, long lo) {
    public static final Gid ZERO = new Gid(0, 0);

    public static Gid of(byte[] raw) {
      if (raw.length != 16) {
        throw new IllegalArgumentException("a GID is 16 bytes, got " + raw.length);
      }
      long hi = 0;
      long lo = 0;
      for (int i = 0; i < 8; i++) {
        hi = (hi << 8) | (raw[i] & 0xff);
        lo = (lo << 8) | (raw[i + 8] & 0xff);
      }
      return new Gid(hi, lo);
    }

    public byte[] bytes() {
      byte[] raw = new byte[16];
      for (int i = 0; i < 8; i++) {
        raw[i] = (byte) (hi >>> (56 - 8 * i));
        raw[i + 8] = (byte) (lo >>> (56 - 8 * i));
      }
      return raw;
    }

    @Override
    public String toString() {
      StringBuilder s = new StringBuilder();
      byte[] raw = bytes();
      for (int i = 0; i < 16; i += 2) {
        if (i > 0) {
          s.append(':');
        }
        s.append(String.format("%02x%02x", raw[i] & 0xff, raw[i + 1] & 0xff));
      }
      return s.toString();
    }
  }

  /** What {@code ibv_query_device} reports that the owners use. */
  record DeviceAttr(
      String fwVer,
      long nodeGuid,
      long maxMrSize,
      int vendorId,
      int vendorPartId,
      int maxQp,
      int maxQpWr,
      int maxSge,
      int maxCq,
      int maxCqe,
      int maxMr,
      int maxPd,
      int maxMw,
      int maxQpRdAtom,
      int physPortCnt) {}

  /** What {@code ibv_query_port} reports that the owners use. */
  record PortAttr(
      int state,
      int maxMtu,
      int activeMtu,
      int gidTblLen,
      int lid,
      int activeWidth,
      int activeSpeed,
      int linkLayer) {}

  /** {@code ibv_qp_init_attr} for an RC QP. */
  record QpInitAttr(
      Cq sendCq,
      Cq recvCq,
      int maxSendWr,
      int maxRecvWr,
      int maxSendSge,
      int maxRecvSge,
      int maxInlineData,
      boolean sqSigAll) {}

  /** The address vector of a connected QP ({@code ibv_ah_attr} with its GRH). */
  record AddressVector(int dlid, int sl, int portNum, Gid dgid, int sgidIndex, int hopLimit) {}

  /**
   * {@code ibv_qp_attr}: the fields a modify names in its mask ({@link Ibv#QP_STATE}...), or that a
   * query fills. {@code av} may be null when {@link Ibv#QP_AV} is not in the mask.
   */
  record QpAttr(
      int qpState,
      int pathMtu,
      int qpAccessFlags,
      int pkeyIndex,
      int portNum,
      int destQpNum,
      int rqPsn,
      int sqPsn,
      int maxRdAtomic,
      int maxDestRdAtomic,
      int minRnrTimer,
      int timeout,
      int retryCnt,
      int rnrRetry,
      AddressVector av) {
    /** Only a state change (to ERR or RESET, or INIT with the rest defaulted). */
    public static QpAttr state(int qpState) {
      return new QpAttr(qpState, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, null);
    }
  }

  /**
   * A scatter/gather element: {@code length} bytes at {@code addr} in the MR {@code lkey} names.
   */
  record Sge(long addr, int length, int lkey) {}

  /** The type-2 bind of {@code mw} to {@code length} bytes of {@code mr} at {@code addr}. */
  record MwBind(Mw mw, int newRkey, Mr mr, long addr, long length, int access) {}

  /**
   * {@code ibv_send_wr}. {@code remoteAddr}/{@code rkey} for RDMA READ and WRITE; {@code
   * immOrInvalidate} is the immediate for *_WITH_IMM and the rkey to invalidate for SEND_WITH_INV
   * and LOCAL_INV; {@code bind} only for BIND_MW.
   */
  record SendWr(
      long wrId,
      int opcode,
      int sendFlags,
      List<Sge> sgl,
      long remoteAddr,
      int rkey,
      int immOrInvalidate,
      MwBind bind) {
    public static SendWr rdma(
        long wrId, int opcode, int flags, List<Sge> sgl, long remoteAddr, int rkey) {
      return new SendWr(wrId, opcode, flags, sgl, remoteAddr, rkey, 0, null);
    }

    public static SendWr send(long wrId, int flags, List<Sge> sgl) {
      return new SendWr(wrId, Ibv.WR_SEND, flags, sgl, 0, 0, 0, null);
    }

    public static SendWr bindMw(long wrId, int flags, MwBind bind) {
      return new SendWr(wrId, Ibv.WR_BIND_MW, flags, List.of(), 0, 0, 0, bind);
    }
  }

  /** {@code ibv_recv_wr}. */
  record RecvWr(long wrId, List<Sge> sgl) {}

  /** {@code ibv_wc}: one completion. */
  record Wc(
      long wrId,
      int status,
      int opcode,
      int vendorErr,
      int byteLen,
      int immOrInvalidated,
      int qpNum,
      int srcQp,
      int wcFlags) {}

  /** {@code ibv_async_event}: its type and what it names (a QP or CQ handle, or a port number). */
  record AsyncEvent(int eventType, long element) {}

  /**
   * A post's outcome: {@code errno} 0 and {@code badIndex} -1 when every work request was posted;
   * otherwise the index of the first one that was not, and every one after it was not either.
   */
  record PostResult(int errno, int badIndex) {
    public static final PostResult ALL = new PostResult(0, -1);

    public boolean posted() {
      return errno == 0;
    }
  }

  /** Which provider this is, for messages: {@code "libibverbs"} or {@code "soft"}. */
  String provider();

  VerbsResult<List<Device>> getDeviceList();

  /**
   * The NUMA node {@code device} is attached to, for rail selection: not a verbs call but what the
   * kernel reports for it ({@code /sys/class/infiniband/<name>/device/numa_node} for {@link
   * NativeVerbs}; a value a test set for the software provider). Never fails.
   *
   * @param device a device from {@link #getDeviceList}
   * @return the node, or {@code -1} when unknown (the file missing or unreadable, or it says -1)
   */
  int numaNode(Device device);

  VerbsResult<Context> openDevice(Device device);

  int closeDevice(Context context);

  VerbsResult<DeviceAttr> queryDevice(Context context);

  VerbsResult<PortAttr> queryPort(Context context, int port);

  VerbsResult<Gid> queryGid(Context context, int port, int index);

  VerbsResult<Pd> allocPd(Context context);

  int deallocPd(Pd pd);

  /** Registers {@code range} with {@code access} ({@link Ibv#ACCESS_LOCAL_WRITE}...). */
  VerbsResult<Mr> regMr(Pd pd, MemorySegment range, int access);

  /**
   * Registers {@code length} bytes of a dma-buf at {@code offset}; {@code EOPNOTSUPP} when the
   * library does not export {@code ibv_reg_dmabuf_mr} (or the provider has no dma-buf).
   */
  VerbsResult<Mr> regDmabufMr(Pd pd, long offset, long length, long iova, int fd, int access);

  int deregMr(Mr mr);

  VerbsResult<Mw> allocMw(Pd pd, int type);

  int deallocMw(Mw mw);

  VerbsResult<CompChannel> createCompChannel(Context context);

  int destroyCompChannel(CompChannel channel);

  /** A CQ of at least {@code cqe} entries, its events on {@code channel} (may be null). */
  VerbsResult<Cq> createCq(Context context, int cqe, CompChannel channel, int compVector);

  int destroyCq(Cq cq);

  int reqNotifyCq(Cq cq, boolean solicitedOnly);

  /** The CQ whose requested event arrived on {@code channel}; {@code EAGAIN} when none has. */
  VerbsResult<Cq> getCqEvent(CompChannel channel);

  /**
   * Blocks the calling thread until an event is queued on {@code channel}, {@code timeoutNanos}
   * pass, or the thread is unparked ({@link LockSupport#unpark}): the idle wait of a CQ lane in
   * completion-event mode, which other threads wake by unparking it. It takes no event ({@link
   * #getCqEvent} does). This default parks for the timeout and answers true (an event may be
   * queued): a provider that cannot wait on its channel and be unparked too sleeps as a parked lane
   * does.
   *
   * @param channel the completion channel
   * @param timeoutNanos the longest wait, positive
   * @return whether an event is (or may be) queued on the channel
   */
  default boolean awaitCqEvent(CompChannel channel, long timeoutNanos) {
    LockSupport.parkNanos(this, timeoutNanos);
    return true;
  }

  void ackCqEvents(Cq cq, int events);

  VerbsResult<Qp> createQp(Pd pd, QpInitAttr attr);

  int modifyQp(Qp qp, QpAttr attr, int attrMask);

  VerbsResult<QpAttr> queryQp(Qp qp, int attrMask);

  int destroyQp(Qp qp);

  PostResult postSend(Qp qp, List<SendWr> wrs);

  PostResult postRecv(Qp qp, List<RecvWr> wrs);

  /** Fills {@code out} from its start; the count written, or a negative errno. */
  int pollCq(Cq cq, Wc[] out);

  /**
   * Asks the provider to run {@code waker} each time it queues a completion on {@code cq}, so that
   * a thread polling it may sleep between completions instead of spinning. Only a provider that
   * queues completions in this process can (the software provider); a device's completions are
   * written by the HCA, and this answers false: poll, or use a completion channel. The waker runs
   * on the provider's thread and must not block.
   *
   * @param cq a CQ of this provider
   * @param waker run after each completion is queued on it (null: no more)
   * @return whether the provider will run it
   */
  default boolean wakeOnCompletion(Cq cq, Runnable waker) {
    return false;
  }

  /** The next async event of {@code context}; {@code EAGAIN} when none is pending. */
  VerbsResult<AsyncEvent> getAsyncEvent(Context context);

  /**
   * Waits at most {@code timeoutMillis} for an async event of {@code context} to be pending ({@code
   * poll(2)} on the context's async-event descriptor), without taking it: {@link #getAsyncEvent}
   * then does.
   *
   * @return 1 when an event is pending, 0 when none came within the time, or a negative errno
   */
  int awaitAsyncEvent(Context context, int timeoutMillis);

  void ackAsyncEvent(AsyncEvent event);
}
