package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The table itself: NONE refuses faults; a table serves one provider; rules fire as armed. */
class SoftFaultsTest {
  @Test
  void noneRefusesEveryFault() {
    assertThrows(UnsupportedOperationException.class, () -> SoftFaults.none().withholdCqe(1, 1));
    assertThrows(
        UnsupportedOperationException.class,
        () -> SoftFaults.none().failNextDestroy(SoftFaults.Kind.QP, 5, false));
    assertThrows(UnsupportedOperationException.class, () -> SoftFaults.none().stallWire(1));
    assertThrows(UnsupportedOperationException.class, () -> SoftFaults.none().dropWire(1));
    assertThrows(UnsupportedOperationException.class, () -> SoftFaults.none().nullWire(true));
    assertFalse(SoftFaults.none().nullWire());
    assertEquals(0, SoftFaults.none().destroyFailure(SoftFaults.Kind.QP, 1));
  }

  @Test
  void aDevicesNumaNodeIsWhatTheTableWasToldElseUnknown() {
    SoftFaults f = SoftFaults.create();
    SoftVerbs verbs = SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 2), f);
    java.util.List<io.orbite.nativebind.verbs.Verbs.Device> devices = verbs.getDeviceList().value();
    assertEquals(-1, verbs.numaNode(devices.get(0)));
    f.setNumaNode("soft1", 3);
    assertEquals(-1, verbs.numaNode(devices.get(0)));
    assertEquals(3, verbs.numaNode(devices.get(1)));
    f.setNumaNode("soft1", -1);
    assertEquals(-1, verbs.numaNode(devices.get(1)));
    assertThrows(IllegalArgumentException.class, () -> f.setNumaNode("soft0", -2));
    assertThrows(
        UnsupportedOperationException.class, () -> SoftFaults.none().setNumaNode("soft0", 0));
    assertEquals(
        -1,
        SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1))
            .numaNode(new io.orbite.nativebind.verbs.Verbs.Device(0, "soft0", 0)));
  }

  @Test
  void aTableServesOneProviderOnly() {
    SoftFaults f = SoftFaults.create();
    assertThrows(IllegalStateException.class, () -> f.dropWire(1), "no provider yet");
    SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1), f);
    assertThrows(
        IllegalStateException.class,
        () -> SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1), f));
    assertThrows(IllegalArgumentException.class, () -> f.dropWire(12345), "no such QP");
    assertThrows(IllegalArgumentException.class, () -> f.setPortState("soft9", 1, 4));
  }

  @Test
  void onceFiresOnceAndStickyBindsToTheFirstObjectItHits() {
    SoftFaults f = SoftFaults.create();
    int eio = Errno.EIO.number();
    f.failDestroy(SoftFaults.Kind.MR, 7, eio, false);
    assertEquals(0, f.destroyFailure(SoftFaults.Kind.MW, 7), "another kind");
    assertEquals(eio, f.destroyFailure(SoftFaults.Kind.MR, 7));
    assertEquals(0, f.destroyFailure(SoftFaults.Kind.MR, 7));
    f.failNextDestroy(SoftFaults.Kind.CQ, eio, true);
    assertEquals(eio, f.destroyFailure(SoftFaults.Kind.CQ, 3));
    assertEquals(0, f.destroyFailure(SoftFaults.Kind.CQ, 4), "bound to CQ 3");
    assertEquals(eio, f.destroyFailure(SoftFaults.Kind.CQ, 3));
    f.clearDestroyFaults();
    assertEquals(0, f.destroyFailure(SoftFaults.Kind.CQ, 3));
  }

  /**
   * {@code failPostSendOf}: the next post holding a WR of the opcode is refused at that WR (those
   * before it posted); a post without one leaves the rule armed; once fired it is gone.
   */
  @Test
  void aPostSendOfAnOpcodeIsRefusedAtThatWorkRequestOnly() {
    SoftFaults f = SoftFaults.create();
    SoftVerbs v = SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1), f);
    Verbs.Context ctx = v.openDevice(v.getDeviceList().value().getFirst()).value();
    Verbs.Pd pd = v.allocPd(ctx).value();
    Verbs.Cq cq = v.createCq(ctx, 16, null, 0).value();
    Verbs.Qp qp = v.createQp(pd, new Verbs.QpInitAttr(cq, cq, 8, 4, 1, 1, 0, true)).value();
    assertEquals(0, v.modifyQp(qp, Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE));
    MemorySegment slot = Arena.ofAuto().allocate(64);
    Verbs.Mr mr = v.regMr(pd, slot, Ibv.ACCESS_LOCAL_WRITE).value();
    List<Verbs.Sge> sge = List.of(new Verbs.Sge(slot.address(), 8, mr.lkey()));
    Verbs.SendWr read = Verbs.SendWr.rdma(1, Ibv.WR_RDMA_READ, Ibv.SEND_SIGNALED, sge, 0, 0);
    Verbs.SendWr send = Verbs.SendWr.send(2, Ibv.SEND_SIGNALED, sge);
    f.failPostSendOf(qp.qpNum(), Ibv.WR_SEND, Errno.EIO.number());
    assertEquals(0, v.postSend(qp, List.of(read)).errno(), "no SEND in it: the rule waits");
    Verbs.PostResult refused = v.postSend(qp, List.of(read, send));
    assertEquals(Errno.EIO.number(), refused.errno());
    assertEquals(1, refused.badIndex(), "refused at the SEND, the READ before it posted");
    assertEquals(0, v.postSend(qp, List.of(send)).errno(), "fired once");
    Verbs.Wc[] out = new Verbs.Wc[8];
    assertEquals(3, v.pollCq(cq, out), "the posted WRs (flushed in ERR), not the refused one");
  }

  /**
   * A deregistration failed by an address rule ({@code failDeregAt}) is a destroy call like any
   * other: counted, the MR kept alive, counted again each time it is asked (sticky); a handle that
   * names no live MR is neither failed nor counted.
   */
  @Test
  void aDeregistrationFailedByItsAddressIsCountedAndKeepsTheMr() {
    SoftFaults f = SoftFaults.create();
    SoftVerbs v = SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1), f);
    Verbs.Context ctx = v.openDevice(v.getDeviceList().value().getFirst()).value();
    Verbs.Pd pd = v.allocPd(ctx).value();
    MemorySegment range = Arena.ofAuto().allocate(4096, 4096);
    Verbs.Mr mr = v.regMr(pd, range, Ibv.ACCESS_LOCAL_WRITE).value();
    f.failDeregAt(range.address(), Errno.EIO.number(), true);
    assertEquals(Errno.EIO.number(), v.deregMr(mr));
    assertEquals(1, f.destroyCalls(SoftFaults.Kind.MR), "the refused deregistration is counted");
    assertEquals(Errno.EIO.number(), v.deregMr(mr), "sticky");
    assertEquals(2, f.destroyCalls(SoftFaults.Kind.MR), "each call is counted");
    assertEquals(Errno.EBUSY.number(), v.deallocPd(pd), "the kept MR holds its PD");
    f.clearDestroyFaults();
    assertEquals(0, v.deregMr(mr));
    assertEquals(3, f.destroyCalls(SoftFaults.Kind.MR));
    assertEquals(Errno.EINVAL.number(), v.deregMr(mr), "gone");
    assertEquals(3, f.destroyCalls(SoftFaults.Kind.MR), "a refused handle is not counted");
    assertEquals(0, v.deallocPd(pd));
  }

  @Test
  void aFailedPollTakesNothingAndAFailedDeviceCloseKeepsTheContextAndIsCounted() {
    SoftFaults f = SoftFaults.create();
    SoftVerbs v = SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1), f);
    Verbs.Context ctx = v.openDevice(v.getDeviceList().value().getFirst()).value();
    Verbs.Pd pd = v.allocPd(ctx).value();
    Verbs.Cq cq = v.createCq(ctx, 16, null, 0).value();
    Verbs.Qp qp = v.createQp(pd, new Verbs.QpInitAttr(cq, cq, 4, 4, 1, 1, 0, true)).value();
    assertEquals(0, v.modifyQp(qp, Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE));
    MemorySegment slot = Arena.ofAuto().allocate(64);
    Verbs.Mr mr = v.regMr(pd, slot, Ibv.ACCESS_LOCAL_WRITE).value();
    f.failPoll(qp.qpNum(), Errno.EIO.number());
    // A receive posted in ERR is flushed into the CQ: the failing poll must not take it.
    assertEquals(
        0,
        v.postRecv(
                qp,
                List.of(new Verbs.RecvWr(9, List.of(new Verbs.Sge(slot.address(), 8, mr.lkey())))))
            .errno());
    Verbs.Wc[] out = new Verbs.Wc[4];
    assertEquals(-Errno.EIO.number(), v.pollCq(cq, out));
    assertEquals(-Errno.EIO.number(), v.pollCq(cq, out), "sticky");
    assertThrows(IllegalArgumentException.class, () -> f.failPoll(qp.qpNum(), 0));
    assertThrows(IllegalArgumentException.class, () -> f.failPoll(0xfffffe, Errno.EIO.number()));
    f.clearPollFaults();
    assertEquals(1, v.pollCq(cq, out), "the flushed receive was kept");
    assertEquals(9, out[0].wrId());
    assertEquals(Ibv.WC_WR_FLUSH_ERR, out[0].status());

    assertEquals(0, v.destroyQp(qp));
    assertEquals(0, v.deregMr(mr));
    assertEquals(0, v.destroyCq(cq));
    assertEquals(0, v.deallocPd(pd));
    f.failNextDestroy(SoftFaults.Kind.CONTEXT, Errno.EIO.number(), true);
    assertEquals(Errno.EIO.number(), v.closeDevice(ctx));
    assertEquals(1, f.destroyCalls(SoftFaults.Kind.CONTEXT));
    assertEquals(true, v.queryDevice(ctx).ok(), "the context lives on");
    assertEquals(Errno.EIO.number(), v.closeDevice(ctx), "sticky");
    assertEquals(2, f.destroyCalls(SoftFaults.Kind.CONTEXT), "each call is counted");
    assertEquals(1, f.destroyCalls(SoftFaults.Kind.QP));
    f.clearDestroyFaults();
    assertEquals(0, v.closeDevice(ctx));
    assertEquals(Errno.EINVAL.number(), v.closeDevice(ctx), "gone");
    assertEquals(3, f.destroyCalls(SoftFaults.Kind.CONTEXT), "a refused handle is not counted");
  }
}
