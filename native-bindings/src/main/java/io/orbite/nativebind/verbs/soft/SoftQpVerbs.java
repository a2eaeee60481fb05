package io.orbite.nativebind.verbs.soft;

import static io.orbite.nativebind.verbs.soft.SoftTable.einval;
import static io.orbite.nativebind.verbs.soft.SoftTable.failed;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Verbs.DeviceAttr;
import io.orbite.nativebind.verbs.Verbs.Pd;
import io.orbite.nativebind.verbs.Verbs.PostResult;
import io.orbite.nativebind.verbs.Verbs.Qp;
import io.orbite.nativebind.verbs.Verbs.QpAttr;
import io.orbite.nativebind.verbs.Verbs.QpInitAttr;
import io.orbite.nativebind.verbs.Verbs.RecvWr;
import io.orbite.nativebind.verbs.Verbs.SendWr;
import io.orbite.nativebind.verbs.VerbsResult;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;

/**
 * The verbs of a {@link SoftVerbs} over queue pairs: create (checked against the device's limits),
 * modify and query (the state machine is {@link SoftQp}'s), destroy, and posting. Every call runs
 * under the provider's lock and answers {@code EINVAL} for anything unexpected.
 */
final class SoftQpVerbs extends SoftVerbsGroup {
  // QP numbers are unique in this process (24 bits, from 0x100), whichever provider made them.
  private static final AtomicInteger QP_NUMBERS = new AtomicInteger(0xff);

  SoftQpVerbs(SoftTable table) {
    super(table);
  }

  VerbsResult<Qp> createQp(Pd pd, QpInitAttr attr) {
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

  int modifyQp(Qp qp, QpAttr attr, int attrMask) {
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

  VerbsResult<QpAttr> queryQp(Qp qp, int attrMask) {
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

  int destroyQp(Qp qp) {
    List<SoftQp> destroyed = new ArrayList<>(1);
    int r =
        table.destroy(
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
    destroyed.forEach(q -> q.requester.join(SoftTable.JOIN_MILLIS));
    return r;
  }

  PostResult postSend(Qp qp, List<SendWr> wrs) {
    return post(qp, wrs, SoftQp::postSend);
  }

  PostResult postRecv(Qp qp, List<RecvWr> wrs) {
    return post(qp, wrs, SoftQp::postRecv);
  }

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

  private static int nextQpNum() {
    while (true) {
      int n = QP_NUMBERS.incrementAndGet() & 0xffffff;
      if (n > 1) {
        return n;
      }
    }
  }
}
