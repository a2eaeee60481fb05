package io.orbite.nativebind.verbs.soft;

import static io.orbite.nativebind.verbs.soft.SoftLocalEnd.read;
import static io.orbite.nativebind.verbs.soft.SoftLocalEnd.sge;
import static io.orbite.nativebind.verbs.soft.SoftLocalEnd.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * The two ends of a conformance test and its helpers: the local end is a {@link SoftVerbs} (with
 * its fault table), the far end a {@link ConformancePeer} reachable only over the wire, opened by
 * the subclass. After each test both are closed and no {@code soft-} thread may remain.
 */
abstract class ConformanceSupport {
  static final byte GUARD = (byte) 0xA5;
  static final int LOCAL = Ibv.ACCESS_LOCAL_WRITE;
  static final int REMOTE_RW =
      Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ;

  protected SoftLocalEnd local;
  protected ConformancePeer peer;

  /** The far end, opened once per test. */
  protected abstract ConformancePeer openPeer();

  /** The IPv4 address the local device binds. */
  protected String localAddress() {
    return "127.0.0.1";
  }

  @BeforeEach
  void openEnds() {
    local = new SoftLocalEnd(localAddress());
    peer = openPeer();
  }

  @AfterEach
  void closeEnds() {
    try {
      if (peer != null) {
        peer.close();
      }
    } finally {
      if (local != null) {
        local.close();
      }
    }
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

  /** A local QP and a peer QP connected to each other; the local QP's CQ. */
  record Pair(Verbs.Qp qp, Verbs.Cq cq, int peerQpn) {}

  Pair pair() {
    return pair(64, false, 256, 7);
  }

  Pair pair(int maxSendWr, boolean sigAll, int cqe, int rnrRetry) {
    return pairOn(local.cq(cqe), maxSendWr, sigAll, rnrRetry);
  }

  Pair pairOn(Verbs.Cq cq, int maxSendWr, boolean sigAll, int rnrRetry) {
    Verbs.Qp qp = local.qp(SoftLocalEnd.caps(cq, maxSendWr, sigAll));
    int peerQpn = peer.createQp();
    peer.connect(peerQpn, local.gid(), qp.qpNum());
    SoftLocalEnd.toRts(local.verbs, qp, peer.gid(), peerQpn, rnrRetry);
    return new Pair(qp, cq, peerQpn);
  }

  /** {@code n} bytes that differ from their neighbours and from {@link #GUARD}'s run. */
  static byte[] pattern(int n, int seed) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) (seed + i * 7 + (i >>> 8));
    }
    return b;
  }

  /** A buffer of {@code size} guard bytes with {@code payload} at {@code offset}. */
  static byte[] guarded(int size, int offset, byte[] payload) {
    byte[] b = new byte[size];
    Arrays.fill(b, GUARD);
    System.arraycopy(payload, 0, b, offset, payload.length);
    return b;
  }

  static byte[] guards(int size) {
    return guarded(size, 0, new byte[0]);
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] c = new byte[a.length + b.length];
    System.arraycopy(a, 0, c, 0, a.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }

  static byte[] slice(byte[] a, int from, int length) {
    byte[] c = new byte[length];
    System.arraycopy(a, from, c, 0, length);
    return c;
  }

  /** "wrId:status" of each completion, for order checks. */
  static List<String> summary(List<Verbs.Wc> wcs) {
    List<String> s = new ArrayList<>();
    for (Verbs.Wc wc : wcs) {
      s.add(wc.wrId() + ":" + wc.status());
    }
    return s;
  }

  static String wc(long wrId, int status) {
    return wrId + ":" + status;
  }

  static final int OK = Ibv.WC_SUCCESS;
  static final int FLUSH = Ibv.WC_WR_FLUSH_ERR;

  /** Posts a signaled WRITE of {@code payload} from a fresh local buffer; returns its wrId. */
  void writeFrom(Pair p, long wrId, byte[] payload, long remoteAddr, int rkey, int flags) {
    Verbs.Mr src = local.buffer(payload.length, LOCAL, (byte) 0);
    local.put(src, 0, payload);
    local.post(p.qp(), write(wrId, flags, sge(src, 0, payload.length), remoteAddr, rkey));
  }

  /** One signaled WRITE, awaited: its completion's status. */
  int writeStatus(Pair p, byte[] payload, long remoteAddr, int rkey) {
    writeFrom(p, 1, payload, remoteAddr, rkey, Ibv.SEND_SIGNALED);
    Verbs.Wc wc = local.await(p.cq(), 1).get(0);
    assertEquals(1, wc.wrId());
    return wc.status();
  }

  /** One signaled READ of {@code length} bytes into a fresh guarded buffer, awaited. */
  int readStatus(Pair p, int length, long remoteAddr, int rkey) {
    Verbs.Mr dst = local.buffer(length, LOCAL, GUARD);
    local.post(p.qp(), read(1, Ibv.SEND_SIGNALED, sge(dst, 0, length), remoteAddr, rkey));
    Verbs.Wc wc = local.await(p.cq(), 1).get(0);
    if (wc.status() != OK) {
      assertArrayEquals(
          guards(length), local.bytes(dst), "a failed READ leaves the SGEs as they were");
    }
    return wc.status();
  }

  static void assertOk(int rc) {
    assertOk(rc, "");
  }

  static void assertOk(int rc, String what) {
    assertEquals(0, rc, () -> what + " answered " + Errno.describe(rc));
  }

  static void assertPostFailed(Verbs.PostResult r, Errno errno, int badIndex) {
    assertFalse(r.posted());
    assertEquals(new Verbs.PostResult(errno.number(), badIndex), r);
  }
}
