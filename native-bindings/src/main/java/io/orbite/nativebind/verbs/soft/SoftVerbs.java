package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * The software RDMA provider: the {@link Verbs} table over the devices of a {@link SoftFabric},
 * with RC semantics, whose devices serve one another over TCP ({@link SoftWire}), so two processes
 * or two network namespaces are real peers; nothing assumes both ends share a JVM, and all remote
 * traffic goes over the socket even in-process.
 *
 * <p>Handles are indexes into this provider's table ({@link SoftHandles}); a handle that was
 * destroyed, belongs to another table or names another kind of object is refused {@code EINVAL}. No
 * call throws: a bad argument or anything unexpected answers {@code EINVAL} ({@code pollCq}: {@code
 * -EINVAL}).
 *
 * <ul>
 *   <li>Devices and ports: {@link SoftDevice}, {@link SoftFabric}; GIDs: {@link SoftGid}.
 *   <li>Memory and keys, type-2 windows: {@link SoftMemory}. {@code regMr} needs a non-empty range
 *       of native memory that any thread may access (a global, automatic or shared arena's, not a
 *       confined one's nor a heap segment), no larger than {@code maxMrSize}; the range is kept,
 *       not copied, and accessed by address. Remote write or atomic access without local write is
 *       {@code EINVAL}; {@code regDmabufMr} is {@code EOPNOTSUPP}; {@code allocMw} of type 1 is
 *       {@code EOPNOTSUPP} (there is no {@code ibv_bind_mw} in the table).
 *   <li>QPs: {@link SoftQp}, {@link SoftRequester}, {@link SoftResponder}. RC only.
 *   <li>CQs and completion channels: {@link SoftCq}, {@link SoftChannel} (fd -1).
 *   <li>Destroy order: {@code deallocPd} with MRs, MWs or QPs on it, {@code destroyCq} with QPs
 *       using it or unacknowledged events, {@code destroyCompChannel} with CQs on it, {@code
 *       deregMr} with MWs bound to it and {@code closeDevice} with PDs, CQs or channels on it
 *       answer {@code EBUSY}. Destroying a QP drops its WRs without completions, unbinds the MWs
 *       bound on it, closes its connections and ends its thread; closing a device's last context
 *       closes its responder and its threads. {@code deallocMw} of a bound MW is allowed.
 *   <li>Limits: {@code maxQp}, {@code maxCq}, {@code maxMr}, {@code maxMw}, {@code maxPd} live
 *       objects per device ({@code ENOMEM} beyond), {@code maxQpWr}, {@code maxSge} and {@code
 *       maxCqe} per object ({@code EINVAL} beyond).
 *   <li>Async events: {@code EVENT_CQ_ERR}, {@code EVENT_QP_FATAL}, {@code EVENT_QP_ACCESS_ERR},
 *       {@code EVENT_PORT_ERR}, {@code EVENT_PORT_ACTIVE}, {@code EVENT_GID_CHANGE}, queued per
 *       context; {@code ackAsyncEvent} does nothing (destroys never wait for it).
 *   <li>Faults: {@link SoftFaults} (a destroy or a device close failed, a CQ that cannot be polled,
 *       a GID table entry changed, ...), given only to {@link #create(SoftFabric, SoftFaults)}.
 * </ul>
 *
 * <p>One lock guards the provider's state; no socket I/O and no waiting happens under it.
 */
public final class SoftVerbs implements Verbs {
  private final SoftTable table;
  private final SoftDeviceVerbs devices;
  private final SoftCqVerbs completions;
  private final SoftQpVerbs queuePairs;

  private SoftVerbs(SoftFabric fabric, SoftFaults faults) {
    table = new SoftTable(fabric, faults);
    devices = new SoftDeviceVerbs(table);
    completions = new SoftCqVerbs(table);
    queuePairs = new SoftQpVerbs(table);
    faults.attach(new SoftFaultActions(table));
  }

  /**
   * A provider with no faults.
   *
   * @param fabric its devices
   * @return the provider; nothing is bound until a device is opened
   */
  public static SoftVerbs create(SoftFabric fabric) {
    return create(fabric, SoftFaults.none());
  }

  /**
   * A provider whose faults come from a table (tests only).
   *
   * @param fabric its devices
   * @param faults its fault table ({@link SoftFaults#none()} in production); a table serves one
   *     provider
   * @return the provider; nothing is bound until a device is opened
   * @throws IllegalStateException if {@code faults} already serves another provider
   */
  public static SoftVerbs create(SoftFabric fabric, SoftFaults faults) {
    return new SoftVerbs(Objects.requireNonNull(fabric), Objects.requireNonNull(faults));
  }

  /** {@inheritDoc} */
  @Override
  public String provider() {
    return "soft";
  }

  /**
   * {@inheritDoc}
   *
   * <p>The software provider's devices have no NUMA affinity of their own: the node is what the
   * fault table was told ({@link SoftFaults#setNumaNode}), else -1.
   */
  @Override
  public int numaNode(Device device) {
    return table.faults.numaNode(device.name());
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<List<Device>> getDeviceList() {
    return devices.getDeviceList();
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Context> openDevice(Device device) {
    return devices.openDevice(device);
  }

  /** {@inheritDoc} */
  @Override
  public int closeDevice(Context context) {
    return devices.closeDevice(context);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<DeviceAttr> queryDevice(Context context) {
    return devices.queryDevice(context);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<PortAttr> queryPort(Context context, int port) {
    return devices.queryPort(context, port);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Gid> queryGid(Context context, int port, int index) {
    return devices.queryGid(context, port, index);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Pd> allocPd(Context context) {
    return devices.allocPd(context);
  }

  /** {@inheritDoc} */
  @Override
  public int deallocPd(Pd pd) {
    return devices.deallocPd(pd);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Mr> regMr(Pd pd, MemorySegment range, int access) {
    return devices.regMr(pd, range, access);
  }

  /** {@inheritDoc} The soft provider has no dma-buf: always {@code EOPNOTSUPP}. */
  @Override
  public VerbsResult<Mr> regDmabufMr(
      Pd pd, long offset, long length, long iova, int fd, int access) {
    return SoftTable.failed(
        Errno.EOPNOTSUPP, "ibv_reg_dmabuf_mr", "the soft provider has no dma-buf");
  }

  /** {@inheritDoc} */
  @Override
  public int deregMr(Mr mr) {
    return devices.deregMr(mr);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Mw> allocMw(Pd pd, int type) {
    return devices.allocMw(pd, type);
  }

  /** {@inheritDoc} */
  @Override
  public int deallocMw(Mw mw) {
    return devices.deallocMw(mw);
  }

  /** {@inheritDoc} The channel's fd is -1: poll {@link #getCqEvent}. */
  @Override
  public VerbsResult<CompChannel> createCompChannel(Context context) {
    return completions.createCompChannel(context);
  }

  /** {@inheritDoc} */
  @Override
  public int destroyCompChannel(CompChannel channel) {
    return completions.destroyCompChannel(channel);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Cq> createCq(Context context, int cqe, CompChannel channel, int compVector) {
    return completions.createCq(context, cqe, channel, compVector);
  }

  /** {@inheritDoc} */
  @Override
  public int destroyCq(Cq cq) {
    return completions.destroyCq(cq);
  }

  /** {@inheritDoc} Solicited-only is treated as any completion. */
  @Override
  public int reqNotifyCq(Cq cq, boolean solicitedOnly) {
    return completions.reqNotifyCq(cq, solicitedOnly);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Cq> getCqEvent(CompChannel channel) {
    return completions.getCqEvent(channel);
  }

  /** {@inheritDoc} The caller parks on the channel; an event raised on it unparks the caller. */
  @Override
  public boolean awaitCqEvent(CompChannel channel, long timeoutNanos) {
    return completions.awaitCqEvent(channel, timeoutNanos);
  }

  /** {@inheritDoc} A bad CQ is ignored. */
  @Override
  public void ackCqEvents(Cq cq, int events) {
    completions.ackCqEvents(cq, events);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Qp> createQp(Pd pd, QpInitAttr attr) {
    return queuePairs.createQp(pd, attr);
  }

  /** {@inheritDoc} */
  @Override
  public int modifyQp(Qp qp, QpAttr attr, int attrMask) {
    return queuePairs.modifyQp(qp, attr, attrMask);
  }

  /** {@inheritDoc} Every attribute is filled, whatever the mask. */
  @Override
  public VerbsResult<QpAttr> queryQp(Qp qp, int attrMask) {
    return queuePairs.queryQp(qp, attrMask);
  }

  /** {@inheritDoc} */
  @Override
  public int destroyQp(Qp qp) {
    return queuePairs.destroyQp(qp);
  }

  /** {@inheritDoc} */
  @Override
  public PostResult postSend(Qp qp, List<SendWr> wrs) {
    return queuePairs.postSend(qp, wrs);
  }

  /** {@inheritDoc} */
  @Override
  public PostResult postRecv(Qp qp, List<RecvWr> wrs) {
    return queuePairs.postRecv(qp, wrs);
  }

  /** {@inheritDoc} After an overflow, {@code -EOVERFLOW} once the held entries are drained. */
  @Override
  public int pollCq(Cq cq, Wc[] out) {
    return completions.pollCq(cq, out);
  }

  /**
   * {@inheritDoc} This provider queues every completion in this process, so it always can: the
   * waker runs after the entry is queued, under the provider's lock.
   */
  @Override
  public boolean wakeOnCompletion(Cq cq, Runnable waker) {
    return completions.wakeOnCompletion(cq, waker);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<AsyncEvent> getAsyncEvent(Context context) {
    return devices.getAsyncEvent(context);
  }

  /** {@inheritDoc} Waits on the context's event queue. */
  @Override
  public int awaitAsyncEvent(Context context, int timeoutMillis) {
    return devices.awaitAsyncEvent(context, timeoutMillis);
  }

  /** {@inheritDoc} Nothing to do for the soft provider. */
  @Override
  public void ackAsyncEvent(AsyncEvent event) {}
}
