package io.orbite.nativebind.verbs.soft;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.VerbsResult;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.IntSupplier;
import java.util.function.Predicate;

/**
 * What the verbs groups of one {@link SoftVerbs} share: the lock that guards the provider's state,
 * its handle table, its fault table and its devices; the shape of every destroy; the per-device
 * object counts its limits are checked against; and the failure values every call answers.
 */
final class SoftTable {
  static final long JOIN_MILLIS = 5_000;

  final ReentrantLock lock = new ReentrantLock();
  final SoftHandles handles = new SoftHandles();
  final SoftFaults faults;
  final List<SoftDevice> devices = new ArrayList<>();

  SoftTable(SoftFabric fabric, SoftFaults faults) {
    this.faults = faults;
    for (SoftFabric.DeviceSpec spec : fabric.devices()) {
      long h = handles.reserve();
      SoftDevice d = new SoftDevice(h, spec, lock);
      handles.put(h, d);
      devices.add(d);
    }
  }

  static int einval() {
    return Errno.EINVAL.number();
  }

  static <T> VerbsResult<T> failed(Errno errno, String call, String why) {
    return VerbsResult.failed(errno.number(), call + ": " + why);
  }

  static <T> VerbsResult<T> failed(int errno, String call, String why) {
    return VerbsResult.failed(errno, call + ": " + why);
  }

  /**
   * The shape of every destroy, under the lock: the handle must name a live {@code type} (else
   * {@code EINVAL}); an armed destroy fault of {@code kind} answers its errno and leaves the object
   * alive; while {@code busy} it is {@code EBUSY}; otherwise {@code release} gives back what it
   * held and its handle is retired.
   */
  <T> int destroy(
      long handle, Class<T> type, SoftFaults.Kind kind, Predicate<T> busy, Consumer<T> release) {
    return destroy(handle, type, kind, () -> 0, busy, release);
  }

  /**
   * {@link #destroy(long, Class, SoftFaults.Kind, Predicate, Consumer)} with one more fault, asked
   * first once the handle was found live: {@code ruleFault} (an MR's address rule) answers an errno
   * or 0. A call it fails is counted in {@link SoftFaults#destroyCalls} like any other.
   */
  <T> int destroy(
      long handle,
      Class<T> type,
      SoftFaults.Kind kind,
      IntSupplier ruleFault,
      Predicate<T> busy,
      Consumer<T> release) {
    lock.lock();
    try {
      T object = handles.get(handle, type);
      if (object == null) {
        return einval();
      }
      int rule = ruleFault.getAsInt();
      if (rule != 0) {
        faults.countDestroy(kind);
        return rule;
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

  int count(SoftDevice d, Class<?> kind) {
    return handles.countOwned(kind, d);
  }

  static void join(List<Thread> threads) {
    for (Thread t : threads) {
      try {
        t.join(JOIN_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }
}
