package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Predicate;

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
  private static final long JOIN_MILLIS = 5_000;

  // Never started: stands for the responder threads that must be able to touch a registered range.
  private static final Thread OTHER_THREAD = Thread.ofPlatform().unstarted(() -> {});

  // QP numbers are unique in this process (24 bits, from 0x100), whichever provider made them.
  private static final AtomicInteger QP_NUMBERS = new AtomicInteger(0xff);

  private final ReentrantLock lock = new ReentrantLock();
  private final SoftHandles handles = new SoftHandles();
  private final SoftFaults faults;
  private final List<SoftDevice> devices = new ArrayList<>();

  private SoftVerbs(SoftFabric fabric, SoftFaults faults) {
    this.faults = faults;
    for (SoftFabric.DeviceSpec spec : fabric.devices()) {
      long h = handles.reserve();
      SoftDevice d = new SoftDevice(h, spec, lock);
      handles.put(h, d);
      devices.add(d);
    }
    faults.attach(new FaultActions());
  }

  /**
   * A provider with no faults.
   *
   * @param fabric its devices
   * @return the provider; nothing is bound until a device is opened
   */
  public static SoftVerbs create(SoftFabric fabric) {
    return create(fabric, SoftFaults.NONE);
  }

  /**
   * A provider whose faults come from a table (tests only).
   *
   * @param fabric its devices
   * @param faults its fault table ({@link SoftFaults#NONE} in production); a table serves one
   *     provider
   * @return the provider; nothing is bound until a device is opened
   * @throws IllegalStateException if {@code faults} already serves another provider
   */
  public static SoftVerbs create(SoftFabric fabric, SoftFaults faults) {
    return new SoftVerbs(Objects.requireNonNull(fabric), Objects.requireNonNull(faults));
  }

  private static int einval() {
    return Errno.EINVAL.number();
  }

  private static <T> VerbsResult<T> failed(Errno errno, String call, String why) {
    return VerbsResult.failed(errno.number(), call + ": " + why);
  }

  private static <T> VerbsResult<T> failed(int errno, String call, String why) {
    return VerbsResult.failed(errno, call + ": " + why);
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
    return faults.numaNode(device.name());
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<List<Device>> getDeviceList() {
    lock.lock();
    try {
      List<Device> list = new ArrayList<>();
      for (SoftDevice d : devices) {
        list.add(d.record);
      }
      return VerbsResult.ok(List.copyOf(list));
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_get_device_list", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Context> openDevice(Device device) {
    lock.lock();
    try {
      SoftDevice d = handles.get(device.handle(), SoftDevice.class);
      if (d == null) {
        return failed(Errno.EINVAL, "ibv_open_device", "no such device");
      }
      long h = handles.reserve();
      SoftContext c = new SoftContext(h, d);
      try {
        d.open(c);
      } catch (IOException e) {
        return failed(Errno.EADDRNOTAVAIL, "ibv_open_device", "responder bind failed: " + e);
      }
      handles.put(h, c);
      return VerbsResult.ok(c.record);
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_open_device", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public int closeDevice(Context context) {
    List<Thread> threads;
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null) {
        return einval();
      }
      int fault = faults.destroyFailure(SoftFaults.Kind.CONTEXT, c.handle);
      if (fault != 0) {
        return fault;
      }
      if (c.busy()) {
        return Errno.EBUSY.number();
      }
      handles.remove(c.handle);
      threads = c.device.close(c);
    } catch (RuntimeException | Error e) {
      return einval();
    } finally {
      lock.unlock();
    }
    join(threads);
    return 0;
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<DeviceAttr> queryDevice(Context context) {
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null) {
        return failed(Errno.EINVAL, "ibv_query_device", "no such context");
      }
      return VerbsResult.ok(c.device.spec.attr());
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_query_device", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<PortAttr> queryPort(Context context, int port) {
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null || port < 1 || port > c.device.portCount()) {
        return failed(Errno.EINVAL, "ibv_query_port", "no such context or port " + port);
      }
      return VerbsResult.ok(c.device.portAttr(port));
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_query_port", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Gid> queryGid(Context context, int port, int index) {
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null
          || port < 1
          || port > c.device.portCount()
          || index < 0
          || index >= SoftDevice.GID_TABLE_LENGTH) {
        return failed(Errno.EINVAL, "ibv_query_gid", "no such context, port or index");
      }
      return VerbsResult.ok(c.device.gid(port, index));
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_query_gid", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Pd> allocPd(Context context) {
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null) {
        return failed(Errno.EINVAL, "ibv_alloc_pd", "no such context");
      }
      if (count(c.device, SoftPd.class) >= c.device.spec.attr().maxPd()) {
        return failed(Errno.ENOMEM, "ibv_alloc_pd", "maxPd reached");
      }
      long h = handles.reserve();
      SoftPd pd = new SoftPd(h, c);
      handles.put(h, pd);
      c.pds++;
      return VerbsResult.ok(pd.record);
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_alloc_pd", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public int deallocPd(Pd pd) {
    return destroy(
        pd.handle(), SoftPd.class, SoftFaults.Kind.PD, SoftPd::busy, p -> p.context.pds--);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Mr> regMr(Pd pd, MemorySegment range, int access) {
    lock.lock();
    try {
      SoftPd p = handles.get(pd.handle(), SoftPd.class);
      if (p == null || range == null || range.byteSize() == 0) {
        return failed(Errno.EINVAL, "ibv_reg_mr", "no such PD, or an empty range");
      }
      if (!range.isNative() || !range.isAccessibleBy(OTHER_THREAD)) {
        return failed(Errno.EINVAL, "ibv_reg_mr", "not native memory every thread may access");
      }
      SoftDevice d = p.context.device;
      if (range.byteSize() > d.spec.attr().maxMrSize()) {
        return failed(Errno.EINVAL, "ibv_reg_mr", "range over maxMrSize");
      }
      if ((access & (Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_ATOMIC)) != 0
          && (access & Ibv.ACCESS_LOCAL_WRITE) == 0) {
        return failed(Errno.EINVAL, "ibv_reg_mr", "remote write needs local write");
      }
      if (count(d, SoftMemory.Region.class) >= d.spec.attr().maxMr()) {
        return failed(Errno.ENOMEM, "ibv_reg_mr", "maxMr reached");
      }
      long h = handles.reserve();
      SoftMemory.Region r = d.memory.register(h, p, range, access);
      handles.put(h, r);
      p.mrs++;
      return VerbsResult.ok(r.record);
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_reg_mr", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} The soft provider has no dma-buf: always {@code EOPNOTSUPP}. */
  @Override
  public VerbsResult<Mr> regDmabufMr(
      Pd pd, long offset, long length, long iova, int fd, int access) {
    return failed(Errno.EOPNOTSUPP, "ibv_reg_dmabuf_mr", "the soft provider has no dma-buf");
  }

  /** {@inheritDoc} */
  @Override
  public int deregMr(Mr mr) {
    int at = faults.deregFailureAt(mr.addr());
    if (at != 0) {
      return at;
    }
    return destroy(
        mr.handle(),
        SoftMemory.Region.class,
        SoftFaults.Kind.MR,
        r -> r.boundWindows > 0,
        r -> {
          r.pd.context.device.memory.deregister(r);
          r.pd.mrs--;
        });
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Mw> allocMw(Pd pd, int type) {
    lock.lock();
    try {
      SoftPd p = handles.get(pd.handle(), SoftPd.class);
      if (p == null || (type != Ibv.MW_TYPE_1 && type != Ibv.MW_TYPE_2)) {
        return failed(Errno.EINVAL, "ibv_alloc_mw", "no such PD, or a bad type");
      }
      if (type == Ibv.MW_TYPE_1) {
        return failed(Errno.EOPNOTSUPP, "ibv_alloc_mw", "the soft provider has type 2 only");
      }
      SoftDevice d = p.context.device;
      if (count(d, SoftMemory.Window.class) >= d.spec.attr().maxMw()) {
        return failed(Errno.ENOMEM, "ibv_alloc_mw", "maxMw reached");
      }
      long h = handles.reserve();
      SoftMemory.Window w = d.memory.allocate(h, p, type);
      handles.put(h, w);
      p.mws++;
      return VerbsResult.ok(w.record());
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_alloc_mw", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public int deallocMw(Mw mw) {
    return destroy(
        mw.handle(),
        SoftMemory.Window.class,
        SoftFaults.Kind.MW,
        w -> false,
        w -> {
          w.pd.context.device.memory.deallocate(w);
          w.pd.mws--;
        });
  }

  /** {@inheritDoc} The channel's fd is -1: poll {@link #getCqEvent}. */
  @Override
  public VerbsResult<CompChannel> createCompChannel(Context context) {
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null) {
        return failed(Errno.EINVAL, "ibv_create_comp_channel", "no such context");
      }
      long h = handles.reserve();
      SoftChannel ch = new SoftChannel(h, c);
      handles.put(h, ch);
      c.channels++;
      return VerbsResult.ok(ch.record);
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_create_comp_channel", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public int destroyCompChannel(CompChannel channel) {
    return destroy(
        channel.handle(),
        SoftChannel.class,
        SoftFaults.Kind.COMP_CHANNEL,
        ch -> ch.cqs > 0,
        ch -> ch.context.channels--);
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Cq> createCq(Context context, int cqe, CompChannel channel, int compVector) {
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null || cqe < 1 || cqe > c.device.spec.attr().maxCqe()) {
        return failed(Errno.EINVAL, "ibv_create_cq", "no such context, or cqe " + cqe);
      }
      SoftChannel ch = null;
      if (channel != null) {
        ch = handles.get(channel.handle(), SoftChannel.class);
        if (ch == null || ch.context != c) {
          return failed(Errno.EINVAL, "ibv_create_cq", "no such channel on this context");
        }
      }
      if (count(c.device, SoftCq.class) >= c.device.spec.attr().maxCq()) {
        return failed(Errno.ENOMEM, "ibv_create_cq", "maxCq reached");
      }
      long h = handles.reserve();
      SoftCq cq = new SoftCq(h, c, ch, cqe, faults);
      handles.put(h, cq);
      c.cqs++;
      if (ch != null) {
        ch.cqs++;
      }
      return VerbsResult.ok(cq.record);
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_create_cq", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public int destroyCq(Cq cq) {
    return destroy(
        cq.handle(),
        SoftCq.class,
        SoftFaults.Kind.CQ,
        q -> !q.users.isEmpty() || q.unacknowledgedEvents(),
        q -> {
          q.context.cqs--;
          if (q.channel != null) {
            q.channel.cqs--;
          }
        });
  }

  /** {@inheritDoc} Solicited-only is treated as any completion. */
  @Override
  public int reqNotifyCq(Cq cq, boolean solicitedOnly) {
    lock.lock();
    try {
      SoftCq q = handles.get(cq.handle(), SoftCq.class);
      if (q == null) {
        return einval();
      }
      q.arm();
      return 0;
    } catch (RuntimeException | Error e) {
      return einval();
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Cq> getCqEvent(CompChannel channel) {
    lock.lock();
    try {
      SoftChannel ch = handles.get(channel.handle(), SoftChannel.class);
      if (ch == null) {
        return failed(Errno.EINVAL, "ibv_get_cq_event", "no such channel");
      }
      SoftCq q = ch.events.poll();
      if (q == null) {
        return failed(Errno.EAGAIN, "ibv_get_cq_event", "no event");
      }
      return VerbsResult.ok(q.record);
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_get_cq_event", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} A bad CQ is ignored. */
  @Override
  public void ackCqEvents(Cq cq, int events) {
    lock.lock();
    try {
      SoftCq q = handles.get(cq.handle(), SoftCq.class);
      if (q != null) {
        q.ack(events);
      }
    } catch (RuntimeException | Error e) {
      // nothing to acknowledge
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<Qp> createQp(Pd pd, QpInitAttr attr) {
    lock.lock();
    try {
      SoftPd p = handles.get(pd.handle(), SoftPd.class);
      if (p == null) {
        return failed(Errno.EINVAL, "ibv_create_qp", "no such PD");
      }
      SoftCq send = handles.get(attr.sendCq().handle(), SoftCq.class);
      SoftCq recv = handles.get(attr.recvCq().handle(), SoftCq.class);
      SoftDevice d = p.context.device;
      DeviceAttr limits = d.spec.attr();
      if (send == null
          || recv == null
          || send.context != p.context
          || recv.context != p.context
          || attr.maxSendWr() < 1
          || attr.maxRecvWr() < 1
          || attr.maxSendWr() > limits.maxQpWr()
          || attr.maxRecvWr() > limits.maxQpWr()
          || attr.maxSendSge() < 0
          || attr.maxRecvSge() < 0
          || attr.maxSendSge() > limits.maxSge()
          || attr.maxRecvSge() > limits.maxSge()
          || attr.maxInlineData() < 0) {
        return failed(Errno.EINVAL, "ibv_create_qp", "bad CQs or capabilities");
      }
      if (d.qps.size() >= limits.maxQp()) {
        return failed(Errno.ENOMEM, "ibv_create_qp", "maxQp reached");
      }
      long h = handles.reserve();
      int qpNum = nextQpNum();
      SoftQp q = new SoftQp(h, qpNum, p, d, attr, send, recv, lock, faults, handles);
      handles.put(h, q);
      d.qps.put(qpNum, q);
      p.qps++;
      send.users.add(q);
      recv.users.add(q);
      q.requester.start();
      return VerbsResult.ok(q.record);
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_create_qp", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public int modifyQp(Qp qp, QpAttr attr, int attrMask) {
    lock.lock();
    try {
      SoftQp q = handles.get(qp.handle(), SoftQp.class);
      if (q == null || attr == null) {
        return einval();
      }
      return q.modify(attr, attrMask);
    } catch (RuntimeException | Error e) {
      return einval();
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} Every attribute is filled, whatever the mask. */
  @Override
  public VerbsResult<QpAttr> queryQp(Qp qp, int attrMask) {
    lock.lock();
    try {
      SoftQp q = handles.get(qp.handle(), SoftQp.class);
      if (q == null) {
        return failed(Errno.EINVAL, "ibv_query_qp", "no such QP");
      }
      return VerbsResult.ok(q.query());
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_query_qp", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public int destroyQp(Qp qp) {
    List<SoftQp> destroyed = new ArrayList<>(1);
    int r =
        destroy(
            qp.handle(),
            SoftQp.class,
            SoftFaults.Kind.QP,
            q -> false,
            q -> {
              q.destroy();
              q.device.memory.unbindAll(q);
              q.device.qps.remove(q.qpNum);
              q.pd.qps--;
              q.sendCq.users.remove(q);
              q.recvCq.users.remove(q);
              destroyed.add(q);
            });
    // Its requester thread ends once its connection is closed; joined outside the lock.
    destroyed.forEach(q -> q.requester.join(JOIN_MILLIS));
    return r;
  }

  /**
   * The shape of every destroy, under the lock: the handle must name a live {@code type} (else
   * {@code EINVAL}); an armed destroy fault of {@code kind} answers its errno and leaves the object
   * alive; while {@code busy} it is {@code EBUSY}; otherwise {@code release} gives back what it
   * held and its handle is retired.
   */
  private <T> int destroy(
      long handle, Class<T> type, SoftFaults.Kind kind, Predicate<T> busy, Consumer<T> release) {
    lock.lock();
    try {
      T object = handles.get(handle, type);
      if (object == null) {
        return einval();
      }
      int fault = faults.destroyFailure(kind, handle);
      if (fault != 0) {
        return fault;
      }
      if (busy.test(object)) {
        return Errno.EBUSY.number();
      }
      release.accept(object);
      handles.remove(handle);
      return 0;
    } catch (RuntimeException | Error e) {
      return einval();
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public PostResult postSend(Qp qp, List<SendWr> wrs) {
    return post(qp, wrs, SoftQp::postSend);
  }

  /** {@inheritDoc} */
  @Override
  public PostResult postRecv(Qp qp, List<RecvWr> wrs) {
    return post(qp, wrs, SoftQp::postRecv);
  }

  /** A post under the lock: a dead QP or no list is {@code EINVAL} at index 0, nothing posted. */
  private <W> PostResult post(Qp qp, List<W> wrs, BiFunction<SoftQp, List<W>, PostResult> onQp) {
    lock.lock();
    try {
      SoftQp q = handles.get(qp.handle(), SoftQp.class);
      if (q == null || wrs == null) {
        return new PostResult(einval(), 0);
      }
      return onQp.apply(q, wrs);
    } catch (RuntimeException | Error e) {
      return new PostResult(einval(), 0);
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} After an overflow, {@code -EOVERFLOW} once the held entries are drained. */
  @Override
  public int pollCq(Cq cq, Wc[] out) {
    lock.lock();
    try {
      SoftCq q = handles.get(cq.handle(), SoftCq.class);
      if (q == null || out == null) {
        return -einval();
      }
      int fault = faults.pollFailure(q.handle);
      if (fault != 0) {
        return -fault;
      }
      return q.poll(out);
    } catch (RuntimeException | Error e) {
      return -einval();
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} */
  @Override
  public VerbsResult<AsyncEvent> getAsyncEvent(Context context) {
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null) {
        return failed(Errno.EINVAL, "ibv_get_async_event", "no such context");
      }
      AsyncEvent e = c.takeEvent();
      return e == null
          ? failed(Errno.EAGAIN, "ibv_get_async_event", "no event")
          : VerbsResult.ok(e);
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_get_async_event", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /** {@inheritDoc} Waits on the context's event queue. */
  @Override
  public int awaitAsyncEvent(Context context, int timeoutMillis) {
    SoftContext c;
    lock.lock();
    try {
      c = handles.get(context.handle(), SoftContext.class);
    } finally {
      lock.unlock();
    }
    if (c == null) {
      return -Errno.EINVAL.number();
    }
    try {
      return c.awaitEvent(Math.max(0, timeoutMillis)) ? 1 : 0;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -Errno.EINTR.number();
    }
  }

  /** {@inheritDoc} Nothing to do for the soft provider. */
  @Override
  public void ackAsyncEvent(AsyncEvent event) {}

  private static int nextQpNum() {
    while (true) {
      int n = QP_NUMBERS.incrementAndGet() & 0xffffff;
      if (n > 1) {
        return n;
      }
    }
  }

  private int count(SoftDevice d, Class<?> kind) {
    return handles.count(kind, o -> owner(o) == d);
  }

  private static SoftDevice owner(Object o) {
    return switch (o) {
      case SoftPd p -> p.context.device;
      case SoftCq q -> q.context.device;
      case SoftMemory.Region r -> r.pd.context.device;
      case SoftMemory.Window w -> w.pd.context.device;
      default -> null;
    };
  }

  private static void join(List<Thread> threads) {
    for (Thread t : threads) {
      try {
        t.join(JOIN_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** What the fault table asks of this provider. */
  private final class FaultActions implements SoftFaults.Actions {
    @Override
    public void setPortRate(String device, int port, int activeWidth, int activeSpeed) {
      if (!java.util.Set.of(0, 1, 2, 4, 8, 16).contains(activeWidth)) {
        throw new IllegalArgumentException(
            "active_width " + activeWidth + " is not an encoding (0, 1, 2, 4, 8 or 16)");
      }
      if (!java.util.Set.of(0, 1, 2, 4, 8, 16, 32, 64, 128).contains(activeSpeed)) {
        throw new IllegalArgumentException(
            "active_speed " + activeSpeed + " is not an encoding (0, 1, 2, 4, 8, 16, 32, 64, 128)");
      }
      lock.lock();
      try {
        SoftDevice d =
            devices.stream().filter(x -> x.name().equals(device)).findFirst().orElse(null);
        if (d == null || port < 1 || port > d.portCount()) {
          throw new IllegalArgumentException("no port " + port + " on " + device);
        }
        d.setPortRate(port, activeWidth, activeSpeed);
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void setPortState(String device, int port, int state) {
      if (state != Ibv.PORT_ACTIVE && state != Ibv.PORT_DOWN) {
        throw new IllegalArgumentException("ACTIVE or DOWN, not " + state);
      }
      lock.lock();
      try {
        SoftDevice d =
            devices.stream().filter(x -> x.name().equals(device)).findFirst().orElse(null);
        if (d == null || port < 1 || port > d.portCount()) {
          throw new IllegalArgumentException("no port " + port + " on " + device);
        }
        d.setPortState(port, state);
        int type = state == Ibv.PORT_ACTIVE ? Ibv.EVENT_PORT_ACTIVE : Ibv.EVENT_PORT_ERR;
        for (SoftContext c : d.contexts) {
          c.event(type, port);
        }
        for (SoftQp q : d.qps.values()) {
          q.changed.signalAll();
        }
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void setGidAlias(String device, int port, int index, int alias) {
      lock.lock();
      try {
        SoftDevice d =
            devices.stream().filter(x -> x.name().equals(device)).findFirst().orElse(null);
        if (d == null || port < 1 || port > d.portCount()) {
          throw new IllegalArgumentException("no port " + port + " on " + device);
        }
        if (index < 0 || index >= SoftDevice.GID_TABLE_LENGTH) {
          throw new IllegalArgumentException(
              "GID index "
                  + index
                  + " of "
                  + device
                  + " port "
                  + port
                  + " is outside its table (0.."
                  + (SoftDevice.GID_TABLE_LENGTH - 1)
                  + ")");
        }
        d.setGidAlias(port, index, alias);
        for (SoftContext c : d.contexts) {
          c.event(Ibv.EVENT_GID_CHANGE, port);
        }
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void deviceFatal(String device) {
      lock.lock();
      try {
        SoftDevice d =
            devices.stream().filter(x -> x.name().equals(device)).findFirst().orElse(null);
        if (d == null) {
          throw new IllegalArgumentException("no device " + device);
        }
        for (SoftContext c : d.contexts) {
          c.event(Ibv.EVENT_DEVICE_FATAL, 0);
        }
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void dropWire(int qpNum) {
      lock.lock();
      try {
        for (SoftDevice d : devices) {
          SoftQp q = d.qps.get(qpNum);
          if (q != null) {
            q.requester.drop();
            return;
          }
        }
        throw new IllegalArgumentException("no QP " + qpNum);
      } finally {
        lock.unlock();
      }
    }

    @Override
    public long payloadBytes(String device) {
      return devices.stream()
          .filter(x -> x.name().equals(device))
          .findFirst()
          .orElseThrow(() -> new IllegalArgumentException("no device " + device))
          .payloadBytes
          .sum();
    }

    @Override
    public long sendCqOf(int qpNum) {
      lock.lock();
      try {
        for (SoftDevice d : devices) {
          SoftQp q = d.qps.get(qpNum);
          if (q != null) {
            return q.sendCq.handle;
          }
        }
        throw new IllegalArgumentException("no QP " + qpNum);
      } finally {
        lock.unlock();
      }
    }

    @Override
    public void wireReleased() {
      lock.lock();
      try {
        for (SoftDevice d : devices) {
          for (SoftQp q : d.qps.values()) {
            q.changed.signalAll();
          }
        }
      } finally {
        lock.unlock();
      }
    }
  }
}
