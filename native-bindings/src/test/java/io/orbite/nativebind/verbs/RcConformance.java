package io.orbite.nativebind.verbs;

import static io.orbite.nativebind.verbs.VerbsEnd.read;
import static io.orbite.nativebind.verbs.VerbsEnd.sge;
import static io.orbite.nativebind.verbs.VerbsEnd.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.Errno;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * What every pair of RC ends must show, whatever the provider, byte for byte and completion for
 * completion: the local end a {@link VerbsEnd} of the subclass's provider, the far end a {@link
 * ConformancePeer} (in this JVM, in another process, in another namespace). Every transfer checks
 * the whole target buffer: the payload exact and the guard bytes around it untouched.
 *
 * <p><b>Which tests live here.</b> Only what the {@code Verbs} table's semantics promise and a real
 * HCA does too (the IBA, the kernel's QP state table, libibverbs): READ, WRITE and SEND with and
 * without immediate, inline data, a SEND larger than its receive, RNR; keys, local SGE and remote
 * rkey checks, MR rights and range, deregistration; type-2 memory windows (exact range and
 * direction, one byte outside fails {@code WC_REM_ACCESS_ERR} with the target untouched, the QP
 * binding, local invalidate, send with invalidate, bind rule failures); the flush in ERR, a full
 * send queue, too many SGEs, completion order, signaled, unsignaled and {@code sqSigAll}
 * completions, completion channels; the QP state machine; the destroys the kernel refuses {@code
 * EBUSY}; a connection lost by destroying the peer QP, and a peer QP not yet ready. Nothing here
 * names a provider, a fault or a handle after its destroy, and where providers legitimately differ
 * the test holds for all (a send queue rounded up, ENOMEM or EINVAL for too many SGEs, the IBA's
 * undefined bytes of a failed receive). A held send queue is made with a SEND that waits out RNR
 * (no receive at the peer, RNR retries without end), which any provider honours.
 *
 * <p>What only the software provider promises (its device table and GIDs, {@code EBUSY} and {@code
 * EINVAL} answers beyond the kernel's, CQ overflow, the exact QP capacity, its fault table) is in
 * {@code SoftVerbsConformance}, which extends this class.
 */
public abstract class RcConformance<L extends VerbsEnd> extends ConformanceSupport<L> {
  private static final int EINVAL = Errno.EINVAL.number();
  private static final int EBUSY = Errno.EBUSY.number();
  private static final int EAGAIN = Errno.EAGAIN.number();
  private static final int SIGNALED = Ibv.SEND_SIGNALED;

  // ------------------------------------------------------------------ READ, WRITE, SEND

  /**
   * Whether this provider leaves a receive that a too-large SEND failed untouched (the IBA leaves
   * its bytes undefined, so the portable test does not ask; the soft provider checks before it
   * writes).
   */
  protected boolean failedReceiveLeftUntouched() {
    return false;
  }

  @Test
  void aWriteLandsExactlyItsBytesBetweenGuards() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(4096, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(4096, LOCAL, (byte) 0);
    byte[] a = pattern(1000, 1);
    byte[] b = pattern(500, 2);
    local.put(src, 100, a);
    local.put(src, 2000, b);
    local.post(
        p.qp(),
        Verbs.SendWr.rdma(
            7,
            Ibv.WR_RDMA_WRITE,
            SIGNALED,
            List.of(sge(src, 100, 1000), sge(src, 2000, 500)),
            dst.addr() + 777,
            dst.rkey()));
    Verbs.Wc wc = local.await(p.cq(), 1).get(0);
    assertEquals(7, wc.wrId());
    assertEquals(OK, wc.status());
    assertEquals(Ibv.WC_RDMA_WRITE, wc.opcode());
    assertEquals(p.qp().qpNum(), wc.qpNum());
    assertArrayEquals(guarded(4096, 777, concat(a, b)), peer.read(dst));
  }

  @Test
  void aReadBringsExactlyItsBytesBetweenGuards() {
    Pair p = pair();
    ConformancePeer.Buffer src = peer.register(4096, REMOTE_RW, GUARD);
    byte[] remote = pattern(4096, 3);
    peer.write(src, 0, remote);
    Verbs.Mr dst = local.buffer(4096, LOCAL, GUARD);
    local.post(
        p.qp(),
        Verbs.SendWr.rdma(
            1,
            Ibv.WR_RDMA_READ,
            SIGNALED,
            List.of(sge(dst, 100, 700), sge(dst, 3000, 800)),
            src.addr() + 300,
            src.rkey()));
    Verbs.Wc wc = local.await(p.cq(), 1).get(0);
    assertEquals(OK, wc.status());
    assertEquals(Ibv.WC_RDMA_READ, wc.opcode());
    assertEquals(1500, wc.byteLen());
    byte[] expected = guarded(4096, 100, slice(remote, 300, 700));
    System.arraycopy(remote, 1000, expected, 3000, 800);
    assertArrayEquals(expected, local.bytes(dst));
    assertArrayEquals(remote, peer.read(src), "a READ leaves the source as it was");
  }

  @Test
  void aSendScattersIntoTheHeadReceiveAndReceivesCompleteInOrder() {
    Pair p = pair();
    ConformancePeer.Buffer rb = peer.register(4096, LOCAL, GUARD);
    peer.postRecv(p.peerQpn(), 11, rb, 100, 600);
    peer.postRecv(p.peerQpn(), 12, rb, 1000, 600);
    Verbs.Mr src = local.buffer(1024, LOCAL, (byte) 0);
    byte[] a = pattern(300, 4);
    byte[] b = pattern(200, 5);
    local.put(src, 0, a);
    local.put(src, 500, b);
    local.post(
        p.qp(),
        Verbs.SendWr.send(1, SIGNALED, List.of(sge(src, 0, 300), sge(src, 500, 200))),
        new Verbs.SendWr(
            2, Ibv.WR_SEND_WITH_IMM, SIGNALED, List.of(sge(src, 0, 300)), 0, 0, 0x1234abcd, null));
    List<Verbs.Wc> sent = local.await(p.cq(), 2);
    assertEquals(List.of(wc(1, OK), wc(2, OK)), summary(sent));
    assertEquals(Ibv.WC_SEND, sent.get(0).opcode());
    List<Verbs.Wc> got = peer.recvCompletions(p.peerQpn(), 2);
    assertEquals(List.of(wc(11, OK), wc(12, OK)), summary(got));
    assertEquals(Ibv.WC_RECV, got.get(0).opcode());
    assertEquals(500, got.get(0).byteLen());
    assertEquals(p.qp().qpNum(), got.get(0).srcQp());
    assertEquals(p.peerQpn(), got.get(0).qpNum());
    assertEquals(0, got.get(0).wcFlags());
    assertEquals(300, got.get(1).byteLen());
    assertEquals(Ibv.WC_WITH_IMM, got.get(1).wcFlags());
    assertEquals(0x1234abcd, got.get(1).immOrInvalidated());
    byte[] expected = guarded(4096, 100, concat(a, b));
    System.arraycopy(a, 0, expected, 1000, 300);
    assertArrayEquals(expected, peer.read(rb));
  }

  @Test
  void aWriteWithImmediateLandsItsBytesAndConsumesAReceiveWithoutWritingIt() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    ConformancePeer.Buffer rb = peer.register(64, LOCAL, GUARD);
    peer.postRecv(p.peerQpn(), 21, rb, 0, 64);
    Verbs.Mr src = local.buffer(256, LOCAL, (byte) 0);
    byte[] payload = pattern(256, 6);
    local.put(src, 0, payload);
    local.post(
        p.qp(),
        new Verbs.SendWr(
            1,
            Ibv.WR_RDMA_WRITE_WITH_IMM,
            SIGNALED,
            List.of(sge(src, 0, 256)),
            dst.addr() + 64,
            dst.rkey(),
            77,
            null));
    assertEquals(List.of(wc(1, OK)), summary(local.await(p.cq(), 1)));
    Verbs.Wc r = peer.recvCompletions(p.peerQpn(), 1).get(0);
    assertEquals(21, r.wrId());
    assertEquals(Ibv.WC_RECV_RDMA_WITH_IMM, r.opcode());
    assertEquals(Ibv.WC_WITH_IMM, r.wcFlags());
    assertEquals(77, r.immOrInvalidated());
    assertEquals(256, r.byteLen());
    assertArrayEquals(guarded(1024, 64, payload), peer.read(dst));
    assertArrayEquals(guards(64), peer.read(rb));
  }

  @Test
  void inlineDataIsTakenAtPostTime() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    ConformancePeer.Buffer inbox = peer.register(128, LOCAL, GUARD);
    peer.postRecv(p.peerQpn(), 11, inbox, 16, 64);
    Verbs.Mr src = local.buffer(128, LOCAL, (byte) 0);
    byte[] written = pattern(32, 7);
    byte[] sent = pattern(48, 8);
    local.put(src, 0, written);
    local.put(src, 64, sent);
    local.post(
        p.qp(),
        write(1, SIGNALED | Ibv.SEND_INLINE, sge(src, 0, 32), dst.addr() + 8, dst.rkey()),
        Verbs.SendWr.send(2, SIGNALED | Ibv.SEND_INLINE, List.of(sge(src, 64, 48))));
    local.put(src, 0, pattern(128, 99));
    assertEquals(List.of(wc(1, OK), wc(2, OK)), summary(local.await(p.cq(), 2)));
    assertEquals(List.of(wc(11, OK)), summary(peer.recvCompletions(p.peerQpn(), 1)));
    assertArrayEquals(guarded(256, 8, written), peer.read(dst));
    assertArrayEquals(guarded(128, 16, sent), peer.read(inbox));
  }

  @Test
  void aSendLargerThanTheReceiveFailsBothEndsAndWritesNothingOutsideThatReceive() {
    Pair p = pair();
    ConformancePeer.Buffer rb = peer.register(1024, LOCAL, GUARD);
    peer.postRecv(p.peerQpn(), 11, rb, 200, 100);
    peer.postRecv(p.peerQpn(), 12, rb, 400, 100);
    Verbs.Mr src = local.buffer(256, LOCAL, (byte) 1);
    local.post(
        p.qp(),
        Verbs.SendWr.send(1, SIGNALED, List.of(sge(src, 0, 200))),
        Verbs.SendWr.send(2, SIGNALED, List.of(sge(src, 0, 50))));
    assertEquals(
        List.of(wc(1, Ibv.WC_REM_INV_REQ_ERR), wc(2, FLUSH)), summary(local.await(p.cq(), 2)));
    assertEquals(
        List.of(wc(11, Ibv.WC_LOC_LEN_ERR), wc(12, FLUSH)),
        summary(peer.recvCompletions(p.peerQpn(), 2)));
    byte[] after = peer.read(rb);
    if (!failedReceiveLeftUntouched()) {
      // The IBA leaves the failed receive's own 100 bytes undefined; every other byte is a guard.
      System.arraycopy(guards(100), 0, after, 200, 100);
    }
    assertArrayEquals(guards(1024), after, "bytes outside the failed receive's SGE");
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    assertEquals(Ibv.QPS_ERR, peer.qpState(p.peerQpn()));
  }

  @Test
  void aSendWithNoReceiveIsRetriedRnrRetryTimesThenFails() {
    Pair p = pair(64, false, 256, 2);
    ConformancePeer.Buffer rb = peer.register(256, LOCAL, GUARD);
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 1);
    local.post(p.qp(), Verbs.SendWr.send(1, SIGNALED, List.of(sge(src, 0, 64))));
    assertEquals(List.of(wc(1, Ibv.WC_RNR_RETRY_EXC_ERR)), summary(local.await(p.cq(), 1)));
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    assertEquals(Ibv.QPS_RTS, peer.qpState(p.peerQpn()), "RNR is no error at the responder");
    assertArrayEquals(guards(256), peer.read(rb));
  }

  @Test
  void aSendWaitsOutRnrUntilAReceiveIsPosted() {
    Pair p = pair();
    ConformancePeer.Buffer rb = peer.register(256, LOCAL, GUARD);
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 0);
    byte[] payload = pattern(64, 8);
    local.put(src, 0, payload);
    local.post(p.qp(), Verbs.SendWr.send(1, SIGNALED, List.of(sge(src, 0, 64))));
    peer.postRecv(p.peerQpn(), 11, rb, 16, 64);
    assertEquals(List.of(wc(1, OK)), summary(local.await(p.cq(), 1)));
    assertEquals(List.of(wc(11, OK)), summary(peer.recvCompletions(p.peerQpn(), 1)));
    assertArrayEquals(guarded(256, 16, payload), peer.read(rb));
  }

  // ------------------------------------------------------------------ memory and keys

  @Test
  void keysAreNonZeroAndNameOneMrEachAndLocalSgesMustLieInTheirMr() {
    Set<Integer> keys = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      Verbs.Mr mr = local.buffer(64, LOCAL, (byte) 0);
      assertNotEquals(0, mr.lkey());
      assertNotEquals(0, mr.rkey());
      assertTrue(keys.add(mr.lkey()), "an lkey of two MRs");
      assertTrue(mr.rkey() == mr.lkey() || keys.add(mr.rkey()), "an rkey of two MRs");
    }
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(128, LOCAL, (byte) 1);
    local.post(
        p.qp(),
        write(1, SIGNALED, new Verbs.Sge(src.addr() + 1, 128, src.lkey()), dst.addr(), dst.rkey()),
        write(2, SIGNALED, sge(src, 0, 16), dst.addr(), dst.rkey()));
    assertEquals(
        List.of(wc(1, Ibv.WC_LOC_PROT_ERR), wc(2, FLUSH)), summary(local.await(p.cq(), 2)));
    assertArrayEquals(guards(256), peer.read(dst));
    Verbs.Pd other = local.newPd();
    Verbs.Mr foreign = local.buffer(other, 64, LOCAL, (byte) 1);
    Pair q = pair();
    local.post(q.qp(), write(1, SIGNALED, sge(foreign, 0, 16), dst.addr(), dst.rkey()));
    assertEquals(
        List.of(wc(1, Ibv.WC_LOC_PROT_ERR)),
        summary(local.await(q.cq(), 1)),
        "an MR of another PD");
    assertArrayEquals(guards(256), peer.read(dst));
  }

  @Test
  void anMrRkeyNeedsItsRemoteRightAndTheWholeRangeInside() {
    ConformancePeer.Buffer ro = peer.register(256, LOCAL | Ibv.ACCESS_REMOTE_READ, GUARD);
    Pair p = pair();
    assertEquals(OK, readStatus(p, 128, ro.addr(), ro.rkey()));
    assertEquals(Ibv.WC_REM_ACCESS_ERR, writeStatus(p, pattern(16, 1), ro.addr(), ro.rkey()));
    assertArrayEquals(guards(256), peer.read(ro));
    ConformancePeer.Buffer rw = peer.register(256, REMOTE_RW, GUARD);
    Pair q = pair();
    assertEquals(Ibv.WC_REM_ACCESS_ERR, writeStatus(q, pattern(16, 2), rw.addr() + 241, rw.rkey()));
    assertArrayEquals(guards(256), peer.read(rw), "one byte past the MR: nothing written");
  }

  @Test
  void aDeregisteredMrsKeysStopWorkingAtOnce() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    byte[] first = pattern(32, 3);
    assertEquals(OK, writeStatus(p, first, dst.addr(), dst.rkey()));
    peer.deregister(dst);
    assertEquals(Ibv.WC_REM_ACCESS_ERR, writeStatus(p, pattern(32, 4), dst.addr(), dst.rkey()));
    assertArrayEquals(guarded(256, 0, first), peer.read(dst));

    Pair q = pair();
    ConformancePeer.Buffer dst2 = peer.register(256, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 3);
    assertOk(local.deregMr(src));
    local.post(q.qp(), write(1, SIGNALED, sge(src, 0, 64), dst2.addr(), dst2.rkey()));
    assertEquals(List.of(wc(1, Ibv.WC_LOC_PROT_ERR)), summary(local.await(q.cq(), 1)));
    assertArrayEquals(guards(256), peer.read(dst2));
  }

  // ------------------------------------------------------------------ memory windows

  /** A fresh pair whose peer QP has a type-2 MW over [1024, 1536) of {@code rb}. */
  protected record Window(Pair pair, int rkey) {}

  protected Window windowOn(ConformancePeer.Buffer rb, int access) {
    Pair p = pair();
    return new Window(p, peer.bindMw(p.peerQpn(), rb, 1024, 512, access));
  }

  @Test
  void aWindowAuthorizesExactlyItsRangeAndDirection() {
    ConformancePeer.Buffer rb = peer.register(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    long base = rb.addr();
    Window w = windowOn(rb, Ibv.ACCESS_REMOTE_WRITE);
    byte[] whole = pattern(512, 9);
    assertEquals(OK, writeStatus(w.pair(), whole, base + 1024, w.rkey()));
    byte[] expected = guarded(4096, 1024, whole);
    assertArrayEquals(expected, peer.read(rb));

    w = windowOn(rb, Ibv.ACCESS_REMOTE_WRITE);
    assertEquals(
        Ibv.WC_REM_ACCESS_ERR, writeStatus(w.pair(), pattern(16, 1), base + 1023, w.rkey()));
    assertArrayEquals(expected, peer.read(rb), "one byte before: nothing written");
    assertEquals(Ibv.QPS_ERR, local.state(w.pair().qp()));
    assertEquals(Ibv.QPS_ERR, peer.qpState(w.pair().peerQpn()));

    w = windowOn(rb, Ibv.ACCESS_REMOTE_WRITE);
    assertEquals(
        Ibv.WC_REM_ACCESS_ERR, writeStatus(w.pair(), pattern(16, 2), base + 1536 - 15, w.rkey()));
    assertArrayEquals(expected, peer.read(rb), "one byte after: nothing written");

    w = windowOn(rb, Ibv.ACCESS_REMOTE_WRITE);
    assertEquals(Ibv.WC_REM_ACCESS_ERR, readStatus(w.pair(), 64, base + 1024, w.rkey()));

    w = windowOn(rb, Ibv.ACCESS_REMOTE_READ);
    Verbs.Mr dst = local.buffer(1024, LOCAL, GUARD);
    local.post(w.pair().qp(), read(1, SIGNALED, sge(dst, 256, 512), base + 1024, w.rkey()));
    assertEquals(List.of(wc(1, OK)), summary(local.await(w.pair().cq(), 1)));
    assertArrayEquals(guarded(1024, 256, whole), local.bytes(dst));

    w = windowOn(rb, Ibv.ACCESS_REMOTE_READ);
    assertEquals(
        Ibv.WC_REM_ACCESS_ERR, writeStatus(w.pair(), pattern(16, 3), base + 1024, w.rkey()));
    assertArrayEquals(expected, peer.read(rb), "a read window refuses writes");

    Pair p = pair();
    assertEquals(
        Ibv.WC_REM_ACCESS_ERR,
        writeStatus(p, pattern(16, 4), base + 1024, rb.rkey()),
        "the MR itself grants no remote right");
    assertArrayEquals(expected, peer.read(rb));
  }

  @Test
  void aRefusedAccessErrsTheRequesterFlushesTheRestAndTouchesNothing() {
    ConformancePeer.Buffer rb = peer.register(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    Window w = windowOn(rb, Ibv.ACCESS_REMOTE_WRITE);
    writeFrom(w.pair(), 1, pattern(16, 1), rb.addr() + 1023, w.rkey(), SIGNALED);
    writeFrom(w.pair(), 2, pattern(16, 2), rb.addr() + 1024, w.rkey(), SIGNALED);
    writeFrom(w.pair(), 3, pattern(16, 3), rb.addr() + 1100, w.rkey(), 0);
    assertEquals(
        List.of(wc(1, Ibv.WC_REM_ACCESS_ERR), wc(2, FLUSH), wc(3, FLUSH)),
        summary(local.await(w.pair().cq(), 3)));
    assertArrayEquals(guards(4096), peer.read(rb));
    assertEquals(Ibv.QPS_ERR, local.state(w.pair().qp()));
  }

  @Test
  void aWindowServesOnlyTheQpConnectedToTheOneItWasBoundOn() {
    ConformancePeer.Buffer rb = peer.register(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    Window w = windowOn(rb, Ibv.ACCESS_REMOTE_WRITE);
    Pair other = pair();
    assertEquals(
        Ibv.WC_REM_ACCESS_ERR, writeStatus(other, pattern(64, 1), rb.addr() + 1024, w.rkey()));
    assertArrayEquals(guards(4096), peer.read(rb));
    byte[] payload = pattern(64, 2);
    assertEquals(OK, writeStatus(w.pair(), payload, rb.addr() + 1024, w.rkey()));
    assertArrayEquals(guarded(4096, 1024, payload), peer.read(rb));
  }

  @Test
  void aLocallyInvalidatedWindowRefusesAccess() {
    ConformancePeer.Buffer rb = peer.register(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    Window w = windowOn(rb, Ibv.ACCESS_REMOTE_WRITE);
    byte[] first = pattern(64, 1);
    assertEquals(OK, writeStatus(w.pair(), first, rb.addr() + 1024, w.rkey()));
    assertEquals(OK, peer.localInvalidate(w.pair().peerQpn(), w.rkey()));
    assertEquals(
        Ibv.WC_REM_ACCESS_ERR, writeStatus(w.pair(), pattern(64, 2), rb.addr() + 1024, w.rkey()));
    assertArrayEquals(guarded(4096, 1024, first), peer.read(rb));
  }

  @Test
  void aSendWithInvalidateInvalidatesTheNamedWindowAtTheReceiver() {
    ConformancePeer.Buffer rb = peer.register(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    ConformancePeer.Buffer inbox = peer.register(256, LOCAL, GUARD);
    Window w = windowOn(rb, Ibv.ACCESS_REMOTE_WRITE);
    peer.postRecv(w.pair().peerQpn(), 31, inbox, 0, 128);
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 0);
    byte[] payload = pattern(64, 5);
    local.put(src, 0, payload);
    local.post(
        w.pair().qp(),
        new Verbs.SendWr(
            1, Ibv.WR_SEND_WITH_INV, SIGNALED, List.of(sge(src, 0, 64)), 0, 0, w.rkey(), null));
    assertEquals(List.of(wc(1, OK)), summary(local.await(w.pair().cq(), 1)));
    Verbs.Wc r = peer.recvCompletions(w.pair().peerQpn(), 1).get(0);
    assertEquals(31, r.wrId());
    assertEquals(OK, r.status());
    assertEquals(Ibv.WC_WITH_INV, r.wcFlags());
    assertEquals(w.rkey(), r.immOrInvalidated());
    assertEquals(64, r.byteLen());
    assertArrayEquals(guarded(256, 0, payload), peer.read(inbox));
    writeFrom(w.pair(), 2, pattern(64, 6), rb.addr() + 1024, w.rkey(), SIGNALED);
    assertEquals(List.of(wc(2, Ibv.WC_REM_ACCESS_ERR)), summary(local.await(w.pair().cq(), 1)));
    assertArrayEquals(guards(4096), peer.read(rb));
  }

  @Test
  void aLocalBindAndInvalidateCompleteInOrderWithTheirOpcodes() {
    Pair p = pair();
    Verbs.Mr mr = local.buffer(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    Verbs.Mw mw = local.mw();
    int rkey = Ibv.incRkey(mw.rkey());
    Verbs.Mr src = local.buffer(16, LOCAL, (byte) 0);
    byte[] payload = pattern(16, 4);
    local.put(src, 0, payload);
    ConformancePeer.Buffer dst = peer.register(64, REMOTE_RW, GUARD);
    local.post(
        p.qp(),
        Verbs.SendWr.bindMw(
            1,
            SIGNALED,
            new Verbs.MwBind(mw, rkey, mr, mr.addr() + 64, 128, Ibv.ACCESS_REMOTE_WRITE)));
    List<Verbs.Wc> bound = local.await(p.cq(), 1);
    assertEquals(List.of(wc(1, OK)), summary(bound));
    assertEquals(Ibv.WC_BIND_MW, bound.get(0).opcode());
    local.post(
        p.qp(),
        new Verbs.SendWr(2, Ibv.WR_LOCAL_INV, SIGNALED, List.of(), 0, 0, rkey, null),
        write(3, SIGNALED, sge(src, 0, 16), dst.addr(), dst.rkey()));
    List<Verbs.Wc> got = local.await(p.cq(), 2);
    assertEquals(List.of(wc(2, OK), wc(3, OK)), summary(got));
    assertEquals(Ibv.WC_LOCAL_INV, got.get(0).opcode());
    assertEquals(Ibv.WC_RDMA_WRITE, got.get(1).opcode());
    assertArrayEquals(guarded(64, 0, payload), peer.read(dst));
    assertArrayEquals(guards(4096), local.bytes(mr));
    assertOk(local.deallocMw(mw));
    assertOk(local.deregMr(mr));
  }

  @Test
  void aBindToAnMrWithoutTheBindRightOrPastItsEndFailsMwBindErrAndErrsTheQp() {
    Verbs.Mr noBind = local.buffer(4096, LOCAL, GUARD);
    Verbs.Mr mr = local.buffer(4096, LOCAL | Ibv.ACCESS_MW_BIND, GUARD);
    Verbs.Mw mw = local.mw();
    int good = Ibv.incRkey(mw.rkey());
    List<Verbs.MwBind> broken =
        List.of(
            new Verbs.MwBind(mw, good, noBind, noBind.addr(), 128, Ibv.ACCESS_REMOTE_WRITE),
            new Verbs.MwBind(mw, good, mr, mr.addr() + 4096 - 64, 128, Ibv.ACCESS_REMOTE_WRITE));
    for (Verbs.MwBind bind : broken) {
      Pair p = pair();
      local.post(
          p.qp(), Verbs.SendWr.bindMw(1, SIGNALED, bind), Verbs.SendWr.bindMw(2, SIGNALED, bind));
      assertEquals(
          List.of(wc(1, Ibv.WC_MW_BIND_ERR), wc(2, FLUSH)), summary(local.await(p.cq(), 2)));
      assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    }
    Pair p = pair();
    local.post(
        p.qp(),
        Verbs.SendWr.bindMw(
            1, SIGNALED, new Verbs.MwBind(mw, good, mr, mr.addr(), 128, Ibv.ACCESS_REMOTE_READ)));
    assertEquals(List.of(wc(1, OK)), summary(local.await(p.cq(), 1)), "the rules kept, it binds");
    assertOk(local.deallocMw(mw));
    assertOk(local.deregMr(mr));
  }

  // ------------------------------------------------------------------ queues and completions

  @Test
  void errFlushesTheSendsHeldBehindAnRnrSendAndEveryReceiveEachInOrder() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    Verbs.Mr inbox = local.buffer(1024, LOCAL, GUARD);
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 1);
    // No receive at the peer and RNR retries without end: the SEND holds the queue behind it.
    local.post(p.qp(), Verbs.SendWr.send(1, SIGNALED, List.of(sge(src, 0, 64))));
    for (int i = 2; i <= 3; i++) {
      writeFrom(p, i, pattern(64, i), dst.addr() + 64L * i, dst.rkey(), SIGNALED);
    }
    assertTrue(postRecv(p.qp(), 11, inbox, 0).posted());
    assertTrue(postRecv(p.qp(), 12, inbox, 64).posted());
    assertEquals(0, local.verbs.pollCq(p.cq(), new Verbs.Wc[8]), "held, and nothing received");
    assertOk(local.verbs.modifyQp(p.qp(), Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE));
    List<Verbs.Wc> flushed = local.await(p.cq(), 5);
    assertEquals(
        List.of(wc(1, FLUSH), wc(2, FLUSH), wc(3, FLUSH)),
        summary(flushed.stream().filter(w -> w.wrId() < 10).toList()),
        "the send queue, in post order");
    assertEquals(
        List.of(wc(11, FLUSH), wc(12, FLUSH)),
        summary(flushed.stream().filter(w -> w.wrId() > 10).toList()),
        "the receive queue, in post order");
    writeFrom(p, 4, pattern(64, 4), dst.addr(), dst.rkey(), 0);
    assertTrue(postRecv(p.qp(), 13, inbox, 128).posted());
    List<Verbs.Wc> late = new ArrayList<>(local.await(p.cq(), 2));
    late.sort(Comparator.comparingLong(Verbs.Wc::wrId));
    assertEquals(List.of(wc(4, FLUSH), wc(13, FLUSH)), summary(late), "posted in ERR");
    assertArrayEquals(guards(1024), peer.read(dst));
    assertArrayEquals(guards(1024), local.bytes(inbox));
  }

  protected Verbs.PostResult postRecv(Verbs.Qp qp, long wrId, Verbs.Mr mr, int offset) {
    return local.verbs.postRecv(qp, List.of(new Verbs.RecvWr(wrId, List.of(sge(mr, offset, 64)))));
  }

  @Test
  void aFullSendQueueRefusesEnomemAtTheFirstWrThatDoesNotFitAndRunsTheOnesItTook() {
    int n = 1000;
    Pair p = pair(4, false, 2048, 7);
    ConformancePeer.Buffer inbox = peer.register(64, LOCAL, GUARD);
    ConformancePeer.Buffer dst = peer.register(16 * n, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(16 * n, LOCAL, (byte) 0);
    byte[] payload = pattern(16 * n, 10);
    local.put(src, 0, payload);
    // No receive at the peer yet: the SEND waits out RNR and keeps its slot and those behind it.
    local.post(p.qp(), Verbs.SendWr.send(0, SIGNALED, List.of(sge(src, 0, 16))));
    List<Verbs.SendWr> rest = new ArrayList<>();
    for (int i = 1; i < n; i++) {
      rest.add(write(i, SIGNALED, sge(src, 16 * i, 16), dst.addr() + 16L * i, dst.rkey()));
    }
    Verbs.PostResult r = local.verbs.postSend(p.qp(), rest);
    assertEquals(Errno.ENOMEM.number(), r.errno(), r::toString);
    int k = r.badIndex();
    assertTrue(k >= 3 && k + 5 < n, () -> "maxSendWr 4, a provider may round it up: " + r);
    assertArrayEquals(guards(16 * n), peer.read(dst), "held: nothing moved yet");
    peer.postRecv(p.peerQpn(), 50, inbox, 0, 64);
    List<String> expected = new ArrayList<>();
    for (int i = 0; i <= k; i++) {
      expected.add(wc(i, OK));
    }
    assertEquals(expected, summary(local.await(p.cq(), k + 1)));
    assertEquals(List.of(wc(50, OK)), summary(peer.recvCompletions(p.peerQpn(), 1)));
    assertArrayEquals(guarded(16 * n, 16, slice(payload, 16, 16 * k)), peer.read(dst));
    assertArrayEquals(guarded(64, 0, slice(payload, 0, 16)), peer.read(inbox));
    assertEquals(
        Verbs.PostResult.ALL,
        local.verbs.postSend(p.qp(), rest.subList(k, k + 4)),
        "the slots are free");
    assertEquals(4, local.await(p.cq(), 4).size());
    assertArrayEquals(guarded(16 * n, 16, slice(payload, 16, 16 * (k + 4))), peer.read(dst));
  }

  @Test
  void moreSgesThanTheDeviceAllowsAreRefusedAtThatWrAndTheEarlierOnesArePosted() {
    int tooMany = local.deviceAttr().maxSge() + 1;
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(512, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(512 + 8 * tooMany, LOCAL, (byte) 0);
    byte[] payload = pattern(512 + 8 * tooMany, 11);
    local.put(src, 0, payload);
    List<Verbs.Sge> many = new ArrayList<>();
    for (int i = 0; i < tooMany; i++) {
      many.add(sge(src, 100 + 8 * i, 8));
    }
    Verbs.PostResult r =
        local.verbs.postSend(
            p.qp(),
            List.of(
                write(0, SIGNALED, sge(src, 0, 64), dst.addr(), dst.rkey()),
                Verbs.SendWr.rdma(
                    1, Ibv.WR_RDMA_WRITE, SIGNALED, many, dst.addr() + 100, dst.rkey()),
                write(2, SIGNALED, sge(src, 200, 64), dst.addr() + 200, dst.rkey())));
    assertRefusedForSges(r, 1);
    assertEquals(List.of(wc(0, OK)), summary(local.await(p.cq(), 1)));
    assertArrayEquals(guarded(512, 0, slice(payload, 0, 64)), peer.read(dst));
    Verbs.Mr inbox = local.buffer(8 * tooMany, LOCAL, GUARD);
    List<Verbs.Sge> manyIn = new ArrayList<>();
    for (int i = 0; i < tooMany; i++) {
      manyIn.add(sge(inbox, 8 * i, 8));
    }
    assertRefusedForSges(local.verbs.postRecv(p.qp(), List.of(new Verbs.RecvWr(1, manyIn))), 0);
  }

  /** Refused at {@code badIndex}: EINVAL (rxe, soft) or ENOMEM (libmlx5, libmlx4). */
  private static void assertRefusedForSges(Verbs.PostResult r, int badIndex) {
    assertFalse(r.posted(), r::toString);
    assertEquals(badIndex, r.badIndex(), r::toString);
    assertTrue(
        r.errno() == Errno.EINVAL.number() || r.errno() == Errno.ENOMEM.number(), r::toString);
  }

  @Test
  void sendCompletionsComeInPostOrderAcrossWritesReadsAndSends() {
    int n = 99;
    Pair p = pair(256, true, 1024, 7);
    ConformancePeer.Buffer dst = peer.register(64 * n, REMOTE_RW, GUARD);
    ConformancePeer.Buffer src = peer.register(64 * n, REMOTE_RW, GUARD);
    ConformancePeer.Buffer inbox = peer.register(64 * n, LOCAL, GUARD);
    byte[] remote = pattern(64 * n, 12);
    peer.write(src, 0, remote);
    Verbs.Mr out = local.buffer(64 * n, LOCAL, (byte) 0);
    byte[] payload = pattern(64 * n, 13);
    local.put(out, 0, payload);
    Verbs.Mr in = local.buffer(64 * n, LOCAL, GUARD);
    byte[] expectDst = guards(64 * n);
    byte[] expectInbox = guards(64 * n);
    byte[] expectIn = guards(64 * n);
    List<Verbs.SendWr> wrs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int at = 64 * i;
      switch (i % 3) {
        case 0 -> {
          wrs.add(write(i, 0, sge(out, at, 64), dst.addr() + at, dst.rkey()));
          System.arraycopy(payload, at, expectDst, at, 64);
        }
        case 1 -> {
          wrs.add(read(i, 0, sge(in, at, 64), src.addr() + at, src.rkey()));
          System.arraycopy(remote, at, expectIn, at, 64);
        }
        default -> {
          peer.postRecv(p.peerQpn(), i, inbox, at, 64);
          wrs.add(Verbs.SendWr.send(i, 0, List.of(sge(out, at, 64))));
          System.arraycopy(payload, at, expectInbox, at, 64);
        }
      }
    }
    for (int from = 0; from < n; from += 10) {
      local.post(p.qp(), wrs.subList(from, Math.min(n, from + 10)).toArray(Verbs.SendWr[]::new));
    }
    List<Verbs.Wc> got = local.await(p.cq(), n);
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      expected.add(wc(i, OK));
    }
    assertEquals(expected, summary(got));
    assertArrayEquals(expectDst, peer.read(dst));
    assertArrayEquals(expectIn, local.bytes(in));
    assertArrayEquals(expectInbox, peer.read(inbox));
    assertArrayEquals(remote, peer.read(src));
  }

  @Test
  void onlySignaledWrsCompleteUnlessSqSigAllButAnErrorAlwaysDoes() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    byte[] expected = guards(1024);
    for (int i = 0; i < 10; i++) {
      byte[] payload = pattern(64, 20 + i);
      writeFrom(p, i, payload, dst.addr() + 64L * i, dst.rkey(), i % 2 == 1 ? SIGNALED : 0);
      System.arraycopy(payload, 0, expected, 64 * i, 64);
    }
    assertEquals(
        List.of(wc(1, OK), wc(3, OK), wc(5, OK), wc(7, OK), wc(9, OK)),
        summary(local.await(p.cq(), 5)));
    assertArrayEquals(expected, peer.read(dst));
    writeFrom(p, 20, pattern(64, 1), dst.addr(), dst.rkey() ^ 0x100, 0);
    assertEquals(List.of(wc(20, Ibv.WC_REM_ACCESS_ERR)), summary(local.await(p.cq(), 1)));
    assertArrayEquals(expected, peer.read(dst));

    Pair all = pair(64, true, 256, 7);
    ConformancePeer.Buffer dst2 = peer.register(256, REMOTE_RW, GUARD);
    for (int i = 0; i < 3; i++) {
      writeFrom(all, i, pattern(64, i), dst2.addr() + 64L * i, dst2.rkey(), 0);
    }
    assertEquals(List.of(wc(0, OK), wc(1, OK), wc(2, OK)), summary(local.await(all.cq(), 3)));
  }

  @Test
  void aCompletionChannelDeliversOneEventPerArmingAndIsBusyWhileACqIsOnIt() {
    Verbs.CompChannel ch = local.channel();
    Verbs.Cq cq = local.cq(16, ch);
    Pair p = pairOn(cq, 64, false, 7);
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    assertEquals(EAGAIN, local.cqEvent(ch).errno(), "not armed");
    assertOk(local.verbs.reqNotifyCq(cq, false));
    byte[] payload = pattern(64, 1);
    assertEquals(OK, writeStatus(p, payload, dst.addr(), dst.rkey()));
    assertEquals(cq.handle(), local.awaitCqEvent(ch).handle());
    assertEquals(EAGAIN, local.cqEvent(ch).errno(), "one event per arming");
    assertEquals(OK, writeStatus(p, payload, dst.addr() + 64, dst.rkey()));
    assertEquals(EAGAIN, local.cqEvent(ch).errno(), "armed once only");
    assertArrayEquals(guarded(256, 0, concat(payload, payload)), peer.read(dst));
    local.ackCqEvents(cq, 1);
    assertOk(local.destroyQp(p.qp()));
    assertEquals(EBUSY, local.destroyCompChannel(ch), "a CQ on the channel");
    assertOk(local.destroyCq(cq));
    assertOk(local.destroyCompChannel(ch));
  }

  // ------------------------------------------------------------------ QP state machine

  @Test
  void theQpStateMachineRefusesTheTransitionsTheIbTableForbids() {
    Verbs.Cq cq = local.cq(16);
    Verbs.Qp qp = local.rawQp(VerbsEnd.caps(cq, 8, false));
    Verbs.Mr mr = local.buffer(256, LOCAL, GUARD);
    List<Verbs.RecvWr> recv = List.of(new Verbs.RecvWr(5, List.of(sge(mr, 0, 64))));
    Verbs.QpAttr rtr = local.rtrAttrTo(peer.gid(), peer.lid(), peer.activeMtu(), 0x4242);
    Verbs.QpAttr rts = local.rtsAttrWith(7);
    assertEquals(Ibv.QPS_RESET, local.state(qp));
    assertEquals(EINVAL, modify(qp, rtr, VerbsEnd.RTR_MASK), "RESET to RTR");
    assertEquals(EINVAL, modify(qp, rts, VerbsEnd.RTS_MASK), "RESET to RTS");
    assertEquals(EINVAL, modify(qp, Verbs.QpAttr.state(Ibv.QPS_INIT), Ibv.QP_STATE), "no port");
    assertEquals(EINVAL, modify(qp, Verbs.QpAttr.state(Ibv.QPS_SQD), Ibv.QP_STATE));
    assertEquals(Ibv.QPS_RESET, local.state(qp));

    local.toInit(qp);
    assertEquals(Ibv.QPS_INIT, local.state(qp));
    assertEquals(Verbs.PostResult.ALL, local.verbs.postRecv(qp, recv), "receives post in INIT");
    assertEquals(EINVAL, modify(qp, rts, VerbsEnd.RTS_MASK), "INIT to RTS");
    assertEquals(
        EINVAL, modify(qp, rtr, Ibv.QP_STATE | Ibv.QP_DEST_QPN), "RTR without an AV and the rest");
    assertEquals(Ibv.QPS_INIT, local.state(qp));
    assertOk(modify(qp, rtr, VerbsEnd.RTR_MASK));
    assertEquals(Ibv.QPS_RTR, local.state(qp));
    assertEquals(EINVAL, modify(qp, Verbs.QpAttr.state(Ibv.QPS_INIT), Ibv.QP_STATE));
    assertOk(modify(qp, rts, VerbsEnd.RTS_MASK));
    assertEquals(EINVAL, modify(qp, rtr, VerbsEnd.RTR_MASK), "RTS to RTR");
    assertOk(modify(qp, Verbs.QpAttr.state(Ibv.QPS_RTS), Ibv.QP_STATE), "RTS to RTS");
    Verbs.QpAttr q =
        local
            .verbs
            .queryQp(
                qp,
                Ibv.QP_STATE
                    | Ibv.QP_DEST_QPN
                    | Ibv.QP_AV
                    | Ibv.QP_PATH_MTU
                    | Ibv.QP_TIMEOUT
                    | Ibv.QP_RNR_RETRY)
            .value();
    assertEquals(Ibv.QPS_RTS, q.qpState());
    assertEquals(0x4242, q.destQpNum());
    assertEquals(rtr.pathMtu(), q.pathMtu());
    assertEquals(rtr.av().dlid(), q.av().dlid());
    assertEquals(rtr.av().dgid(), q.av().dgid());
    assertEquals(local.ackTimeout(), q.timeout());
    assertEquals(7, q.rnrRetry());

    assertOk(modify(qp, Verbs.QpAttr.state(Ibv.QPS_ERR), Ibv.QP_STATE));
    assertEquals(List.of(wc(5, FLUSH)), summary(local.await(cq, 1)), "the INIT receive flushed");
    assertEquals(EINVAL, modify(qp, rts, VerbsEnd.RTS_MASK), "ERR to RTS");
    assertEquals(EINVAL, modify(qp, Verbs.QpAttr.state(Ibv.QPS_INIT), Ibv.QP_STATE));
    assertOk(modify(qp, Verbs.QpAttr.state(Ibv.QPS_RESET), Ibv.QP_STATE));
    assertEquals(Ibv.QPS_RESET, local.state(qp));
    local.toInit(qp);
    assertEquals(Ibv.QPS_INIT, local.state(qp));
  }

  protected int modify(Verbs.Qp qp, Verbs.QpAttr attr, int mask) {
    return local.verbs.modifyQp(qp, attr, mask);
  }

  // ------------------------------------------------------------------ destroy order

  @Test
  void destroysThatWouldLeaveADependentBehindAreRefusedEbusy() {
    Verbs.CompChannel ch = local.channel();
    Verbs.Cq cq = local.cq(8, ch);
    Verbs.Pd pd = local.newPd();
    Verbs.Mr mr = local.buffer(pd, 4096, LOCAL, GUARD);
    Verbs.Qp qp = local.rawQp(pd, VerbsEnd.caps(cq, 8, false));
    assertEquals(EBUSY, local.deallocPd(pd), "an MR and a QP on the PD");
    assertEquals(EBUSY, local.destroyCq(cq), "a QP using the CQ");
    assertEquals(EBUSY, local.destroyCompChannel(ch), "a CQ on the channel");
    assertOk(local.destroyQp(qp));
    assertEquals(EBUSY, local.deallocPd(pd), "the MR on the PD");
    assertOk(local.deregMr(mr));
    assertOk(local.deallocPd(pd));
    assertOk(local.destroyCq(cq));
    assertOk(local.destroyCompChannel(ch));
  }

  // ------------------------------------------------------------------ lost connections and unready
  // peers

  @Test
  void aLostConnectionFailsTheWrInFlightRetryExceededAndFlushesTheRest() {
    Pair p = pair();
    ConformancePeer.Buffer dst = peer.register(1024, REMOTE_RW, GUARD);
    byte[] first = pattern(64, 1);
    assertEquals(OK, writeStatus(p, first, dst.addr(), dst.rkey()));
    peer.destroyQp(p.peerQpn());
    for (int i = 2; i <= 4; i++) {
      writeFrom(p, i, pattern(64, i), dst.addr() + 64L * i, dst.rkey(), SIGNALED);
    }
    assertEquals(
        List.of(wc(2, Ibv.WC_RETRY_EXC_ERR), wc(3, FLUSH), wc(4, FLUSH)),
        summary(local.await(p.cq(), 3)));
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    assertArrayEquals(guarded(1024, 0, first), peer.read(dst));

    Pair q = pair();
    peer.destroyQp(q.peerQpn());
    assertEquals(
        Ibv.WC_RETRY_EXC_ERR,
        writeStatus(q, first, dst.addr() + 512, dst.rkey()),
        "a peer QP gone before the first post");
    assertArrayEquals(guarded(1024, 0, first), peer.read(dst));
  }

  @Test
  void aWriteToAPeerQpNotYetReadyToReceiveFailsRetryExceededAndTouchesNothing() {
    ConformancePeer.Buffer dst = peer.register(256, REMOTE_RW, GUARD);
    Verbs.Cq cq = local.cq(16);
    Verbs.Qp qp = local.qp(VerbsEnd.caps(cq, 8, false));
    int notReady = peer.createQp();
    connectTo(qp, notReady, 7);
    Verbs.Mr src = local.buffer(64, LOCAL, (byte) 1);
    local.post(qp, write(1, SIGNALED, sge(src, 0, 64), dst.addr(), dst.rkey()));
    assertEquals(
        List.of(wc(1, Ibv.WC_RETRY_EXC_ERR)), summary(local.await(cq, 1)), "the peer QP is INIT");
    assertEquals(Ibv.QPS_ERR, local.state(qp));
    assertEquals(Ibv.QPS_INIT, peer.qpState(notReady));
    assertArrayEquals(guards(256), peer.read(dst));
  }
}
