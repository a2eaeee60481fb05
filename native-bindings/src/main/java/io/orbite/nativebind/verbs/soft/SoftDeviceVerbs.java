package io.orbite.nativebind.verbs.soft;

import static io.orbite.nativebind.verbs.soft.SoftTable.einval;
import static io.orbite.nativebind.verbs.soft.SoftTable.failed;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs.AsyncEvent;
import io.orbite.nativebind.verbs.Verbs.Context;
import io.orbite.nativebind.verbs.Verbs.Device;
import io.orbite.nativebind.verbs.Verbs.DeviceAttr;
import io.orbite.nativebind.verbs.Verbs.Gid;
import io.orbite.nativebind.verbs.Verbs.Mr;
import io.orbite.nativebind.verbs.Verbs.Mw;
import io.orbite.nativebind.verbs.Verbs.Pd;
import io.orbite.nativebind.verbs.Verbs.PortAttr;
import io.orbite.nativebind.verbs.VerbsResult;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The verbs of a {@link SoftVerbs} over devices and their resources: the device list, contexts
 * (open, close, queries, async events), protection domains, memory regions and type-2 windows.
 * Every call runs under the provider's lock and answers {@code EINVAL} for anything unexpected, as
 * the provider's class comment says.
 */
final class SoftDeviceVerbs extends SoftVerbsGroup {
  // Never started: stands for the responder threads that must be able to touch a registered range.
  private static final Thread OTHER_THREAD = Thread.ofPlatform().unstarted(() -> {});

  SoftDeviceVerbs(SoftTable table) {
    super(table);
  }

  VerbsResult<List<Device>> getDeviceList() {
    lock.lock();
    try {
      List<Device> list = new ArrayList<>();
      for (SoftDevice d : table.devices) {
        list.add(d.record);
      }
      return VerbsResult.ok(List.copyOf(list));
    } catch (RuntimeException | Error e) {
      return failed(Errno.EINVAL, "ibv_get_device_list", e.toString());
    } finally {
      lock.unlock();
    }
  }

  VerbsResult<Context> openDevice(Device device) {
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

  int closeDevice(Context context) {
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
    SoftTable.join(threads);
    return 0;
  }

  VerbsResult<DeviceAttr> queryDevice(Context context) {
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

  VerbsResult<PortAttr> queryPort(Context context, int port) {
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

  VerbsResult<Gid> queryGid(Context context, int port, int index) {
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

  VerbsResult<AsyncEvent> getAsyncEvent(Context context) {
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

  int awaitAsyncEvent(Context context, int timeoutMillis) {
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

  VerbsResult<Pd> allocPd(Context context) {
    lock.lock();
    try {
      SoftContext c = handles.get(context.handle(), SoftContext.class);
      if (c == null) {
        return failed(Errno.EINVAL, "ibv_alloc_pd", "no such context");
      }
      if (table.count(c.device, SoftPd.class) >= c.device.spec.attr().maxPd()) {
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

  int deallocPd(Pd pd) {
    return table.destroy(
        pd.handle(), SoftPd.class, SoftFaults.Kind.PD, SoftPd::busy, p -> p.context.pds--);
  }

  VerbsResult<Mr> regMr(Pd pd, MemorySegment range, int access) {
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
      if (table.count(d, SoftMemory.Region.class) >= d.spec.attr().maxMr()) {
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

  int deregMr(Mr mr) {
    return table.destroy(
        mr.handle(),
        SoftMemory.Region.class,
        SoftFaults.Kind.MR,
        () -> faults.deregFailureAt(mr.addr()),
        r -> r.boundWindows > 0,
        r -> {
          r.pd.context.device.memory.deregister(r);
          r.pd.mrs--;
        });
  }

  VerbsResult<Mw> allocMw(Pd pd, int type) {
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
      if (table.count(d, SoftMemory.Window.class) >= d.spec.attr().maxMw()) {
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

  int deallocMw(Mw mw) {
    return table.destroy(
        mw.handle(),
        SoftMemory.Window.class,
        SoftFaults.Kind.MW,
        w -> false,
        w -> {
          w.pd.context.device.memory.deallocate(w);
          w.pd.mws--;
        });
  }
}
