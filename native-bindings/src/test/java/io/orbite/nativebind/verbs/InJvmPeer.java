package io.orbite.nativebind.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.verbs.soft.SoftFabric;
import io.orbite.nativebind.verbs.soft.SoftVerbs;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * A peer in this JVM over any {@link Verbs} table: a {@link VerbsEnd} of its own (its own context
 * on a device, port and GID index, its own PD, one send CQ and one receive CQ for all its QPs),
 * reached by the local end only over the wire. Over {@link NativeVerbs} it may open the same device
 * as the local end (RC loopback through one HCA) or another one; {@link #InJvmPeer(String)} makes
 * it a second {@code SoftVerbs} with its own fabric and device, which is also what the soft suite's
 * child process runs.
 */
public final class InJvmPeer implements ActivePeer {
  private final VerbsEnd end;
  private final Verbs verbs;
  private final Verbs.Cq sendCq;
  private final Verbs.Cq recvCq;
  private final List<Verbs.Qp> qps = new ArrayList<>();
  private final List<Verbs.Mr> mrs = new ArrayList<>();
  private final List<Verbs.Wc> unclaimed = new ArrayList<>();
  private long nextWrId = 1L << 40;

  /** A peer on {@code device} of {@code verbs}, speaking from {@code port} and {@code gidIndex}. */
  public InJvmPeer(Verbs verbs, Verbs.Device device, int port, int gidIndex) {
    this(new VerbsEnd(verbs, device, port, gidIndex));
  }

  /** A peer that is a second {@code SoftVerbs} (its own fabric, one device on {@code ipv4}). */
  public InJvmPeer(String ipv4) {
    this(softEnd(ipv4));
  }

  private InJvmPeer(VerbsEnd end) {
    this.end = end;
    this.verbs = end.verbs;
    sendCq = end.cq(1024);
    recvCq = end.cq(1024);
  }

  /** The soft suite's ACK timeout (17: a 4.3 s retry budget on a loaded runner). */
  private static VerbsEnd softEnd(String ipv4) {
    SoftVerbs soft = SoftVerbs.create(SoftFabric.onAddress(ipv4, 1));
    return new VerbsEnd(soft, soft.getDeviceList().value().get(0), 1, 0, 17);
  }

  private Verbs.Qp qp(int qpn) {
    for (Verbs.Qp qp : qps) {
      if (qp.qpNum() == qpn) {
        return qp;
      }
    }
    throw new AssertionError("peer has no QP " + qpn);
  }

  @Override
  public Verbs.Gid gid() {
    return end.gid();
  }

  @Override
  public int lid() {
    return end.lid();
  }

  @Override
  public int activeMtu() {
    return end.activeMtu();
  }

  @Override
  public int createQp() {
    Verbs.Qp qp = end.qp(new Verbs.QpInitAttr(sendCq, recvCq, 256, 256, 4, 4, 64, false));
    qps.add(qp);
    return qp.qpNum();
  }

  @Override
  public void connect(int qpn, Verbs.Gid remoteGid, int remoteLid, int remoteMtu, int remoteQpn) {
    end.connect(qp(qpn), remoteGid, remoteLid, remoteMtu, remoteQpn, 7);
  }

  @Override
  public Buffer register(int length, int access, byte fill) {
    Verbs.Mr mr = end.buffer(length, access, fill);
    mrs.add(mr);
    return new Buffer(mrs.size() - 1, mr.addr(), mr.rkey(), length);
  }

  @Override
  public void write(Buffer buffer, int offset, byte[] bytes) {
    end.put(mrs.get(buffer.id()), offset, bytes);
  }

  @Override
  public byte[] read(Buffer buffer) {
    return end.bytes(mrs.get(buffer.id()));
  }

  @Override
  public void deregister(Buffer buffer) {
    assertEquals(0, end.deregMr(mrs.get(buffer.id())));
  }

  @Override
  public void postRecv(int qpn, long wrId, Buffer buffer, int offset, int length) {
    Verbs.Mr mr = mrs.get(buffer.id());
    Verbs.PostResult r =
        verbs.postRecv(
            qp(qpn),
            List.of(
                new Verbs.RecvWr(
                    wrId, List.of(new Verbs.Sge(mr.addr() + offset, length, mr.lkey())))));
    assertTrue(r.posted(), () -> "peer postRecv: " + r);
  }

  @Override
  public int bindMw(int qpn, Buffer buffer, int offset, int length, int access) {
    Verbs.Mw mw = end.mw();
    Verbs.Mr mr = mrs.get(buffer.id());
    int rkey = Ibv.incRkey(mw.rkey());
    long wrId = nextWrId++;
    Verbs.PostResult r =
        verbs.postSend(
            qp(qpn),
            List.of(
                Verbs.SendWr.bindMw(
                    wrId,
                    Ibv.SEND_SIGNALED,
                    new Verbs.MwBind(mw, rkey, mr, mr.addr() + offset, length, access))));
    assertTrue(r.posted(), () -> "peer bind: " + r);
    Verbs.Wc wc = VerbsEnd.await(verbs, sendCq, 1).get(0);
    assertEquals(wrId, wc.wrId());
    assertEquals(Ibv.WC_SUCCESS, wc.status(), "peer bind status");
    return rkey;
  }

  @Override
  public int localInvalidate(int qpn, int rkey) {
    long wrId = nextWrId++;
    Verbs.PostResult r =
        verbs.postSend(
            qp(qpn),
            List.of(
                new Verbs.SendWr(
                    wrId, Ibv.WR_LOCAL_INV, Ibv.SEND_SIGNALED, List.of(), 0, 0, rkey, null)));
    assertTrue(r.posted(), () -> "peer local invalidate: " + r);
    Verbs.Wc wc = VerbsEnd.await(verbs, sendCq, 1).get(0);
    assertEquals(wrId, wc.wrId());
    return wc.status();
  }

  @Override
  public List<Verbs.Wc> recvCompletions(int qpn, int n) {
    long deadline = System.nanoTime() + VerbsEnd.WAIT_NANOS;
    List<Verbs.Wc> got = new ArrayList<>();
    Verbs.Wc[] out = new Verbs.Wc[16];
    while (true) {
      Iterator<Verbs.Wc> it = unclaimed.iterator();
      while (it.hasNext() && got.size() < n) {
        Verbs.Wc wc = it.next();
        if (wc.qpNum() == qpn) {
          got.add(wc);
          it.remove();
        }
      }
      if (got.size() == n) {
        return got;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("peer: " + got.size() + " of " + n + " receive completions");
      }
      int k = verbs.pollCq(recvCq, out);
      assertTrue(k >= 0, "peer pollCq " + k);
      for (int i = 0; i < k; i++) {
        unclaimed.add(out[i]);
      }
      if (k == 0) {
        VerbsEnd.pause();
      }
    }
  }

  @Override
  public Verbs.Wc post(
      int qpn,
      int opcode,
      Buffer local,
      int offset,
      int length,
      long remoteAddr,
      int rkey,
      int imm) {
    Verbs.Mr mr = mrs.get(local.id());
    long wrId = nextWrId++;
    Verbs.PostResult r =
        verbs.postSend(
            qp(qpn),
            List.of(
                new Verbs.SendWr(
                    wrId,
                    opcode,
                    Ibv.SEND_SIGNALED,
                    List.of(new Verbs.Sge(mr.addr() + offset, length, mr.lkey())),
                    remoteAddr,
                    rkey,
                    imm,
                    null)));
    assertTrue(r.posted(), () -> "peer post: " + r);
    // Long enough for the retry timeout (4.096 us x 2^17 x 8 tries, 4.3 s) of a lost link.
    Verbs.Wc wc = VerbsEnd.await(verbs, sendCq, 1, 3 * VerbsEnd.WAIT_NANOS).get(0);
    assertEquals(wrId, wc.wrId());
    return wc;
  }

  @Override
  public int qpState(int qpn) {
    return end.state(qp(qpn));
  }

  @Override
  public void destroyQp(int qpn) {
    Verbs.Qp qp = qp(qpn);
    assertEquals(0, end.destroyQp(qp));
    qps.remove(qp);
  }

  @Override
  public void close() {
    end.close();
  }
}
