package io.orbite.nativebind.verbs;

import static io.orbite.nativebind.verbs.VerbsEnd.read;
import static io.orbite.nativebind.verbs.VerbsEnd.sge;
import static io.orbite.nativebind.verbs.VerbsEnd.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.orbite.nativebind.Errno;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * The two ends of a conformance test and its helpers: the local end is a {@link VerbsEnd} of type
 * {@code L} (any provider; the soft suite's has a fault table), the far end a {@link
 * ConformancePeer} reachable only over the wire; the subclass opens both, once per test, and both
 * are closed after it ({@link #afterClose} then runs, for a provider's own checks).
 */
public abstract class ConformanceSupport<L extends VerbsEnd> {
  protected static final byte GUARD = (byte) 0xA5;
  protected static final int LOCAL = Ibv.ACCESS_LOCAL_WRITE;
  protected static final int REMOTE_RW =
      Ibv.ACCESS_LOCAL_WRITE | Ibv.ACCESS_REMOTE_WRITE | Ibv.ACCESS_REMOTE_READ;
  protected static final int OK = Ibv.WC_SUCCESS;
  protected static final int FLUSH = Ibv.WC_WR_FLUSH_ERR;

  protected L local;
  protected ConformancePeer peer;

  /** The local end, opened once per test (first); it may skip the test with an assumption. */
  protected abstract L openLocal();

  /** The far end, opened once per test (after the local end). */
  protected abstract ConformancePeer openPeer();

  /** What to check once both ends are closed: nothing here. */
  protected void afterClose() {}

  @BeforeEach
  void openEnds() {
    local = openLocal();
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
    afterClose();
  }

  /** A local QP and a peer QP connected to each other; the local QP's CQ. */
  protected record Pair(Verbs.Qp qp, Verbs.Cq cq, int peerQpn) {}

  protected Pair pair() {
    return pair(64, false, 256, 7);
  }

  protected Pair pair(int maxSendWr, boolean sigAll, int cqe, int rnrRetry) {
    return pairOn(local.cq(cqe), maxSendWr, sigAll, rnrRetry);
  }

  protected Pair pairOn(Verbs.Cq cq, int maxSendWr, boolean sigAll, int rnrRetry) {
    Verbs.Qp qp = local.qp(VerbsEnd.caps(cq, maxSendWr, sigAll));
    int peerQpn = peer.createQp();
    peer.connect(peerQpn, local.gid(), local.lid(), local.activeMtu(), qp.qpNum());
    connectTo(qp, peerQpn, rnrRetry);
    return new Pair(qp, cq, peerQpn);
  }

  /** Moves the local {@code qp} (in INIT) to RTS toward peer QP {@code peerQpn}. */
  protected void connectTo(Verbs.Qp qp, int peerQpn, int rnrRetry) {
    local.connect(qp, peer.gid(), peer.lid(), peer.activeMtu(), peerQpn, rnrRetry);
  }

  /** {@code n} bytes that differ from their neighbours and from {@link #GUARD}'s run. */
  protected static byte[] pattern(int n, int seed) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) (seed + i * 7 + (i >>> 8));
    }
    return b;
  }

  /** A buffer of {@code size} guard bytes with {@code payload} at {@code offset}. */
  protected static byte[] guarded(int size, int offset, byte[] payload) {
    byte[] b = new byte[size];
    Arrays.fill(b, GUARD);
    System.arraycopy(payload, 0, b, offset, payload.length);
    return b;
  }

  protected static byte[] guards(int size) {
    return guarded(size, 0, new byte[0]);
  }

  protected static byte[] concat(byte[] a, byte[] b) {
    byte[] c = new byte[a.length + b.length];
    System.arraycopy(a, 0, c, 0, a.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }

  protected static byte[] slice(byte[] a, int from, int length) {
    byte[] c = new byte[length];
    System.arraycopy(a, from, c, 0, length);
    return c;
  }

  /** "wrId:status" of each completion, for order checks. */
  protected static List<String> summary(List<Verbs.Wc> wcs) {
    List<String> s = new ArrayList<>();
    for (Verbs.Wc wc : wcs) {
      s.add(wc.wrId() + ":" + wc.status());
    }
    return s;
  }

  protected static String wc(long wrId, int status) {
    return wrId + ":" + status;
  }

  /** Posts a WRITE of {@code payload} from a fresh local buffer with {@code flags}. */
  protected void writeFrom(
      Pair p, long wrId, byte[] payload, long remoteAddr, int rkey, int flags) {
    Verbs.Mr src = local.buffer(payload.length, LOCAL, (byte) 0);
    local.put(src, 0, payload);
    local.post(p.qp(), write(wrId, flags, sge(src, 0, payload.length), remoteAddr, rkey));
  }

  /** One signaled WRITE, awaited: its completion's status. */
  protected int writeStatus(Pair p, byte[] payload, long remoteAddr, int rkey) {
    writeFrom(p, 1, payload, remoteAddr, rkey, Ibv.SEND_SIGNALED);
    Verbs.Wc wc = local.await(p.cq(), 1).get(0);
    assertEquals(1, wc.wrId());
    return wc.status();
  }

  /** One signaled READ of {@code length} bytes into a fresh guarded buffer, awaited. */
  protected int readStatus(Pair p, int length, long remoteAddr, int rkey) {
    Verbs.Mr dst = local.buffer(length, LOCAL, GUARD);
    local.post(p.qp(), read(1, Ibv.SEND_SIGNALED, sge(dst, 0, length), remoteAddr, rkey));
    Verbs.Wc wc = local.await(p.cq(), 1).get(0);
    if (wc.status() != OK) {
      assertArrayEquals(
          guards(length), local.bytes(dst), "a failed READ leaves the SGEs as they were");
    }
    return wc.status();
  }

  protected static void assertOk(int rc) {
    assertOk(rc, "");
  }

  protected static void assertOk(int rc, String what) {
    assertEquals(0, rc, () -> what + " answered " + Errno.describe(rc));
  }

  protected static void assertPostFailed(Verbs.PostResult r, Errno errno, int badIndex) {
    assertFalse(r.posted());
    assertEquals(new Verbs.PostResult(errno.number(), badIndex), r);
  }
}
