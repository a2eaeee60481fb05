package io.orbite.nativebind.verbs;

import static io.orbite.nativebind.verbs.IbvStructs.at;
import static io.orbite.nativebind.verbs.IbvStructs.struct;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.orbite.nativebind.Availability;
import io.orbite.nativebind.Errno;
import io.orbite.nativebind.ErrnoCapture;
import io.orbite.nativebind.NativeBinder;
import io.orbite.nativebind.NativeCallException;
import io.orbite.nativebind.libc.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The {@link Verbs} table over {@code libibverbs.so.1} through FFM. The library is loaded at run
 * time, once ({@link #system()}), and stays loaded for the life of the process. A missing library
 * or a missing required export makes the table unavailable before any native call: every call then
 * fails {@code ENOSYS} naming the library or the symbol ({@link #availability()}), and {@link
 * #unavailabilityCause()} says why no device can be used (also when the library loads but lists no
 * device, or the kernel has no RDMA subsystem).
 *
 * <p><b>The inline-ops bridge.</b> {@code ibv_post_send}, {@code ibv_post_recv}, {@code
 * ibv_poll_cq}, {@code ibv_req_notify_cq}, {@code ibv_alloc_mw} and {@code ibv_dealloc_mw} are
 * {@code static inline} in {@code verbs.h}: they are not exported, and call the provider's entry in
 * the context's {@code struct ibv_context_ops} ({@code qp->context->ops.post_send(...)}). This
 * class does the same: it reads the object's {@code context} pointer (its first field), the entry
 * at the header's offset in {@code ops} ({@link IbvLayout}, checked with gcc), and calls that
 * function pointer through an address-taking downcall handle; a null entry fails {@code
 * EOPNOTSUPP}, as the header's {@code ibv_alloc_mw} does. {@code ibv_query_port} is a macro over an
 * inline that prefers the extended context's {@code query_port}; the exported {@code
 * ibv_query_port} (the compat symbol, whose struct is a prefix of {@code struct ibv_port_attr})
 * reaches the same provider query, and is called with a zeroed full-size struct, as the inline does
 * when it falls back.
 *
 * <p>The completion channel's and the context's async-event descriptors are made non-blocking at
 * creation, so {@link #getCqEvent} and {@link #getAsyncEvent} answer {@code EAGAIN} instead of
 * waiting. The device list is fetched once and kept (never freed): the devices it names must stay
 * valid while any of them is open. Work requests and completions are marshalled through a confined
 * arena per call; the structs are read and written by {@code IbvStructs}, at {@link IbvLayout}'s
 * offsets.
 *
 * <p>One class per native library: every downcall handle of libibverbs (and of the provider's
 * inline ops) is built once here and probed into one {@link Availability}, and each verb is one
 * call with its errno capture and availability check, so the file stays whole past 500 lines.
 */
public final class NativeVerbs implements Verbs {
  /** The shared object loaded by {@link #system()}. */
  public static final String LIBRARY = "libibverbs.so.1";

  private static final long MAX_NAME = 64; // IBV_SYSFS_NAME_MAX

  private final String library;
  private final MethodHandle getDeviceList;
  private final MethodHandle getDeviceName;
  private final MethodHandle getDeviceGuid;
  private final MethodHandle openDevice;
  private final MethodHandle closeDevice;
  private final MethodHandle queryDevice;
  private final MethodHandle queryPort;
  private final MethodHandle queryGid;
  private final MethodHandle allocPd;
  private final MethodHandle deallocPd;
  private final MethodHandle regMr;
  private final MethodHandle deregMr;
  private final MethodHandle createCompChannel;
  private final MethodHandle destroyCompChannel;
  private final MethodHandle createCq;
  private final MethodHandle destroyCq;
  private final MethodHandle getCqEvent;
  private final MethodHandle ackCqEvents;
  private final MethodHandle createQp;
  private final MethodHandle modifyQp;
  private final MethodHandle queryQp;
  private final MethodHandle destroyQp;
  private final MethodHandle getAsyncEvent;
  private final MethodHandle ackAsyncEvent;
  private final Optional<MethodHandle> regDmabufMr;
  private final MethodHandle opAllocMw;
  private final MethodHandle opDeallocMw;
  private final MethodHandle opPollCq;
  private final MethodHandle opReqNotifyCq;
  private final MethodHandle opPostSend;
  private final MethodHandle opPostRecv;
  private final Availability availability;

  private final Map<Long, Context> contexts = new ConcurrentHashMap<>();
  private volatile List<Device> devices;

  private static final class Holder {
    static final NativeVerbs SYSTEM = new NativeVerbs("libibverbs", LIBRARY);
  }

  /** The table over {@value #LIBRARY}, loaded on first use and kept for the process's life. */
  public static NativeVerbs system() {
    return Holder.SYSTEM;
  }

  /**
   * A table over another shared object, tried in order: what a missing library or a library without
   * the verbs exports looks like. Such a table never replaces {@link #system()}.
   */
  public static NativeVerbs load(String library, String... candidates) {
    return new NativeVerbs(library, candidates);
  }

  private NativeVerbs(String library, String... candidates) {
    this.library = library;
    NativeBinder b = NativeBinder.ofLibrary(library, candidates);
    getDeviceList = b.downcallWithErrno("ibv_get_device_list", fn(ADDRESS, ADDRESS));
    getDeviceName = b.downcall("ibv_get_device_name", fn(ADDRESS, ADDRESS));
    getDeviceGuid = b.downcall("ibv_get_device_guid", fn(JAVA_LONG, ADDRESS));
    openDevice = b.downcallWithErrno("ibv_open_device", fn(ADDRESS, ADDRESS));
    closeDevice = b.downcallWithErrno("ibv_close_device", fn(JAVA_INT, ADDRESS));
    queryDevice = b.downcallWithErrno("ibv_query_device", fn(JAVA_INT, ADDRESS, ADDRESS));
    queryPort = b.downcallWithErrno("ibv_query_port", fn(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS));
    queryGid =
        b.downcallWithErrno("ibv_query_gid", fn(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS));
    allocPd = b.downcallWithErrno("ibv_alloc_pd", fn(ADDRESS, ADDRESS));
    deallocPd = b.downcallWithErrno("ibv_dealloc_pd", fn(JAVA_INT, ADDRESS));
    regMr = b.downcallWithErrno("ibv_reg_mr", fn(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_INT));
    deregMr = b.downcallWithErrno("ibv_dereg_mr", fn(JAVA_INT, ADDRESS));
    createCompChannel = b.downcallWithErrno("ibv_create_comp_channel", fn(ADDRESS, ADDRESS));
    destroyCompChannel = b.downcallWithErrno("ibv_destroy_comp_channel", fn(JAVA_INT, ADDRESS));
    createCq =
        b.downcallWithErrno(
            "ibv_create_cq", fn(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    destroyCq = b.downcallWithErrno("ibv_destroy_cq", fn(JAVA_INT, ADDRESS));
    getCqEvent = b.downcallWithErrno("ibv_get_cq_event", fn(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    ackCqEvents = b.downcall("ibv_ack_cq_events", FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));
    createQp = b.downcallWithErrno("ibv_create_qp", fn(ADDRESS, ADDRESS, ADDRESS));
    modifyQp = b.downcallWithErrno("ibv_modify_qp", fn(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    queryQp =
        b.downcallWithErrno("ibv_query_qp", fn(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
    destroyQp = b.downcallWithErrno("ibv_destroy_qp", fn(JAVA_INT, ADDRESS));
    getAsyncEvent = b.downcallWithErrno("ibv_get_async_event", fn(JAVA_INT, ADDRESS, ADDRESS));
    ackAsyncEvent = b.downcall("ibv_ack_async_event", FunctionDescriptor.ofVoid(ADDRESS));
    regDmabufMr =
        b.optionalDowncallWithErrno(
            "ibv_reg_dmabuf_mr",
            fn(ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT));
    opAllocMw = b.pointerDowncall("ops.alloc_mw", fn(ADDRESS, ADDRESS, JAVA_INT), true);
    opDeallocMw = b.pointerDowncall("ops.dealloc_mw", fn(JAVA_INT, ADDRESS), true);
    opPollCq = b.pointerDowncall("ops.poll_cq", fn(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS), false);
    opReqNotifyCq = b.pointerDowncall("ops.req_notify_cq", fn(JAVA_INT, ADDRESS, JAVA_INT), false);
    opPostSend = b.pointerDowncall("ops.post_send", fn(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), false);
    opPostRecv = b.pointerDowncall("ops.post_recv", fn(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), false);
    availability = b.availability();
  }

  private static FunctionDescriptor fn(MemoryLayout result, MemoryLayout... args) {
    return FunctionDescriptor.of(result, args);
  }

  /** Whether the library and every required export were found (no native call made). */
  public Availability availability() {
    return availability;
  }

  /**
   * Why no RDMA device can be used through this table ({@code "libibverbs: unavailable (...)"}), or
   * empty when at least one is listed: the library or an export missing, the device list failing
   * (for example {@code ENOSYS} when the kernel has no RDMA subsystem), or an empty list.
   */
  public Optional<String> unavailabilityCause() {
    if (!availability.isAvailable()) {
      return Optional.of(availability.toString());
    }
    VerbsResult<List<Device>> list = getDeviceList();
    if (!list.ok()) {
      return Optional.of(
          Availability.unavailable(library, "no RDMA device: " + list.describe()).toString());
    }
    if (list.value().isEmpty()) {
      return Optional.of(
          Availability.unavailable(library, "no RDMA device: ibv_get_device_list listed none")
              .toString());
    }
    return Optional.empty();
  }

  @Override
  public String provider() {
    return "libibverbs";
  }

  private <T> VerbsResult<T> unavailable(String call) {
    return VerbsResult.failed(
        Errno.ENOSYS.number(),
        call + ": " + library + " unavailable (" + availability.cause().orElse("") + ")");
  }

  private static int failure(int returned, MemorySegment state) {
    if (returned == -1) {
      int errno = ErrnoCapture.errno(state);
      return errno > 0 ? errno : Errno.EIO.number();
    }
    return returned < 0 ? -returned : returned;
  }

  private static <T> VerbsResult<T> thrown(String call, Throwable t) {
    return VerbsResult.failed(Errno.EIO.number(), call + ": " + t);
  }

  /** The ops entry at {@code offset} of the context {@code object}'s first field points to. */
  private static MemorySegment op(long object, long offset) {
    MemorySegment context = struct(object, 8).get(ADDRESS, IbvLayout.OBJECT_CONTEXT);
    return context
        .reinterpret(IbvLayout.CONTEXT_OPS + 256)
        .get(ADDRESS, IbvLayout.CONTEXT_OPS + offset);
  }

  /** Where the kernel lists RDMA devices ({@code <name>/device/numa_node} below it). */
  private static final java.nio.file.Path SYSFS_INFINIBAND =
      java.nio.file.Path.of("/sys/class/infiniband");

  /** {@inheritDoc} */
  @Override
  public int numaNode(Device device) {
    return numaNodeIn(SYSFS_INFINIBAND, device.name());
  }

  /**
   * The node {@code <root>/<device>/device/numa_node} holds, or -1 when it is missing, unreadable,
   * not a decimal integer or negative (the kernel writes -1 for a device without NUMA affinity).
   */
  static int numaNodeIn(java.nio.file.Path root, String device) {
    if (device.isEmpty() || device.contains("/") || device.equals("..") || device.equals(".")) {
      return -1;
    }
    try {
      String text =
          java.nio.file.Files.readString(
                  root.resolve(device).resolve("device").resolve("numa_node"))
              .strip();
      int node = Integer.parseInt(text);
      return node >= 0 ? node : -1;
    } catch (java.io.IOException | NumberFormatException | SecurityException e) {
      return -1;
    }
  }

  @Override
  public VerbsResult<List<Device>> getDeviceList() {
    if (!availability.isAvailable()) {
      return unavailable("ibv_get_device_list");
    }
    List<Device> known = devices;
    if (known != null) {
      return VerbsResult.ok(known);
    }
    synchronized (this) {
      if (devices != null) {
        return VerbsResult.ok(devices);
      }
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment state = ErrnoCapture.allocate(arena);
        MemorySegment count = arena.allocate(JAVA_INT);
        MemorySegment list = (MemorySegment) getDeviceList.invokeExact(state, count);
        if (list.address() == 0) {
          int errno = ErrnoCapture.errno(state);
          return VerbsResult.failed(
              errno > 0 ? errno : Errno.ENODEV.number(),
              "ibv_get_device_list"
                  + (errno == Errno.ENOSYS.number()
                      ? " (this kernel has no RDMA subsystem: no ib_uverbs, rxe or siw)"
                      : ""));
        }
        int n = count.get(JAVA_INT, 0);
        MemorySegment entries = list.reinterpret(8L * (n + 1));
        List<Device> found = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          MemorySegment device = entries.getAtIndex(ADDRESS, i);
          MemorySegment name = (MemorySegment) getDeviceName.invokeExact(device);
          long guid = (long) getDeviceGuid.invokeExact(device);
          found.add(
              new Device(
                  device.address(),
                  name.reinterpret(MAX_NAME).getString(0, StandardCharsets.US_ASCII),
                  Long.reverseBytes(guid)));
        }
        devices = List.copyOf(found);
        return VerbsResult.ok(devices);
      } catch (Throwable t) {
        return thrown("ibv_get_device_list", t);
      }
    }
  }

  @Override
  public VerbsResult<Context> openDevice(Device device) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_open_device");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment ctx = (MemorySegment) openDevice.invokeExact(state, at(device.handle()));
      if (ctx.address() == 0) {
        return VerbsResult.failed(failure(-1, state), "ibv_open_device(" + device.name() + ")");
      }
      int asyncFd =
          struct(ctx.address(), IbvLayout.CONTEXT_ASYNC_FD + 4)
              .get(JAVA_INT, IbvLayout.CONTEXT_ASYNC_FD);
      try {
        Libc.setNonBlocking(asyncFd);
      } catch (NativeCallException e) {
        int ignored = (int) closeDevice.invokeExact(state, ctx);
        return VerbsResult.failed(
            e.errno(), "ibv_open_device(" + device.name() + "): async fd " + e.getMessage());
      }
      Context context = new Context(ctx.address(), device.name());
      contexts.put(ctx.address(), context);
      return VerbsResult.ok(context);
    } catch (Throwable t) {
      return thrown("ibv_open_device", t);
    }
  }

  @Override
  public int closeDevice(Context context) {
    if (!availability.isAvailable()) {
      return Errno.ENOSYS.number();
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r = (int) closeDevice.invokeExact(state, at(context.handle()));
      if (r == 0) {
        contexts.remove(context.handle());
      }
      return r == 0 ? 0 : failure(r, state);
    } catch (Throwable t) {
      return Errno.EIO.number();
    }
  }

  @Override
  public VerbsResult<DeviceAttr> queryDevice(Context context) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_query_device");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment a = arena.allocate(IbvLayout.DEVICE_ATTR_SIZE, 8);
      int r = (int) queryDevice.invokeExact(state, at(context.handle()), a);
      if (r != 0) {
        return VerbsResult.failed(
            failure(r, state), "ibv_query_device(" + context.deviceName() + ")");
      }
      return VerbsResult.ok(IbvStructs.readDeviceAttr(a));
    } catch (Throwable t) {
      return thrown("ibv_query_device", t);
    }
  }

  @Override
  public VerbsResult<PortAttr> queryPort(Context context, int port) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_query_port");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment a = arena.allocate(IbvLayout.PORT_ATTR_SIZE, 8); // zeroed, as the inline does
      int r = (int) queryPort.invokeExact(state, at(context.handle()), (byte) port, a);
      if (r != 0) {
        return VerbsResult.failed(
            failure(r, state), "ibv_query_port(" + context.deviceName() + ", " + port + ")");
      }
      return VerbsResult.ok(IbvStructs.readPortAttr(a));
    } catch (Throwable t) {
      return thrown("ibv_query_port", t);
    }
  }

  @Override
  public VerbsResult<Gid> queryGid(Context context, int port, int index) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_query_gid");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment gid = arena.allocate(IbvLayout.GID_SIZE, 8);
      int r = (int) queryGid.invokeExact(state, at(context.handle()), (byte) port, index, gid);
      if (r != 0) {
        return VerbsResult.failed(
            failure(r, state),
            "ibv_query_gid(" + context.deviceName() + ", " + port + ", " + index + ")");
      }
      return VerbsResult.ok(Gid.of(gid.toArray(JAVA_BYTE)));
    } catch (Throwable t) {
      return thrown("ibv_query_gid", t);
    }
  }

  @Override
  public VerbsResult<Pd> allocPd(Context context) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_alloc_pd");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment pd = (MemorySegment) allocPd.invokeExact(state, at(context.handle()));
      if (pd.address() == 0) {
        return VerbsResult.failed(failure(-1, state), "ibv_alloc_pd(" + context.deviceName() + ")");
      }
      return VerbsResult.ok(new Pd(pd.address(), context));
    } catch (Throwable t) {
      return thrown("ibv_alloc_pd", t);
    }
  }

  @Override
  public int deallocPd(Pd pd) {
    return destroy(deallocPd, pd.handle());
  }

  private int destroy(MethodHandle destroy, long handle) {
    if (!availability.isAvailable()) {
      return Errno.ENOSYS.number();
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r = (int) destroy.invokeExact(state, at(handle));
      return r == 0 ? 0 : failure(r, state);
    } catch (Throwable t) {
      return Errno.EIO.number();
    }
  }

  @Override
  public VerbsResult<Mr> regMr(Pd pd, MemorySegment range, int access) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_reg_mr");
    }
    if (range == null || !range.isNative()) {
      return VerbsResult.failed(
          Errno.EINVAL.number(), "ibv_reg_mr: the range must be native memory");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment mr =
          (MemorySegment)
              regMr.invokeExact(state, at(pd.handle()), range, range.byteSize(), access);
      if (mr.address() == 0) {
        return VerbsResult.failed(
            failure(-1, state),
            "ibv_reg_mr("
                + range.byteSize()
                + " B at 0x"
                + Long.toHexString(range.address())
                + ")");
      }
      return VerbsResult.ok(IbvStructs.readMr(mr.address(), pd, access));
    } catch (Throwable t) {
      return thrown("ibv_reg_mr", t);
    }
  }

  @Override
  public VerbsResult<Mr> regDmabufMr(
      Pd pd, long offset, long length, long iova, int fd, int access) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_reg_dmabuf_mr");
    }
    if (regDmabufMr.isEmpty()) {
      return VerbsResult.failed(
          Errno.EOPNOTSUPP.number(), "ibv_reg_dmabuf_mr: not exported by " + library);
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment mr =
          (MemorySegment)
              regDmabufMr
                  .get()
                  .invokeExact(state, at(pd.handle()), offset, length, iova, fd, access);
      if (mr.address() == 0) {
        return VerbsResult.failed(
            failure(-1, state), "ibv_reg_dmabuf_mr(fd " + fd + ", " + length + " B)");
      }
      return VerbsResult.ok(IbvStructs.readMr(mr.address(), pd, access));
    } catch (Throwable t) {
      return thrown("ibv_reg_dmabuf_mr", t);
    }
  }

  @Override
  public int deregMr(Mr mr) {
    return destroy(deregMr, mr.handle());
  }

  @Override
  public VerbsResult<Mw> allocMw(Pd pd, int type) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_alloc_mw");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment fn = op(pd.handle(), IbvLayout.OPS_ALLOC_MW);
      if (fn.address() == 0) {
        return VerbsResult.failed(
            Errno.EOPNOTSUPP.number(), "ibv_alloc_mw: the provider has no memory windows");
      }
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment mw = (MemorySegment) opAllocMw.invokeExact(fn, state, at(pd.handle()), type);
      if (mw.address() == 0) {
        return VerbsResult.failed(failure(-1, state), "ibv_alloc_mw(type " + type + ")");
      }
      return VerbsResult.ok(IbvStructs.readMw(mw.address(), pd));
    } catch (Throwable t) {
      return thrown("ibv_alloc_mw", t);
    }
  }

  @Override
  public int deallocMw(Mw mw) {
    if (!availability.isAvailable()) {
      return Errno.ENOSYS.number();
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment fn = op(mw.handle(), IbvLayout.OPS_DEALLOC_MW);
      if (fn.address() == 0) {
        return Errno.EOPNOTSUPP.number();
      }
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r = (int) opDeallocMw.invokeExact(fn, state, at(mw.handle()));
      return r == 0 ? 0 : failure(r, state);
    } catch (Throwable t) {
      return Errno.EIO.number();
    }
  }

  @Override
  public VerbsResult<CompChannel> createCompChannel(Context context) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_create_comp_channel");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment ch = (MemorySegment) createCompChannel.invokeExact(state, at(context.handle()));
      if (ch.address() == 0) {
        return VerbsResult.failed(failure(-1, state), "ibv_create_comp_channel");
      }
      int fd =
          struct(ch.address(), IbvLayout.COMP_CHANNEL_FD + 4)
              .get(JAVA_INT, IbvLayout.COMP_CHANNEL_FD);
      try {
        Libc.setNonBlocking(fd);
      } catch (NativeCallException e) {
        int ignored = (int) destroyCompChannel.invokeExact(state, ch);
        return VerbsResult.failed(e.errno(), "ibv_create_comp_channel: fd " + e.getMessage());
      }
      return VerbsResult.ok(new CompChannel(ch.address(), context, fd));
    } catch (Throwable t) {
      return thrown("ibv_create_comp_channel", t);
    }
  }

  @Override
  public int destroyCompChannel(CompChannel channel) {
    return destroy(destroyCompChannel, channel.handle());
  }

  @Override
  public VerbsResult<Cq> createCq(Context context, int cqe, CompChannel channel, int compVector) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_create_cq");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment cq =
          (MemorySegment)
              createCq.invokeExact(
                  state,
                  at(context.handle()),
                  cqe,
                  MemorySegment.NULL,
                  channel == null ? MemorySegment.NULL : at(channel.handle()),
                  compVector);
      if (cq.address() == 0) {
        return VerbsResult.failed(failure(-1, state), "ibv_create_cq(" + cqe + " entries)");
      }
      return VerbsResult.ok(cqOf(cq.address(), context));
    } catch (Throwable t) {
      return thrown("ibv_create_cq", t);
    }
  }

  private static Cq cqOf(long address, Context context) {
    return new Cq(
        address, context, struct(address, IbvLayout.CQ_CQE + 4).get(JAVA_INT, IbvLayout.CQ_CQE));
  }

  @Override
  public int destroyCq(Cq cq) {
    return destroy(destroyCq, cq.handle());
  }

  @Override
  public int reqNotifyCq(Cq cq, boolean solicitedOnly) {
    if (!availability.isAvailable()) {
      return Errno.ENOSYS.number();
    }
    try {
      MemorySegment fn = op(cq.handle(), IbvLayout.OPS_REQ_NOTIFY_CQ);
      int r = (int) opReqNotifyCq.invokeExact(fn, at(cq.handle()), solicitedOnly ? 1 : 0);
      return r < 0 ? -r : r;
    } catch (Throwable t) {
      return Errno.EIO.number();
    }
  }

  @Override
  public VerbsResult<Cq> getCqEvent(CompChannel channel) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_get_cq_event");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment cq = arena.allocate(ADDRESS);
      MemorySegment cqContext = arena.allocate(ADDRESS);
      int r = (int) getCqEvent.invokeExact(state, at(channel.handle()), cq, cqContext);
      if (r != 0) {
        return VerbsResult.failed(failure(r, state), "ibv_get_cq_event");
      }
      return VerbsResult.ok(cqOf(cq.get(ADDRESS, 0).address(), channel.context()));
    } catch (Throwable t) {
      return thrown("ibv_get_cq_event", t);
    }
  }

  @Override
  public void ackCqEvents(Cq cq, int events) {
    if (!availability.isAvailable() || events <= 0) {
      return;
    }
    try {
      ackCqEvents.invokeExact(at(cq.handle()), events);
    } catch (Throwable t) {
      // Nothing to report through a void verb; the CQ's destroy then waits or fails.
    }
  }

  @Override
  public VerbsResult<Qp> createQp(Pd pd, QpInitAttr attr) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_create_qp");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment a = arena.allocate(IbvLayout.QP_INIT_ATTR_SIZE, 8);
      IbvStructs.writeQpInitAttr(a, attr);
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment qp = (MemorySegment) createQp.invokeExact(state, at(pd.handle()), a);
      if (qp.address() == 0) {
        return VerbsResult.failed(failure(-1, state), "ibv_create_qp(" + attr + ")");
      }
      return VerbsResult.ok(
          new Qp(
              qp.address(),
              pd,
              struct(qp.address(), IbvLayout.QP_QP_NUM + 4).get(JAVA_INT, IbvLayout.QP_QP_NUM)));
    } catch (Throwable t) {
      return thrown("ibv_create_qp", t);
    }
  }

  @Override
  public int modifyQp(Qp qp, QpAttr attr, int attrMask) {
    if (!availability.isAvailable()) {
      return Errno.ENOSYS.number();
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment a = arena.allocate(IbvLayout.QP_ATTR_SIZE, 8);
      IbvStructs.writeQpAttr(a, attr);
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r = (int) modifyQp.invokeExact(state, at(qp.handle()), a, attrMask);
      return r == 0 ? 0 : failure(r, state);
    } catch (Throwable t) {
      return Errno.EIO.number();
    }
  }

  @Override
  public VerbsResult<QpAttr> queryQp(Qp qp, int attrMask) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_query_qp");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment a = arena.allocate(IbvLayout.QP_ATTR_SIZE, 8);
      MemorySegment init = arena.allocate(IbvLayout.QP_INIT_ATTR_SIZE, 8);
      MemorySegment state = ErrnoCapture.allocate(arena);
      int r = (int) queryQp.invokeExact(state, at(qp.handle()), a, attrMask, init);
      if (r != 0) {
        return VerbsResult.failed(failure(r, state), "ibv_query_qp(qp " + qp.qpNum() + ")");
      }
      return VerbsResult.ok(IbvStructs.readQpAttr(a));
    } catch (Throwable t) {
      return thrown("ibv_query_qp", t);
    }
  }

  @Override
  public int destroyQp(Qp qp) {
    return destroy(destroyQp, qp.handle());
  }

  @Override
  public PostResult postSend(Qp qp, List<SendWr> wrs) {
    if (!availability.isAvailable()) {
      return new PostResult(Errno.ENOSYS.number(), 0);
    }
    if (wrs.isEmpty()) {
      return PostResult.ALL;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment list = IbvStructs.sendWrs(arena, wrs);
      MemorySegment bad = arena.allocate(ADDRESS);
      MemorySegment fn = op(qp.handle(), IbvLayout.OPS_POST_SEND);
      int r = (int) opPostSend.invokeExact(fn, at(qp.handle()), list, bad);
      return IbvStructs.posted(r, bad, list, IbvLayout.SEND_WR_SIZE, wrs.size());
    } catch (Throwable t) {
      return new PostResult(Errno.EIO.number(), 0);
    }
  }

  @Override
  public PostResult postRecv(Qp qp, List<RecvWr> wrs) {
    if (!availability.isAvailable()) {
      return new PostResult(Errno.ENOSYS.number(), 0);
    }
    if (wrs.isEmpty()) {
      return PostResult.ALL;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment list = IbvStructs.recvWrs(arena, wrs);
      MemorySegment bad = arena.allocate(ADDRESS);
      MemorySegment fn = op(qp.handle(), IbvLayout.OPS_POST_RECV);
      int r = (int) opPostRecv.invokeExact(fn, at(qp.handle()), list, bad);
      return IbvStructs.posted(r, bad, list, IbvLayout.RECV_WR_SIZE, wrs.size());
    } catch (Throwable t) {
      return new PostResult(Errno.EIO.number(), 0);
    }
  }

  @Override
  public int pollCq(Cq cq, Wc[] out) {
    if (!availability.isAvailable()) {
      return -Errno.ENOSYS.number();
    }
    if (out.length == 0) {
      return 0;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment wcs = arena.allocate(IbvLayout.WC_SIZE * out.length, 8);
      MemorySegment fn = op(cq.handle(), IbvLayout.OPS_POLL_CQ);
      int n = (int) opPollCq.invokeExact(fn, at(cq.handle()), out.length, wcs);
      for (int i = 0; i < n; i++) {
        out[i] = IbvStructs.readWc(wcs.asSlice(IbvLayout.WC_SIZE * i, IbvLayout.WC_SIZE));
      }
      return n;
    } catch (Throwable t) {
      return -Errno.EIO.number();
    }
  }

  @Override
  public VerbsResult<AsyncEvent> getAsyncEvent(Context context) {
    if (!availability.isAvailable()) {
      return unavailable("ibv_get_async_event");
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      MemorySegment e = arena.allocate(IbvLayout.ASYNC_EVENT_SIZE, 8);
      int r = (int) getAsyncEvent.invokeExact(state, at(context.handle()), e);
      if (r != 0) {
        return VerbsResult.failed(
            failure(r, state), "ibv_get_async_event(" + context.deviceName() + ")");
      }
      return VerbsResult.ok(IbvStructs.readAsyncEvent(e));
    } catch (Throwable t) {
      return thrown("ibv_get_async_event", t);
    }
  }

  @Override
  public int awaitAsyncEvent(Context context, int timeoutMillis) {
    if (!availability.isAvailable()) {
      return -Errno.ENOSYS.number();
    }
    try {
      int fd =
          struct(context.handle(), IbvLayout.CONTEXT_ASYNC_FD + 4)
              .get(JAVA_INT, IbvLayout.CONTEXT_ASYNC_FD);
      int revents = Libc.poll(fd, Libc.POLLIN, timeoutMillis);
      if ((revents & (Libc.POLLERR | Libc.POLLHUP | Libc.POLLNVAL)) != 0) {
        return -Errno.EIO.number();
      }
      return (revents & Libc.POLLIN) != 0 ? 1 : 0;
    } catch (RuntimeException e) { // poll failed (NativeCallException) or the binding did
      return -Errno.EIO.number();
    }
  }

  @Override
  public void ackAsyncEvent(AsyncEvent event) {
    if (!availability.isAvailable()) {
      return;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment e = arena.allocate(IbvLayout.ASYNC_EVENT_SIZE, 8);
      IbvStructs.writeAsyncEvent(e, event);
      ackAsyncEvent.invokeExact(e);
    } catch (Throwable t) {
      // Nothing to report through a void verb.
    }
  }
}
