package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * {@code awaitCqEvent} on the software provider: the caller blocks on the channel until an event
 * raised there, an unpark from another thread (a lane's wake) or its timeout ends the wait, and it
 * answers whether an event is queued, taking none.
 */
class SoftChannelWaitTest {
  private static final long LONG_WAIT = TimeUnit.SECONDS.toNanos(20);

  @Test
  void aWaiterIsWokenByAnEventOrAnUnparkAndOtherwiseTimesOut() throws Exception {
    SoftVerbs v = SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1));
    Verbs.Context ctx = v.openDevice(v.getDeviceList().value().getFirst()).value();
    Verbs.Pd pd = v.allocPd(ctx).value();
    Verbs.CompChannel channel = v.createCompChannel(ctx).value();
    Verbs.Cq cq = v.createCq(ctx, 16, channel, 0).value();
    Verbs.Qp qp = v.createQp(pd, new Verbs.QpInitAttr(cq, cq, 4, 4, 1, 1, 0, true)).value();
    assertEquals(0, v.modifyQp(qp, Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE));
    MemorySegment slot = Arena.ofAuto().allocate(64);
    Verbs.Mr mr = v.regMr(pd, slot, Ibv.ACCESS_LOCAL_WRITE).value();

    assertFalse(v.awaitCqEvent(channel, TimeUnit.MILLISECONDS.toNanos(20)), "nothing queued");

    // An unpark ends the wait at once, with nothing queued.
    AtomicReference<Boolean> unparked = new AtomicReference<>();
    Thread waiter =
        Thread.ofPlatform().start(() -> unparked.set(v.awaitCqEvent(channel, LONG_WAIT)));
    awaitBlockedOnTheChannel(waiter);
    LockSupport.unpark(waiter);
    waiter.join(5_000);
    assertFalse(waiter.isAlive(), "the unpark ended the wait");
    assertEquals(Boolean.FALSE, unparked.get(), "and no event is queued");

    // A completion on the armed CQ raises an event, which ends the wait; the event is left queued.
    assertEquals(0, v.reqNotifyCq(cq, false));
    AtomicReference<Boolean> evented = new AtomicReference<>();
    waiter = Thread.ofPlatform().start(() -> evented.set(v.awaitCqEvent(channel, LONG_WAIT)));
    awaitBlockedOnTheChannel(waiter);
    // A receive posted in ERR is flushed into the CQ at once: a completion.
    assertEquals(
        0,
        v.postRecv(
                qp,
                List.of(new Verbs.RecvWr(7, List.of(new Verbs.Sge(slot.address(), 8, mr.lkey())))))
            .errno());
    waiter.join(5_000);
    assertFalse(waiter.isAlive(), "the event ended the wait");
    assertEquals(Boolean.TRUE, evented.get());
    assertTrue(v.awaitCqEvent(channel, LONG_WAIT), "queued: no wait at all");
    assertEquals(cq.handle(), v.getCqEvent(channel).value().handle(), "the CQ's event, taken");
    v.ackCqEvents(cq, 1);
  }

  /** Waits (at most 5 s) until {@code t} is parked with the channel as its blocker. */
  private static void awaitBlockedOnTheChannel(Thread t) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (!(LockSupport.getBlocker(t) instanceof SoftChannel)) {
      if (System.nanoTime() > end) {
        throw new AssertionError("the waiter never blocked on the channel: " + t.getState());
      }
      Thread.onSpinWait();
    }
  }
}
