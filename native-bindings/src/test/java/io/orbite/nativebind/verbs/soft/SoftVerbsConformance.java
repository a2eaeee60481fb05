package io.orbite.nativebind.verbs.soft;

import static io.orbite.nativebind.verbs.VerbsEnd.read;
import static io.orbite.nativebind.verbs.VerbsEnd.sge;
import static io.orbite.nativebind.verbs.VerbsEnd.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.ActivePeer;
import io.orbite.nativebind.verbs.ConformancePeer;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.RcConformance;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite against {@link SoftVerbs}: every provider-agnostic test of {@link
 * RcConformance} (inherited), and here what only the software provider promises, with a {@link
 * SoftLocalEnd} (a {@code SoftVerbs} with a fault table) as the local end and a {@link
 * ConformancePeer} that the subclass opens (in this JVM, in another process). After each test no
 * {@code soft-} thread may remain.
 *
 * <p><b>Which tests live here, and why not in the base.</b> Each asserts a choice of the soft
 * provider that a real HCA need not share, or needs a fault only it can inject:
 *
 * <ul>
 *   <li>its device table, ports and GIDs (the GID encodes the responder's address; {@link
 *       SoftFabric} rails);
 *   <li>what needs {@link SoftFaults} to hold the wire still: inline data overwritten while the WR
 *       waits, the ERR flush order of sends then receives, the exact send queue capacity, and the
 *       fault tests themselves (withheld CQEs, failed destroys and posts, interrupted copies, port
 *       down, dropped and stalled wires, the null wire);
 *   <li>exact limits a provider may round up: {@code maxInlineData} 64, {@code maxSendWr} 4 and
 *       {@code maxSendSge} 4 refused at the first WR past them ({@code EINVAL}/{@code ENOMEM});
 *   <li>answers beyond the IBA and the kernel: no byte of a too-small receive written, an lkey
 *       distinct from the rkey, {@code EBUSY} for an MR with a bound window, a CQ with an
 *       unacknowledged event or a context with objects on it (libibverbs waits for the events, and
 *       closes a context with all it holds), a second LOCAL_INV failing {@code WC_MW_BIND_ERR}, a
 *       bind whose new rkey changes the key's index, {@code EINVAL} for a post in the wrong state,
 *       for RNR retries changed in RTS, for a GID that names no responder and for every handle
 *       after its destroy, a completion channel without a descriptor, CQ overflow and its async
 *       events, a responder that refuses a QP not connected back to the sender (an RC packet does
 *       not carry its source QP), and {@code WC_REM_OP_ERR} for a send with invalidate of an MR's
 *       key.
 * </ul>
 *
 * Each of them runs exactly as it did before the suite was split; where the feature is one the base
 * covers, the base holds a portable test of it too.
 */
abstract class SoftVerbsConformance extends RcConformance<SoftLocalEnd> {
  private static final int EINVAL = Errno.EINVAL.number();
  private static final int EBUSY = Errno.EBUSY.number();
  private static final int EIO = Errno.EIO.number();
  private static final int SIGNALED = Ibv.SEND_SIGNALED;

  /** The soft responder checks that a SEND fits before it writes a byte of the receive. */
  @Override
  protected boolean failedReceiveLeftUntouched() {
    return true;
  }

  /** The IPv4 address the local device binds. */
  protected String localAddress() {
    return "127.0.0.1";
  }

  @Override
  protected SoftLocalEnd openLocal() {
    return new SoftLocalEnd(localAddress());
  }

  @Override
  protected void afterClose() {
    assertNoSoftThreads();
  }

  /** Every {@code soft-} thread ends within 5 s of everything being closed. */
  static void assertNoSoftThreads() {
    long deadline = System.nanoTime() + SoftLocalEnd.WAIT_NANOS;
    List<String> alive = softThreads();
    while (!alive.isEmpty() && System.nanoTime() < deadline) {
      SoftLocalEnd.pause();
      alive = softThreads();
    }
    assertEquals(List.of(), alive, "soft threads left after closing everything");
  }

  static List<String> softThreads() {
    List<String> names = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive() && t.getName().startsWith("soft-")) {
        names.add(t.getName());
      }
    }
    return names;
  }

  // ------------------------------------------------------------------ devices, ports, GIDs

  @Test
  void theDeviceTableAnswersItsAttributesPortsAndAGidThatNamesTheResponder() throws IOException {
    List<Verbs.Device> devices = local.verbs.getDeviceList().value();
    assertEquals(1, devices.size());
    assertEquals("soft0", devices.get(0).name());
    assertEquals("soft", local.verbs.provider());
    Verbs.DeviceAttr attr = local.verbs.queryDevice(local.context).value();
    assertEquals(SoftFabric.defaultAttr(devices.get(0).guid(), 1), attr);
    assertEquals(devices.get(0).guid(), attr.nodeGuid());
    Verbs.PortAttr port = local.verbs.queryPort(local.context, 1).value();
    assertEquals(Ibv.PORT_ACTIVE, port.state());
    assertEquals(SoftFabric.WIDTH_4X, port.activeWidth());
    assertEquals(SoftFabric.SPEED_EDR, port.activeSpeed());
    assertEquals(Ibv.LINK_LAYER_ETHERNET, port.linkLayer());
    assertEquals(EINVAL, local.verbs.queryPort(local.context, 2).errno());
    assertEquals(EINVAL, local.verbs.queryPort(local.context, 0).errno());
    assertEquals(
        Verbs.Gid.ZERO,
        local.verbs.queryGid(local.context, 1, 1).value(),
        "index 1 starts invalid");
    assertEquals(EINVAL, local.verbs.queryGid(local.context, 1, port.gidTblLen()).errno());

    byte[] raw = local.gid().bytes();
    InetSocketAddress at = SoftGid.decode(local.gid()).orElseThrow();
    assertEquals(localAddress(), at.getAddress().getHostAddress());
    assertEquals(((raw[0] & 0xff) << 8) | (raw[1] & 0xff), at.getPort());
    assertNotEquals(0, at.getPort());
    for (int i = 2; i < 10; i++) {
      assertEquals(0, raw[i], "GID byte " + i);
    }
    assertEquals((byte) 0xff, raw[10]);
    assertEquals((byte) 0xff, raw[11]);
    assertArrayEquals(at.getAddress().getAddress(), slice(raw, 12, 4));
    try (Socket s = new Socket()) {
      s.connect(at, 5000);
      assertTrue(s.isConnected(), "the responder listens where the GID says");
    }
  }

  @Test
  void eachDeviceIsARailWithItsOwnResponderAndPorts() {
    SoftFabric fabric =
        SoftFabric.of(
            List.of(
                SoftFabric.DeviceSpec.of("soft0", localAddress(), 11),
                SoftFabric.DeviceSpec.of(
                    "soft1",
                    localAddress(),
                    12,
                    List.of(
                        SoftFabric.PortSpec.active(),
                        new SoftFabric.PortSpec(
                            Ibv.PORT_DOWN,
                            SoftFabric.WIDTH_4X,
                            SoftFabric.SPEED_EDR,
                            Ibv.MTU_1024)))));
    SoftVerbs v = SoftVerbs.create(fabric);
    List<Verbs.Device> devices = v.getDeviceList().value();
    assertEquals(List.of("soft0", "soft1"), devices.stream().map(Verbs.Device::name).toList());
    assertEquals(List.of(11L, 12L), devices.stream().map(Verbs.Device::guid).toList());
    Verbs.Context c0 = v.openDevice(devices.get(0)).value();
    Verbs.Context c1 = v.openDevice(devices.get(1)).value();
    assertEquals(2, v.queryDevice(c1).value().physPortCnt());
    assertEquals(Ibv.PORT_ACTIVE, v.queryPort(c1, 1).value().state());
    assertEquals(Ibv.PORT_DOWN, v.queryPort(c1, 2).value().state());
    assertEquals(Ibv.MTU_1024, v.queryPort(c1, 2).value().activeMtu());
    Verbs.Gid g0 = v.queryGid(c0, 1, 0).value();
    Verbs.Gid g1 = v.queryGid(c1, 2, 0).value();
    assertEquals(g1, v.queryGid(c1, 1, 0).value(), "index 0 of every port");
    assertNotEquals(
        SoftGid.decode(g0).orElseThrow().getPort(), SoftGid.decode(g1).orElseThrow().getPort());
    assertOk(v.closeDevice(c0));
    assertOk(v.closeDevice(c1));
  }

  // ------------------------------------------------------------------ READ, WRITE, SEND

  @Test
  void inlineDataIsTakenAtPostTimeAndBoundedByMaxInlineData() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(128, LOCAL, (byte) 0);
    byte[] posted = pattern(32, 7);
    local.put(src, 0, posted);
    local.faults.stallWire(p.qp().qpNum());
    local.post(
        p.qp(), write(1, SIGNALED | Ibv.SEND_INLINE, sge(src, 0, 32), dst.addr() + 8, dst.rkey()));
    local.put(src, 0, pattern(32, 99));
    local.faults.releaseWire(p.qp().qpNum());
    assertEquals(List.of(wc(1, OK)), summary(local.await(p.cq(), 1)));
    assertArrayEquals(guarded(256, 8, posted), peer.read(dst));
    Verbs.PostResult r =
        local.verbs.postSend(
            p.qp(),
            List.of(write(2, SIGNALED | Ibv.SEND_INLINE, sge(src, 0, 65), dst.addr(), dst.rkey())));
    assertPostFailed(r, Errno.EINVAL, 0);
  }

  // ------------------------------------------------------------------ memory, keys and windows

  /**
   * Stricter than the portable test of keys and SGEs it inherits (which allows lkey == rkey, as
   * mlx5 hands out): the soft provider never hands out a key twice, lkeys and rkeys included.
   */
  @Test
  void keysAreDistinctAndNonZero() {
    Set<Integer> keys = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      Verbs.Mr mr = local.buffer(64, LOCAL, (byte) 0);
      assertNotEquals(0, mr.lkey());
      assertNotEquals(0, mr.rkey());
      assertTrue(keys.add(mr.lkey()) && keys.add(mr.rkey()), "a key handed out twice");
    }
  }

  @Test
  void aLocalBindAndInvalidateCompleteAndASecondInvalidateFails() {
    Pair p = pair();
    Verbs.Mr mr = local.buffer(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    Verbs.Mw mw = local.mw();
    int rkey = Ibv.incRkey(mw.rkey());
    Verbs.Mr src = local.buffer(16, LOCAL, (byte) 0);
    ConformancePeer.Buffer dst = peer.register(64, REMOTE_RW, GUARD);
    local.post(
        p.qp(),
        Verbs.SendWr.bindMw(
            1,
            SIGNALED,
            new Verbs.MwBind(mw, rkey, mr, mr.addr() + 64, 128, Ibv.ACCESS_REMOTE_WRITE)));
    assertEquals(List.of(wc(1, OK)), summary(local.await(p.cq(), 1)));
    assertEquals(EBUSY, local.verbs.deregMr(mr), "an MR with a bound MW");
    local.post(
        p.qp(),
        new Verbs.SendWr(2, Ibv.WR_LOCAL_INV, SIGNALED, List.of(), 0, 0, rkey, null),
        new Verbs.SendWr(3, Ibv.WR_LOCAL_INV, SIGNALED, List.of(), 0, 0, rkey, null),
        write(4, SIGNALED, sge(src, 0, 16), dst.addr(), dst.rkey()));
    List<Verbs.Wc> got = local.await(p.cq(), 3);
    assertEquals(List.of(wc(2, OK), wc(3, Ibv.WC_MW_BIND_ERR), wc(4, FLUSH)), summary(got));
    assertEquals(Ibv.WC_LOCAL_INV, got.get(0).opcode());
    assertArrayEquals(guards(64), peer.read(dst));
    assertOk(local.verbs.deregMr(mr));
  }

  @Test
  void aBindThatBreaksARuleFailsMwBindErrAndErrsTheQp() {
    Verbs.Mr noBind = local.buffer(4096, LOCAL, GUARD);
    Verbs.Mr mr = local.buffer(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    Verbs.Mw mw = local.mw();
    int good = Ibv.incRkey(mw.rkey());
    List<Verbs.MwBind> broken =
        List.of(
            new Verbs.MwBind(mw, good, noBind, noBind.addr(), 128, Ibv.ACCESS_REMOTE_WRITE),
            new Verbs.MwBind(mw, good ^ 0x100, mr, mr.addr(), 128, Ibv.ACCESS_REMOTE_WRITE),
            new Verbs.MwBind(mw, good, mr, mr.addr() + 4096 - 64, 128, Ibv.ACCESS_REMOTE_WRITE));
    for (Verbs.MwBind bind : broken) {
      Pair p = pair();
      local.post(
          p.qp(), Verbs.SendWr.bindMw(1, SIGNALED, bind), Verbs.SendWr.bindMw(2, SIGNALED, bind));
      assertEquals(
          List.of(wc(1, Ibv.WC_MW_BIND_ERR), wc(2, FLUSH)), summary(local.await(p.cq(), 2)));
      assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    }
    assertOk(local.verbs.deregMr(mr));
    Verbs.Mr mr2 = local.buffer(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    Pair p = pair();
    local.post(
        p.qp(),
        Verbs.SendWr.bindMw(
            1, SIGNALED, new Verbs.MwBind(mw, good, mr2, mr2.addr(), 128, Ibv.ACCESS_REMOTE_READ)));
    assertEquals(List.of(wc(1, OK)), summary(local.await(p.cq(), 1)));
    assertEquals(EBUSY, local.verbs.deregMr(mr2));
    assertOk(local.verbs.deallocMw(mw));
    assertOk(local.verbs.deregMr(mr2));
  }

  // ------------------------------------------------------------------ queues and completions

  @Test
  void errFlushesEverySendThenEveryReceiveInOrderAndPostsInErrFlush() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    Verbs.Mr inbox = local.buffer(1024, LOCAL, GUARD);
    local.faults.stallWire(p.qp().qpNum());
    for (int i = 1; i <= 3; i++) {
      writeFrom(p, i, pattern(64, i), dst.addr() + 64L * i, dst.rkey(), SIGNALED);
    }
    assertTrue(postRecv(p.qp(), 11, inbox, 0).posted());
    assertTrue(postRecv(p.qp(), 12, inbox, 64).posted());
    assertOk(local.verbs.modifyQp(p.qp(), Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE));
    assertEquals(
        List.of(wc(1, FLUSH), wc(2, FLUSH), wc(3, FLUSH), wc(11, FLUSH), wc(12, FLUSH)),
        summary(local.await(p.cq(), 5)));
    local.faults.releaseWire(p.qp().qpNum());
    writeFrom(p, 4, pattern(64, 4), dst.addr(), dst.rkey(), 0);
    assertTrue(postRecv(p.qp(), 13, inbox, 128).posted());
    assertEquals(List.of(wc(4, FLUSH), wc(13, FLUSH)), summary(local.await(p.cq(), 2)));
    assertArrayEquals(guards(1024), peer.read(dst));
    assertArrayEquals(guards(1024), local.bytes(inbox));
  }

  @Test
  void aFullSendQueueRefusesEnomemAtTheFirstWrThatDoesNotFit() {
    Pair p = pair(4, false, 256, 7);
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(1024, LOCAL, (byte) 0);
    byte[] payload = pattern(1024, 10);
    local.put(src, 0, payload);
    local.faults.stallWire(p.qp().qpNum());
    List<Verbs.SendWr> six = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      six.add(write(i, SIGNALED, sge(src, 64 * i, 64), dst.addr() + 64L * i, dst.rkey()));
    }
    assertPostFailed(local.verbs.postSend(p.qp(), six), Errno.ENOMEM, 4);
    assertArrayEquals(guards(1024), peer.read(dst), "stalled: nothing moved yet");
    local.faults.releaseWire(p.qp().qpNum());
    assertEquals(
        List.of(wc(0, OK), wc(1, OK), wc(2, OK), wc(3, OK)), summary(local.await(p.cq(), 4)));
    assertArrayEquals(guarded(1024, 0, slice(payload, 0, 256)), peer.read(dst));
    List<Verbs.SendWr> four = new ArrayList<>();
    for (int i = 4; i < 8; i++) {
      four.add(write(i, SIGNALED, sge(src, 64 * i, 64), dst.addr() + 64L * i, dst.rkey()));
    }
    assertEquals(Verbs.PostResult.ALL, local.verbs.postSend(p.qp(), four), "the slots are free");
    assertEquals(4, local.await(p.cq(), 4).size());
    assertArrayEquals(guarded(1024, 0, slice(payload, 0, 512)), peer.read(dst));
  }

  @Test
  void tooManySgesIsEinvalAtThatWrAndTheEarlierOnesArePosted() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(512, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(512, LOCAL, (byte) 0);
    byte[] payload = pattern(512, 11);
    local.put(src, 0, payload);
    List<Verbs.Sge> five = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      five.add(sge(src, 100 + 8 * i, 8));
    }
    Verbs.PostResult r =
        local.verbs.postSend(
            p.qp(),
            List.of(
                write(0, SIGNALED, sge(src, 0, 64), dst.addr(), dst.rkey()),
                Verbs.SendWr.rdma(
                    1, Ibv.WR_RDMA_WRITE, SIGNALED, five, dst.addr() + 100, dst.rkey()),
                write(2, SIGNALED, sge(src, 200, 64), dst.addr() + 200, dst.rkey())));
    assertPostFailed(r, Errno.EINVAL, 1);
    assertEquals(List.of(wc(0, OK)), summary(local.await(p.cq(), 1)));
    assertArrayEquals(guarded(512, 0, slice(payload, 0, 64)), peer.read(dst));
    Verbs.Mr inbox = local.buffer(512, LOCAL, GUARD);
    List<Verbs.Sge> fiveIn = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      fiveIn.add(sge(inbox, 8 * i, 8));
    }
    assertPostFailed(
        local.verbs.postRecv(p.qp(), List.of(new Verbs.RecvWr(1, fiveIn))), Errno.EINVAL, 0);
  }

  @Test
  void aCqOverflowErrsTheCqAndTheQpsUsingIt() {
    Pair p = pair(64, false, 2, 7);
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    byte[] expected = guards(256);
    for (int i = 1; i <= 3; i++) {
      byte[] payload = pattern(64, i);
      writeFrom(p, i, payload, dst.addr() + 64L * i, dst.rkey(), SIGNALED);
      System.arraycopy(payload, 0, expected, 64 * i, 64);
    }
    assertEquals(0, local.verbs.awaitAsyncEvent(local.context, 0), "no event pending yet");
    Verbs.AsyncEvent cqErr = awaitAsyncEvent();
    assertEquals(new Verbs.AsyncEvent(Ibv.EVENT_CQ_ERR, p.cq().handle()), cqErr);
    assertEquals(new Verbs.AsyncEvent(Ibv.EVENT_QP_FATAL, p.qp().handle()), awaitAsyncEvent());
    Verbs.Wc[] out = new Verbs.Wc[4];
    assertEquals(2, local.verbs.pollCq(p.cq(), out));
    assertEquals(List.of(wc(1, OK), wc(2, OK)), summary(List.of(out[0], out[1])));
    assertEquals(-Errno.EOVERFLOW.number(), local.verbs.pollCq(p.cq(), out));
    assertEquals(-Errno.EOVERFLOW.number(), local.verbs.pollCq(p.cq(), out));
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    assertArrayEquals(expected, peer.read(dst), "the third WRITE happened; its CQE was lost");
  }

  /** Waits for the next async event through {@code awaitAsyncEvent}, then takes and acks it. */
  private Verbs.AsyncEvent awaitAsyncEvent() {
    int ready =
        local.verbs.awaitAsyncEvent(
            local.context,
            (int) java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(SoftLocalEnd.WAIT_NANOS));
    assertEquals(1, ready, "an async event pending within 5 s");
    VerbsResult<Verbs.AsyncEvent> e = local.verbs.getAsyncEvent(local.context);
    assertTrue(e.ok(), e::describe);
    local.verbs.ackAsyncEvent(e.value());
    return e.value();
  }

  @Test
  void aCompletionChannelQueuesOneEventPerArmingAndHoldsTheCqUntilAcked() {
    Verbs.CompChannel ch = local.channel();
    assertEquals(-1, ch.fd());
    Verbs.Cq cq = local.cq(16, ch);
    Pair p = pairOn(cq, 64, false, 7);
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    assertEquals(Errno.EAGAIN.number(), local.verbs.getCqEvent(ch).errno());
    assertOk(local.verbs.reqNotifyCq(cq, false));
    byte[] payload = pattern(64, 1);
    assertEquals(OK, writeStatus(p, payload, dst.addr(), dst.rkey()));
    assertEquals(cq.handle(), local.verbs.getCqEvent(ch).value().handle());
    assertEquals(Errno.EAGAIN.number(), local.verbs.getCqEvent(ch).errno());
    assertEquals(OK, writeStatus(p, payload, dst.addr() + 64, dst.rkey()));
    assertEquals(Errno.EAGAIN.number(), local.verbs.getCqEvent(ch).errno(), "armed once only");
    assertArrayEquals(guarded(256, 0, concat(payload, payload)), peer.read(dst));
    assertOk(local.verbs.destroyQp(p.qp()));
    assertEquals(EBUSY, local.verbs.destroyCq(cq), "an unacknowledged event");
    assertEquals(EBUSY, local.verbs.destroyCompChannel(ch), "a CQ on the channel");
    local.verbs.ackCqEvents(cq, 1);
    assertOk(local.verbs.destroyCq(cq));
    assertOk(local.verbs.destroyCompChannel(ch));
  }

  // ------------------------------------------------------------------ QP state machine

  @Test
  void theQpStateMachineRefusesIllegalTransitionsAndPostsInTheWrongState() {
    Verbs.Cq cq = local.cq(16);
    Verbs.Qp qp = local.rawQp(SoftLocalEnd.caps(cq, 8, false));
    Verbs.Mr mr = local.buffer(256, LOCAL, GUARD);
    List<Verbs.SendWr> one = List.of(write(1, SIGNALED, sge(mr, 0, 8), mr.addr(), mr.rkey()));
    List<Verbs.RecvWr> recv = List.of(new Verbs.RecvWr(5, List.of(sge(mr, 0, 64))));
    Verbs.Gid gid = peer.gid();
    assertEquals(Ibv.QPS_RESET, local.state(qp));
    assertPostFailed(local.verbs.postSend(qp, one), Errno.EINVAL, 0);
    assertPostFailed(local.verbs.postRecv(qp, recv), Errno.EINVAL, 0);
    assertEquals(EINVAL, modify(qp, SoftLocalEnd.rtrAttr(gid, 1), SoftLocalEnd.RTR_MASK));
    assertEquals(EINVAL, modify(qp, SoftLocalEnd.rtsAttr(7), SoftLocalEnd.RTS_MASK));
    assertEquals(EINVAL, modify(qp, Verbs.QpAttr.state(Ibv.QPS_INIT), Ibv.QP_STATE), "no port");
    assertEquals(EINVAL, modify(qp, Verbs.QpAttr.state(Ibv.QPS_SQD), Ibv.QP_STATE));
    assertEquals(Ibv.QPS_RESET, local.state(qp));

    SoftLocalEnd.toInit(local.verbs, qp);
    assertEquals(Ibv.QPS_INIT, local.state(qp));
    assertPostFailed(local.verbs.postSend(qp, one), Errno.EINVAL, 0);
    assertEquals(Verbs.PostResult.ALL, local.verbs.postRecv(qp, recv), "receives post in INIT");
    assertEquals(EINVAL, modify(qp, SoftLocalEnd.rtsAttr(7), SoftLocalEnd.RTS_MASK));
    assertEquals(
        EINVAL,
        modify(qp, SoftLocalEnd.rtrAttr(gid, 1), Ibv.QP_STATE | Ibv.QP_DEST_QPN),
        "RTR without an AV");
    assertEquals(
        EINVAL,
        modify(qp, SoftLocalEnd.rtrAttr(Verbs.Gid.ZERO, 1), SoftLocalEnd.RTR_MASK),
        "RTR to a GID that names no responder");
    assertOk(modify(qp, SoftLocalEnd.rtrAttr(gid, 0x4242), SoftLocalEnd.RTR_MASK));
    assertEquals(Ibv.QPS_RTR, local.state(qp));
    assertPostFailed(local.verbs.postSend(qp, one), Errno.EINVAL, 0);
    assertEquals(EINVAL, modify(qp, Verbs.QpAttr.state(Ibv.QPS_INIT), Ibv.QP_STATE));
    assertOk(modify(qp, SoftLocalEnd.rtsAttr(3), SoftLocalEnd.RTS_MASK));
    assertEquals(EINVAL, modify(qp, SoftLocalEnd.rtrAttr(gid, 1), SoftLocalEnd.RTR_MASK));
    assertOk(modify(qp, SoftLocalEnd.rtsAttr(5), Ibv.QP_STATE | Ibv.QP_RNR_RETRY));
    Verbs.QpAttr q = local.verbs.queryQp(qp, Ibv.QP_STATE).value();
    assertEquals(Ibv.QPS_RTS, q.qpState());
    assertEquals(0x4242, q.destQpNum());
    assertEquals(gid, q.av().dgid());
    assertEquals(5, q.rnrRetry());
    assertEquals(17, q.timeout());

    assertOk(modify(qp, Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE));
    assertEquals(List.of(wc(5, FLUSH)), summary(local.await(cq, 1)), "the INIT receive flushed");
    assertEquals(EINVAL, modify(qp, SoftLocalEnd.rtsAttr(7), SoftLocalEnd.RTS_MASK));
    assertEquals(EINVAL, modify(qp, Verbs.QpAttr.state(Ibv.QPS_INIT), Ibv.QP_STATE));
    assertOk(modify(qp, Verbs.QpAttr.state(Ibv.QPS_RESET), Ibv.QP_STATE));
    assertEquals(Ibv.QPS_RESET, local.state(qp));
    SoftLocalEnd.toInit(local.verbs, qp);
    assertEquals(Ibv.QPS_INIT, local.state(qp));
  }

  // ------------------------------------------------------------------ destroy order

  @Test
  void destroysRefuseEbusyInTheWrongOrderAndDeadHandlesAreEinval() {
    Verbs verbs = local.verbs;
    Verbs.Context c2 = verbs.openDevice(verbs.getDeviceList().value().get(0)).value();
    try (Arena arena = Arena.ofShared()) {
      Verbs.Pd pd = verbs.allocPd(c2).value();
      Verbs.Mr mr = verbs.regMr(pd, arena.allocate(4096), LOCAL | Ibv.ACCESS_MW_BIND).value();
      Verbs.Mw mw = verbs.allocMw(pd, Ibv.MW_TYPE_2).value();
      Verbs.CompChannel ch = verbs.createCompChannel(c2).value();
      Verbs.Cq cq = verbs.createCq(c2, 8, ch, 0).value();
      Verbs.Qp qp = verbs.createQp(pd, SoftLocalEnd.caps(cq, 8, false)).value();
      SoftLocalEnd.toInit(verbs, qp);
      int peerQpn = peer.createQp();
      SoftLocalEnd.toRts(verbs, qp, peer.gid(), peerQpn, 7);
      int rkey = Ibv.incRkey(mw.rkey());
      assertTrue(
          verbs
              .postSend(
                  qp,
                  List.of(
                      Verbs.SendWr.bindMw(
                          1,
                          SIGNALED,
                          new Verbs.MwBind(mw, rkey, mr, mr.addr(), 64, Ibv.ACCESS_REMOTE_WRITE))))
              .posted());
      assertEquals(List.of(wc(1, OK)), summary(SoftLocalEnd.await(verbs, cq, 1)));

      assertEquals(EBUSY, verbs.closeDevice(c2), "PDs, CQs and a channel on the context");
      assertEquals(EBUSY, verbs.deallocPd(pd), "an MR, an MW and a QP on the PD");
      assertEquals(EBUSY, verbs.destroyCq(cq), "a QP using the CQ");
      assertEquals(EBUSY, verbs.destroyCompChannel(ch), "a CQ on the channel");
      assertEquals(EBUSY, verbs.deregMr(mr), "an MW bound to the MR");

      assertOk(verbs.destroyQp(qp));
      assertEquals(EINVAL, verbs.destroyQp(qp));
      assertEquals(EINVAL, verbs.modifyQp(qp, Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE));
      assertEquals(EINVAL, verbs.queryQp(qp, 0).errno());
      assertEquals(new Verbs.PostResult(EINVAL, 0), verbs.postSend(qp, List.of()));
      assertEquals(EBUSY, verbs.deallocPd(pd), "the MR and the MW");
      assertOk(verbs.destroyCq(cq));
      assertEquals(-EINVAL, verbs.pollCq(cq, new Verbs.Wc[1]));
      assertEquals(EINVAL, verbs.reqNotifyCq(cq, false));
      assertEquals(EINVAL, verbs.destroyCq(cq));
      assertOk(verbs.destroyCompChannel(ch));
      assertEquals(EINVAL, verbs.getCqEvent(ch).errno());
      assertEquals(EINVAL, verbs.destroyCompChannel(ch));
      assertOk(verbs.deregMr(mr), "destroying the QP unbound the MW bound on it");
      assertEquals(EINVAL, verbs.deregMr(mr));
      assertOk(verbs.deallocMw(mw));
      assertEquals(EINVAL, verbs.deallocMw(mw));
      assertOk(verbs.deallocPd(pd));
      assertEquals(EINVAL, verbs.deallocPd(pd));
      assertEquals(EINVAL, verbs.regMr(pd, arena.allocate(64), LOCAL).errno());
      assertEquals(EINVAL, verbs.allocMw(pd, Ibv.MW_TYPE_2).errno());
    }
    assertOk(verbs.closeDevice(c2));
    assertEquals(EINVAL, verbs.queryDevice(c2).errno());
    assertEquals(EINVAL, verbs.allocPd(c2).errno());
    assertEquals(EINVAL, verbs.closeDevice(c2));
    assertTrue(verbs.queryDevice(local.context).ok(), "the other context stays open");
    assertEquals(EINVAL, verbs.createQp(local.pd, null).errno(), "null is refused, not thrown");
    assertEquals(
        Errno.EOPNOTSUPP.number(), verbs.regDmabufMr(local.pd, 0, 4096, 0, 3, LOCAL).errno());
  }

  // ------------------------------------------------------------------ responders

  /**
   * This end as the responder: the peer WRITEs past the end of a local MR. Nothing lands, the
   * peer's WR fails {@code WC_REM_ACCESS_ERR}, and this end's QP goes to ERR with {@code
   * EVENT_QP_ACCESS_ERR} naming it on its context, as an HCA reports a responder-side violation.
   */
  @Test
  void aRefusedAccessAtThisEndErrsItsQpAndQueuesQpAccessErrNamingIt() {
    Pair p = pair();
    Verbs.Mr target = local.buffer(4096, REMOTE_RW, GUARD);
    ConformancePeer.Buffer src = peer.register(4096, LOCAL, (byte) 1);
    Verbs.Wc refused =
        ((ActivePeer) peer)
            .post(
                p.peerQpn(), Ibv.WR_RDMA_WRITE, src, 0, 64, target.addr() + 4090, target.rkey(), 0);
    assertEquals(Ibv.WC_REM_ACCESS_ERR, refused.status(), refused::toString);
    assertArrayEquals(guards(4096), local.bytes(target), "nothing of a refused WRITE lands");
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    assertEquals(new Verbs.AsyncEvent(Ibv.EVENT_QP_ACCESS_ERR, p.qp().handle()), awaitAsyncEvent());
  }

  /**
   * A receive whose SGE names no MR of this end: the SEND that lands on it fails at both ends
   * ({@code WC_REM_OP_ERR} at the sender, {@code WC_LOC_PROT_ERR} at the receiver), and an inline
   * WR whose SGE does not resolve is refused at post ({@code EINVAL}), nothing posted.
   */
  @Test
  void unresolvableSgesFailTheReceiveAndRefuseAnInlinePost() {
    Pair p = pair();
    Verbs.Mr inbox = local.buffer(256, LOCAL, GUARD);
    Verbs.PostResult posted =
        local.verbs.postRecv(
            p.qp(),
            List.of(
                new Verbs.RecvWr(
                    5, List.of(new Verbs.Sge(inbox.addr(), 64, inbox.lkey() ^ 0x5a5a00)))));
    assertTrue(posted.posted(), posted::toString);
    ConformancePeer.Buffer src = peer.register(256, LOCAL, (byte) 3);
    Verbs.Wc sent = ((ActivePeer) peer).post(p.peerQpn(), Ibv.WR_SEND, src, 0, 32, 0, 0, 0);
    assertEquals(Ibv.WC_REM_OP_ERR, sent.status(), sent::toString);
    List<Verbs.Wc> got = local.await(p.cq(), 1);
    assertEquals(5, got.getFirst().wrId());
    assertEquals(Ibv.WC_LOC_PROT_ERR, got.getFirst().status(), got.getFirst()::toString);
    assertArrayEquals(guards(256), local.bytes(inbox), "nothing lands through a bad SGE");

    Pair q = pair();
    Verbs.Mr src2 = local.buffer(64, LOCAL, (byte) 1);
    Verbs.PostResult inline =
        local.verbs.postSend(
            q.qp(),
            List.of(
                Verbs.SendWr.send(
                    9,
                    SIGNALED | Ibv.SEND_INLINE,
                    List.of(new Verbs.Sge(src2.addr(), 32, src2.lkey() ^ 0x5a5a00)))));
    assertPostFailed(inline, Errno.EINVAL, 0);
  }

  @Test
  void theResponderServesOnlyAnRtrOrRtsQpConnectedBackToTheSender() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    Verbs.Cq cq = local.cq(16);
    Verbs.Qp stranger = local.qp(SoftLocalEnd.caps(cq, 8, false));
    SoftLocalEnd.toRts(local.verbs, stranger, peer.gid(), p.peerQpn(), 7);
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 1);
    local.post(stranger, write(1, SIGNALED, sge(src, 0, 64), dst.addr(), dst.rkey()));
    assertEquals(
        List.of(wc(1, Ibv.WC_RETRY_EXC_ERR)),
        summary(local.await(cq, 1)),
        "the peer QP is connected to another QP");
    int notReady = peer.createQp();
    Verbs.Qp early = local.qp(SoftLocalEnd.caps(cq, 8, false));
    SoftLocalEnd.toRts(local.verbs, early, peer.gid(), notReady, 7);
    local.post(early, write(2, SIGNALED, sge(src, 0, 64), dst.addr(), dst.rkey()));
    assertEquals(
        List.of(wc(2, Ibv.WC_RETRY_EXC_ERR)), summary(local.await(cq, 1)), "the peer QP is INIT");
    assertArrayEquals(guards(256), peer.read(dst));
    assertEquals(
        OK, writeStatus(p, pattern(64, 2), dst.addr(), dst.rkey()), "the pair still works");
  }

  @Test
  void aSendWithInvalidateOfAKeyThatIsNoWindowOfTheTargetFailsRemOpErr() {
    Pair p = pair();
    ConformancePeer.Buffer inbox = peer.register(256, LOCAL, GUARD);
    peer.postRecv(p.peerQpn(), 41, inbox, 0, 128);
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 1);
    local.post(
        p.qp(),
        new Verbs.SendWr(
            1, Ibv.WR_SEND_WITH_INV, SIGNALED, List.of(sge(src, 0, 64)), 0, 0, inbox.rkey(), null));
    assertEquals(List.of(wc(1, Ibv.WC_REM_OP_ERR)), summary(local.await(p.cq(), 1)));
    assertEquals(List.of(wc(41, FLUSH)), summary(peer.recvCompletions(p.peerQpn(), 1)));
    assertEquals(Ibv.QPS_ERR, peer.qpState(p.peerQpn()));
    assertArrayEquals(guards(256), peer.read(inbox));
  }

  // ------------------------------------------------------------------ faults

  @Test
  void faultWithheldCqeIsNeverDeliveredButItsWriteHappens() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(512, REMOTE_RW, GUARD);
    local.faults.withholdCqe(p.qp().qpNum(), 2);
    byte[] expected = guards(512);
    for (int i = 1; i <= 4; i++) {
      byte[] payload = pattern(64, i);
      writeFrom(p, i, payload, dst.addr() + 64L * i, dst.rkey(), SIGNALED);
      System.arraycopy(payload, 0, expected, 64 * i, 64);
    }
    assertEquals(List.of(wc(1, OK), wc(3, OK), wc(4, OK)), summary(local.await(p.cq(), 3)));
    assertArrayEquals(expected, peer.read(dst));
    writeFrom(p, 2, pattern(64, 9), dst.addr() + 320, dst.rkey(), SIGNALED);
    assertEquals(List.of(wc(2, OK)), summary(local.await(p.cq(), 1)), "withheld once only");
  }

  @Test
  void faultFailedDestroysLeaveEachObjectAliveWithItsResources() {
    SoftFaults f = local.faults;
    Verbs verbs = local.verbs;
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);

    f.failDestroy(SoftFaults.Kind.QP, p.qp().handle(), EBUSY, true);
    assertEquals(EBUSY, verbs.destroyQp(p.qp()));
    assertEquals(EBUSY, verbs.destroyQp(p.qp()), "sticky");
    assertTrue(softThreads().contains("soft-qp-" + p.qp().qpNum()), "its thread lives on");
    byte[] a = pattern(64, 1);
    assertEquals(OK, writeStatus(p, a, dst.addr(), dst.rkey()), "the QP still works");
    f.clearDestroyFaults();
    assertOk(verbs.destroyQp(p.qp()));

    Verbs.Cq cq = local.cq(4);
    f.failNextDestroy(SoftFaults.Kind.CQ, EIO, false);
    assertEquals(EIO, verbs.destroyCq(cq));
    assertEquals(0, verbs.pollCq(cq, new Verbs.Wc[1]), "the CQ is alive");
    assertOk(verbs.destroyCq(cq));
    assertEquals(-EINVAL, verbs.pollCq(cq, new Verbs.Wc[1]));

    Verbs.CompChannel ch = local.channel();
    f.failDestroy(SoftFaults.Kind.COMP_CHANNEL, ch.handle(), EIO, false);
    assertEquals(EIO, verbs.destroyCompChannel(ch));
    Verbs.Cq onIt = verbs.createCq(local.context, 4, ch, 0).value();
    assertOk(verbs.destroyCq(onIt));
    assertOk(verbs.destroyCompChannel(ch));

    Verbs.Pd pd = local.newPd();
    f.failNextDestroy(SoftFaults.Kind.PD, EBUSY, true);
    assertEquals(EBUSY, verbs.deallocPd(pd));
    try (Arena arena = Arena.ofShared()) {
      Verbs.Mr onPd = verbs.regMr(pd, arena.allocate(64), LOCAL).value();
      assertOk(verbs.deregMr(onPd));
    }
    assertEquals(EBUSY, verbs.deallocPd(pd), "sticky, bound to that PD");
    f.clearDestroyFaults();
    assertOk(verbs.deallocPd(pd));

    Pair q = pair();
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 0);
    byte[] b = pattern(64, 2);
    local.put(src, 0, b);
    f.failDestroy(SoftFaults.Kind.MR, src.handle(), EIO, false);
    assertEquals(EIO, verbs.deregMr(src));
    local.post(q.qp(), write(1, SIGNALED, sge(src, 0, 64), dst.addr() + 64, dst.rkey()));
    assertEquals(List.of(wc(1, OK)), summary(local.await(q.cq(), 1)), "its lkey still works");
    assertOk(verbs.deregMr(src));

    Verbs.Mw mw = local.mw();
    Verbs.Mr bindable = local.buffer(64, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    f.failDestroy(SoftFaults.Kind.MW, mw.handle(), EIO, false);
    assertEquals(EIO, verbs.deallocMw(mw));
    local.post(
        q.qp(),
        Verbs.SendWr.bindMw(
            2,
            SIGNALED,
            new Verbs.MwBind(
                mw,
                Ibv.incRkey(mw.rkey()),
                bindable,
                bindable.addr(),
                64,
                Ibv.ACCESS_REMOTE_READ)));
    assertEquals(List.of(wc(2, OK)), summary(local.await(q.cq(), 1)), "the MW still binds");
    assertOk(verbs.deallocMw(mw));
    assertArrayEquals(guarded(1024, 0, concat(a, b)), peer.read(dst));
  }

  @Test
  void faultPostSendFailsAtIndexKAndNothingFromKOnIsExecuted() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(1024, LOCAL, (byte) 0);
    byte[] payload = pattern(1024, 5);
    local.put(src, 0, payload);
    local.faults.failPostSend(p.qp().qpNum(), 2, Errno.ENOMEM.number());
    List<Verbs.SendWr> four = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      four.add(write(i, SIGNALED, sge(src, 64 * i, 64), dst.addr() + 64L * i, dst.rkey()));
    }
    assertPostFailed(local.verbs.postSend(p.qp(), four), Errno.ENOMEM, 2);
    local.post(p.qp(), write(9, SIGNALED, sge(src, 576, 64), dst.addr() + 576, dst.rkey()));
    assertEquals(List.of(wc(0, OK), wc(1, OK), wc(9, OK)), summary(local.await(p.cq(), 3)));
    byte[] expected = guarded(1024, 0, slice(payload, 0, 128));
    System.arraycopy(payload, 576, expected, 576, 64);
    assertArrayEquals(expected, peer.read(dst), "WRs 2 and 3 never ran");
  }

  @Test
  void faultInterruptedWriteLandsExactlyItsFirstBytesThenTheQpFlushes() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(4096, REMOTE_RW, GUARD);
    local.faults.interruptCopy(p.qp().qpNum(), 1, 300);
    byte[] payload = pattern(1000, 6);
    writeFrom(p, 1, payload, dst.addr() + 100, dst.rkey(), SIGNALED);
    writeFrom(p, 2, pattern(64, 7), dst.addr() + 2000, dst.rkey(), SIGNALED);
    assertEquals(List.of(wc(1, FLUSH), wc(2, FLUSH)), summary(local.await(p.cq(), 2)));
    assertArrayEquals(guarded(4096, 100, slice(payload, 0, 300)), peer.read(dst));
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
  }

  @Test
  void faultInterruptedReadLandsExactlyItsFirstBytesThenTheQpFlushes() {
    Pair p = pair();
    ConformancePeer.Buffer src = peer.register(4096, REMOTE_RW, GUARD);
    byte[] remote = pattern(4096, 8);
    peer.write(src, 0, remote);
    Verbs.Mr dst = local.buffer(4096, LOCAL, GUARD);
    local.faults.interruptCopy(p.qp().qpNum(), 1, 300);
    local.post(
        p.qp(),
        Verbs.SendWr.rdma(
            1,
            Ibv.WR_RDMA_READ,
            SIGNALED,
            List.of(sge(dst, 100, 200), sge(dst, 1000, 800)),
            src.addr() + 50,
            src.rkey()),
        read(2, SIGNALED, sge(dst, 3000, 64), src.addr(), src.rkey()));
    assertEquals(List.of(wc(1, FLUSH), wc(2, FLUSH)), summary(local.await(p.cq(), 2)));
    byte[] expected = guarded(4096, 100, slice(remote, 50, 200));
    System.arraycopy(remote, 250, expected, 1000, 100);
    assertArrayEquals(expected, local.bytes(dst));
  }

  @Test
  void faultPortDownIsReportedAndFailsWorkUntilItIsActiveAgain() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(512, REMOTE_RW, GUARD);
    local.faults.setPortState(local.deviceName, 1, Ibv.PORT_DOWN);
    assertEquals(Ibv.PORT_DOWN, local.verbs.queryPort(local.context, 1).value().state());
    assertEquals(new Verbs.AsyncEvent(Ibv.EVENT_PORT_ERR, 1), awaitAsyncEvent());
    writeFrom(p, 1, pattern(64, 1), dst.addr(), dst.rkey(), SIGNALED);
    writeFrom(p, 2, pattern(64, 2), dst.addr() + 64, dst.rkey(), SIGNALED);
    assertEquals(
        List.of(wc(1, Ibv.WC_RETRY_EXC_ERR), wc(2, FLUSH)), summary(local.await(p.cq(), 2)));
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    assertArrayEquals(guards(512), peer.read(dst));

    local.faults.setPortState(local.deviceName, 1, Ibv.PORT_ACTIVE);
    assertEquals(Ibv.PORT_ACTIVE, local.verbs.queryPort(local.context, 1).value().state());
    assertEquals(new Verbs.AsyncEvent(Ibv.EVENT_PORT_ACTIVE, 1), awaitAsyncEvent());
    Pair q = pair();
    byte[] payload = pattern(64, 3);
    assertEquals(OK, writeStatus(q, payload, dst.addr() + 128, dst.rkey()));
    assertArrayEquals(guarded(512, 128, payload), peer.read(dst));
  }

  @Test
  void faultGidTableEntriesChangeWithAnEventAndAnInvalidSourceGidFailsWorkAndRefusesRtr() {
    Verbs.Gid first = local.verbs.queryGid(local.context, 1, 0).value();
    local.faults.setGid(local.deviceName, 1, 1, 7);
    assertEquals(new Verbs.AsyncEvent(Ibv.EVENT_GID_CHANGE, 1), awaitAsyncEvent());
    Verbs.Gid second = local.verbs.queryGid(local.context, 1, 1).value();
    assertNotEquals(first, second, "a distinct GID under alias 7");
    assertEquals(
        SoftGid.decode(first).orElseThrow(),
        SoftGid.decode(second).orElseThrow(),
        "both lead to the device's one responder");
    assertThrows(
        IllegalArgumentException.class,
        () ->
            local.faults.setGid(
                local.deviceName,
                1,
                local.verbs.queryPort(local.context, 1).value().gidTblLen(),
                1),
        "outside the table");

    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(512, REMOTE_RW, GUARD);
    local.faults.invalidateGid(local.deviceName, 1, 0);
    assertEquals(new Verbs.AsyncEvent(Ibv.EVENT_GID_CHANGE, 1), awaitAsyncEvent());
    assertEquals(Verbs.Gid.ZERO, local.verbs.queryGid(local.context, 1, 0).value());
    writeFrom(p, 1, pattern(64, 1), dst.addr(), dst.rkey(), SIGNALED);
    assertEquals(List.of(wc(1, Ibv.WC_RETRY_EXC_ERR)), summary(local.await(p.cq(), 1)));
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    assertArrayEquals(guards(512), peer.read(dst), "nothing moved from an invalid source GID");

    Verbs.Qp fresh = local.qp(SoftLocalEnd.caps(local.cq(16), 16, false));
    SoftLocalEnd.toInit(local.verbs, fresh);
    assertEquals(
        EINVAL,
        local.verbs.modifyQp(fresh, SoftLocalEnd.rtrAttr(peer.gid(), 2), SoftLocalEnd.RTR_MASK),
        "RTR naming an invalid source GID index");

    local.faults.setGid(local.deviceName, 1, 0, 0);
    assertEquals(new Verbs.AsyncEvent(Ibv.EVENT_GID_CHANGE, 1), awaitAsyncEvent());
    assertEquals(first, local.verbs.queryGid(local.context, 1, 0).value(), "alias 0 again");
    byte[] payload = pattern(64, 3);
    assertEquals(OK, writeStatus(pair(), payload, dst.addr() + 128, dst.rkey()));
    assertArrayEquals(guarded(512, 128, payload), peer.read(dst));
  }

  @Test
  void faultDroppedWireFailsTheWrInFlightRetryExceededAndFlushesTheRest() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    byte[] first = pattern(64, 1);
    assertEquals(OK, writeStatus(p, first, dst.addr(), dst.rkey()));
    int qpn = p.qp().qpNum();
    local.faults.stallWire(qpn);
    for (int i = 2; i <= 4; i++) {
      writeFrom(p, i, pattern(64, i), dst.addr() + 64L * i, dst.rkey(), SIGNALED);
    }
    local.faults.dropWire(qpn);
    assertEquals(
        List.of(wc(2, Ibv.WC_RETRY_EXC_ERR), wc(3, FLUSH), wc(4, FLUSH)),
        summary(local.await(p.cq(), 3)));
    local.faults.releaseWire(qpn);
    assertArrayEquals(guarded(1024, 0, first), peer.read(dst));

    Pair idle = pair();
    assertEquals(OK, writeStatus(idle, first, dst.addr(), dst.rkey()));
    local.faults.dropWire(idle.qp().qpNum());
    assertEquals(
        Ibv.WC_RETRY_EXC_ERR,
        writeStatus(idle, pattern(64, 9), dst.addr() + 512, dst.rkey()),
        "dropped while idle: the next WR fails");
    assertArrayEquals(guarded(1024, 0, first), peer.read(dst));
  }

  @Test
  void faultStalledWireHoldsRequestsUntilReleasedThenTheyRunInOrder() {
    Pair p = pair();
    Pair other = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    int qpn = p.qp().qpNum();
    local.faults.stallWire(qpn);
    byte[] expected = guards(1024);
    for (int i = 0; i < 3; i++) {
      byte[] payload = pattern(64, 30 + i);
      writeFrom(p, i, payload, dst.addr() + 64L * i, dst.rkey(), SIGNALED);
      System.arraycopy(payload, 0, expected, 64 * i, 64);
    }
    byte[] meanwhile = pattern(64, 40);
    assertEquals(OK, writeStatus(other, meanwhile, dst.addr() + 512, dst.rkey()));
    assertEquals(0, local.verbs.pollCq(p.cq(), new Verbs.Wc[4]), "no completion while stalled");
    assertArrayEquals(guarded(1024, 512, meanwhile), peer.read(dst), "no byte moved while stalled");
    local.faults.releaseWire(qpn);
    assertEquals(List.of(wc(0, OK), wc(1, OK), wc(2, OK)), summary(local.await(p.cq(), 3)));
    System.arraycopy(meanwhile, 0, expected, 512, 64);
    assertArrayEquals(expected, peer.read(dst));
  }

  @Test
  void faultNullWireCompletesWritesAndReadsAtOnceAndLeavesBothEndsUntouched() {
    Pair p = pair();
    ConformancePeer.Buffer remote = peer.register(4096, REMOTE_RW, GUARD);
    byte[] remoteBytes = guarded(4096, 256, pattern(2048, 3));
    peer.write(remote, 0, remoteBytes);
    Verbs.Mr src = local.buffer(4096, LOCAL, GUARD);
    byte[] srcBytes = guarded(4096, 100, pattern(1000, 4));
    local.put(src, 0, srcBytes);
    Verbs.Mr dst = local.buffer(4096, LOCAL, GUARD);
    local.faults.nullWire(true);
    local.faults.stallWire(p.qp().qpNum());
    local.post(
        p.qp(),
        write(1, SIGNALED, sge(src, 100, 1000), remote.addr() + 100, remote.rkey()),
        read(2, SIGNALED, sge(dst, 200, 1500), remote.addr() + 256, remote.rkey()),
        write(3, SIGNALED, sge(src, 0, 64), remote.addr(), remote.rkey() + 1),
        read(4, SIGNALED, sge(dst, 0, 64), remote.addr(), remote.rkey() + 1));
    List<Verbs.Wc> done = local.await(p.cq(), 4);
    assertEquals(
        List.of(wc(1, OK), wc(2, OK), wc(3, OK), wc(4, OK)),
        summary(done),
        "a stalled wire and a wrong rkey do not matter: nothing is sent");
    assertEquals(Ibv.WC_RDMA_WRITE, done.get(0).opcode());
    assertEquals(1000, done.get(0).byteLen());
    assertEquals(Ibv.WC_RDMA_READ, done.get(1).opcode());
    assertEquals(1500, done.get(1).byteLen());
    assertArrayEquals(remoteBytes, peer.read(remote), "the target is untouched");
    assertArrayEquals(srcBytes, local.bytes(src), "the WRITE's source is untouched");
    assertArrayEquals(guards(4096), local.bytes(dst), "the READ's destination is untouched");
    assertEquals(Ibv.QPS_RTS, local.state(p.qp()));
    local.faults.releaseWire(p.qp().qpNum());
  }

  @Test
  void faultNullWireStillDeliversSendsAndOffRestoresRealCopies() {
    Pair p = pair();
    ConformancePeer.Buffer remote = peer.register(4096, REMOTE_RW, GUARD);
    ConformancePeer.Buffer inbox = peer.register(256, LOCAL, GUARD);
    Verbs.Mr src = local.buffer(4096, LOCAL, GUARD);
    byte[] message = pattern(96, 5);
    local.put(src, 0, message);
    local.faults.nullWire(true);
    peer.postRecv(p.peerQpn(), 11, inbox, 16, 128);
    local.post(p.qp(), Verbs.SendWr.send(1, SIGNALED, List.of(sge(src, 0, 96))));
    assertEquals(List.of(wc(1, OK)), summary(local.await(p.cq(), 1)));
    Verbs.Wc got = peer.recvCompletions(p.peerQpn(), 1).get(0);
    assertEquals(wc(11, OK), wc(got.wrId(), got.status()));
    assertEquals(96, got.byteLen());
    assertArrayEquals(guarded(256, 16, message), peer.read(inbox), "the SEND's bytes arrive");

    local.faults.nullWire(false);
    long countedBefore = local.faults.payloadBytes(local.deviceName);
    byte[] written = pattern(1000, 6);
    local.put(src, 1000, written);
    byte[] remoteBytes = pattern(4096, 7);
    peer.write(remote, 0, remoteBytes);
    byte[] landed = remoteBytes.clone();
    System.arraycopy(written, 0, landed, 300, 1000);
    Verbs.Mr dst = local.buffer(4096, LOCAL, GUARD);
    local.post(
        p.qp(),
        write(2, SIGNALED, sge(src, 1000, 1000), remote.addr() + 300, remote.rkey()),
        read(3, SIGNALED, sge(dst, 50, 2000), remote.addr() + 1000, remote.rkey()),
        write(4, SIGNALED, sge(src, 0, 64), remote.addr(), remote.rkey() + 1));
    assertEquals(
        List.of(wc(2, OK), wc(3, OK), wc(4, Ibv.WC_REM_ACCESS_ERR)),
        summary(local.await(p.cq(), 3)),
        "off: the wire is back, and the responder checks the rkey again");
    assertArrayEquals(landed, peer.read(remote), "the WRITE landed");
    assertArrayEquals(
        guarded(4096, 50, slice(landed, 1000, 2000)), local.bytes(dst), "the READ copied");
    assertEquals(
        3000,
        local.faults.payloadBytes(local.deviceName) - countedBefore,
        "the provider counts the WRITE's and the READ's payload (not the refused one, nor SENDs)");
  }
}
