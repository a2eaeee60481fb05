package io.orbite.nativebind.verbs.soft;

import static io.orbite.nativebind.verbs.soft.SoftTable.einval;
import static io.orbite.nativebind.verbs.soft.SoftTable.failed;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Verbs.CompChannel;
import io.orbite.nativebind.verbs.Verbs.Context;
import io.orbite.nativebind.verbs.Verbs.Cq;
import io.orbite.nativebind.verbs.Verbs.Wc;
import io.orbite.nativebind.verbs.VerbsResult;
import java.util.concurrent.locks.LockSupport;

/**
 * The verbs of a {@link SoftVerbs} over completion: completion channels, CQs, arming, events and
 * polling. Every call runs under the provider's lock and answers {@code EINVAL} ({@code pollCq}:
 * {@code -EINVAL}) for anything unexpected.
 */
final class SoftCqVerbs extends SoftVerbsGroup {
  /**
   * The live CQs by handle, for {@link #pollCq}'s look without the lock (the handle table is the
   * provider lock's).
   */
  private final java.util.concurrent.ConcurrentHashMap<Long, SoftCq> polled =
      new java.util.concurrent.ConcurrentHashMap<>();

  SoftCqVerbs(SoftTable table) {
    super(table);
  }

  VerbsResult<CompChannel> createCompChannel(Context context) {
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

  int destroyCompChannel(CompChannel channel) {
    return table.destroy(
        channel.handle(),
        SoftChannel.class,
        SoftFaults.Kind.COMP_CHANNEL,
        ch -> ch.cqs > 0,
        ch -> ch.context.channels--);
  }

  VerbsResult<Cq> createCq(Context context, int cqe, CompChannel channel, int compVector) {
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
      if (table.count(c.device, SoftCq.class) >= c.device.spec.attr().maxCq()) {
        return failed(Errno.ENOMEM, "ibv_create_cq", "maxCq reached");
      }
      long h = handles.reserve();
      SoftCq cq = new SoftCq(h, c, ch, cqe, faults);
      handles.put(h, cq);
      polled.put(h, cq);
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

  int destroyCq(Cq cq) {
    return table.destroy(
        cq.handle(),
        SoftCq.class,
        SoftFaults.Kind.CQ,
        q -> !q.users.isEmpty() || q.unacknowledgedEvents(),
        q -> {
          polled.remove(q.handle);
          q.waker = null;
          q.context.cqs--;
          if (q.channel != null) {
            q.channel.cqs--;
          }
        });
  }

  boolean wakeOnCompletion(Cq cq, Runnable waker) {
    lock.lock();
    try {
      SoftCq q = handles.get(cq.handle(), SoftCq.class);
      if (q == null) {
        return false;
      }
      q.waker = waker;
      return true;
    } catch (RuntimeException | Error e) {
      return false;
    } finally {
      lock.unlock();
    }
  }

  int reqNotifyCq(Cq cq, boolean solicitedOnly) {
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

  /**
   * Parks the caller (its blocker the channel) until an event raised on the channel unparks it, the
   * timeout passes or another thread unparks it; then answers whether an event is queued.
   */
  boolean awaitCqEvent(CompChannel channel, long timeoutNanos) {
    SoftChannel ch;
    lock.lock();
    try {
      ch = handles.get(channel.handle(), SoftChannel.class);
      if (ch == null) {
        return false;
      }
      if (!ch.events.isEmpty()) {
        return true;
      }
      ch.waiter = Thread.currentThread();
    } finally {
      lock.unlock();
    }
    LockSupport.parkNanos(ch, timeoutNanos);
    lock.lock();
    try {
      if (ch.waiter == Thread.currentThread()) {
        ch.waiter = null;
      }
      return !ch.events.isEmpty();
    } finally {
      lock.unlock();
    }
  }

  VerbsResult<Cq> getCqEvent(CompChannel channel) {
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

  void ackCqEvents(Cq cq, int events) {
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

  int pollCq(Cq cq, Wc[] out) {
    SoftCq live = polled.get(cq.handle());
    if (live != null && live.held == 0 && out != null && !faults.anyPollFailure()) {
      return 0; // empty and healthy: answered without the provider's lock
    }
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
}
