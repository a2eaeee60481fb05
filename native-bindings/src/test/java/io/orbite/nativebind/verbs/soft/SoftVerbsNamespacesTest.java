package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.nativebind.testkit.Prerequisite;
import io.orbite.nativebind.verbs.ConformancePeer;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Two soft RDMA hosts: each end a {@link SoftVerbs} in a child JVM of its own, each in a network
 * namespace of its own (neither in the root namespace), joined by a veth pair; the GIDs name the
 * namespaces' addresses. READ, WRITE and SEND move exactly their bytes between guards; a window on
 * one host authorizes exactly its range; taking the veth link down is a real link loss: a WRITE
 * fails {@code WC_RETRY_EXC_ERR} with the target untouched, and once the link is up again fresh QPs
 * carry bytes.
 */
class SoftVerbsNamespacesTest {
  private static final byte GUARD = (byte) 0x5A;
  private static final int RW =
      Ibv.ACCESS_LOCAL_WRITE
          | Ibv.ACCESS_REMOTE_WRITE
          | Ibv.ACCESS_REMOTE_READ
          | Ibv.ACCESS_MW_BIND;

  private final long id = ProcessHandle.current().pid() % 100_000;
  private final String nsA = "orbvA" + id;
  private final String nsB = "orbvB" + id;
  private final String linkA = "rva" + id;
  private final String linkB = "rvb" + id;
  private final String subnet = "10.78." + (20 + id % 200) + ".";
  private ProcessPeer a;
  private ProcessPeer b;

  @BeforeEach
  void twoHosts() throws Exception {
    Prerequisite.require(
        status("ip", "netns", "add", nsA) == 0,
        "ip netns is unusable here (it needs root and iproute2: apt-get install iproute2;"
            + " .ci/run and ./orbite test install it as root), so soft RDMA between two network"
            + " namespaces cannot be tested");
    sh("ip", "netns", "add", nsB);
    sh("ip", "link", "add", linkA, "type", "veth", "peer", "name", linkB);
    sh("ip", "link", "set", linkA, "netns", nsA);
    sh("ip", "link", "set", linkB, "netns", nsB);
    sh("ip", "-n", nsA, "addr", "add", subnet + "1/24", "dev", linkA);
    sh("ip", "-n", nsB, "addr", "add", subnet + "2/24", "dev", linkB);
    for (String[] l : new String[][] {{nsA, linkA}, {nsB, linkB}, {nsA, "lo"}, {nsB, "lo"}}) {
      sh("ip", "-n", l[0], "link", "set", l[1], "up");
    }
    for (String ns : List.of(nsA, nsB)) {
      String routes = sh("ip", "-n", ns, "route");
      assertFalse(routes.contains("default"), ns + " must have no default route: " + routes);
    }
    a = new ProcessPeer(List.of("ip", "netns", "exec", nsA), subnet + "1");
    b = new ProcessPeer(List.of("ip", "netns", "exec", nsB), subnet + "2");
  }

  @AfterEach
  void tearDown() throws Exception {
    try {
      for (ProcessPeer p : new ProcessPeer[] {a, b}) {
        if (p != null) {
          p.close();
        }
      }
    } finally {
      status("ip", "netns", "del", nsA);
      status("ip", "netns", "del", nsB);
    }
  }

  /** A's QP and B's QP, connected to each other in RTS. */
  private int[] connect() {
    int qa = a.createQp();
    int qb = b.createQp();
    a.connect(qa, b, qb);
    b.connect(qb, a, qa);
    return new int[] {qa, qb};
  }

  @Test
  void theGidsNameEachNamespacesAddress() {
    assertEquals(subnet + "1", SoftGid.decode(a.gid()).orElseThrow().getAddress().getHostAddress());
    assertEquals(subnet + "2", SoftGid.decode(b.gid()).orElseThrow().getAddress().getHostAddress());
  }

  @Test
  void readWriteAndSendMoveExactlyTheirBytesBetweenGuardsAcrossTheLink() {
    int[] q = connect();
    ConformancePeer.Buffer local = a.register(1 << 16, RW, GUARD);
    ConformancePeer.Buffer remote = b.register(1 << 16, RW, GUARD);
    byte[] payload = pattern(20_000, 3);
    a.write(local, 0, payload);
    Verbs.Wc w =
        a.post(
            q[0],
            Ibv.WR_RDMA_WRITE,
            local,
            0,
            payload.length,
            remote.addr() + 1000,
            remote.rkey(),
            0);
    assertEquals(Ibv.WC_SUCCESS, w.status(), w::toString);
    assertEquals(Ibv.WC_RDMA_WRITE, w.opcode());
    assertRange(b.read(remote), 1000, payload, "WRITE target");

    byte[] back = pattern(7_777, 5);
    b.write(remote, 40_000, back);
    Verbs.Wc r =
        a.post(
            q[0],
            Ibv.WR_RDMA_READ,
            local,
            30_000,
            back.length,
            remote.addr() + 40_000,
            remote.rkey(),
            0);
    assertEquals(Ibv.WC_SUCCESS, r.status(), r::toString);
    byte[] expectLocal = filled(1 << 16);
    System.arraycopy(payload, 0, expectLocal, 0, payload.length);
    System.arraycopy(back, 0, expectLocal, 30_000, back.length);
    assertArrayEquals(expectLocal, a.read(local), "READ destination: payload, then guards");

    ConformancePeer.Buffer inbox = b.register(8192, RW, GUARD);
    b.postRecv(q[1], 77, inbox, 100, 4096);
    Verbs.Wc s = a.post(q[0], Ibv.WR_SEND, local, 30_000, 3000, 0, 0, 0);
    assertEquals(Ibv.WC_SUCCESS, s.status(), s::toString);
    Verbs.Wc got = b.recvCompletions(q[1], 1).getFirst();
    assertEquals(77, got.wrId());
    assertEquals(Ibv.WC_SUCCESS, got.status());
    assertEquals(3000, got.byteLen());
    assertRange(b.read(inbox), 100, Arrays.copyOf(back, 3000), "SEND receive buffer");
  }

  @Test
  void aWindowOnTheOtherHostAuthorizesExactlyItsRange() {
    int[] q = connect();
    ConformancePeer.Buffer local = a.register(8192, RW, GUARD);
    ConformancePeer.Buffer remote = b.register(8192, RW, GUARD);
    byte[] payload = pattern(1024, 9);
    a.write(local, 0, payload);
    int rkey = b.bindMw(q[1], remote, 2048, 1024, Ibv.ACCESS_REMOTE_WRITE);
    Verbs.Wc ok = a.post(q[0], Ibv.WR_RDMA_WRITE, local, 0, 1024, remote.addr() + 2048, rkey, 0);
    assertEquals(Ibv.WC_SUCCESS, ok.status(), ok::toString);
    assertRange(b.read(remote), 2048, payload, "inside the window");
    byte[] before = b.read(remote);
    Verbs.Wc outside =
        a.post(q[0], Ibv.WR_RDMA_WRITE, local, 0, 1024, remote.addr() + 2049, rkey, 0);
    assertEquals(Ibv.WC_REM_ACCESS_ERR, outside.status(), outside::toString);
    assertArrayEquals(before, b.read(remote), "one byte past the window: nothing lands");
    assertEquals(Ibv.QPS_ERR, a.qpState(q[0]));
  }

  @Test
  void aLinkTakenDownFailsTheWriteRetryExceededWithTheTargetUntouchedAndFreshQpsWorkAfter()
      throws Exception {
    int[] q = connect();
    ConformancePeer.Buffer local = a.register(8192, RW, GUARD);
    ConformancePeer.Buffer remote = b.register(8192, RW, GUARD);
    byte[] first = pattern(512, 1);
    a.write(local, 0, first);
    // The connection is open and carries bytes before the link goes.
    assertEquals(
        Ibv.WC_SUCCESS,
        a.post(q[0], Ibv.WR_RDMA_WRITE, local, 0, 512, remote.addr(), remote.rkey(), 0).status());
    byte[] expected = b.read(remote);
    assertRange(expected, 0, first, "before the link loss");

    sh("ip", "-n", nsA, "link", "set", linkA, "down");
    byte[] second = pattern(512, 2);
    a.write(local, 1024, second);
    Verbs.Wc lost =
        a.post(q[0], Ibv.WR_RDMA_WRITE, local, 1024, 512, remote.addr() + 4096, remote.rkey(), 0);
    assertEquals(Ibv.WC_RETRY_EXC_ERR, lost.status(), lost::toString);
    assertEquals(Ibv.QPS_ERR, a.qpState(q[0]));
    assertArrayEquals(expected, b.read(remote), "nothing crossed a link that was down");

    sh("ip", "-n", nsA, "link", "set", linkA, "up");
    a.destroyQp(q[0]);
    b.destroyQp(q[1]);
    int[] fresh = connect();
    byte[] third = pattern(512, 3);
    a.write(local, 2048, third);
    Verbs.Wc again =
        a.post(
            fresh[0], Ibv.WR_RDMA_WRITE, local, 2048, 512, remote.addr() + 6144, remote.rkey(), 0);
    assertEquals(Ibv.WC_SUCCESS, again.status(), again::toString);
    assertRange(slice(b.read(remote), 6144 - 1, 514), 1, third, "after the link is back");
  }

  private static byte[] pattern(int n, int seed) {
    byte[] p = new byte[n];
    for (int i = 0; i < n; i++) {
      p[i] = (byte) (i * 31 + seed * 7 + 1);
      if (p[i] == GUARD) {
        p[i] ^= 1;
      }
    }
    return p;
  }

  private static byte[] filled(int n) {
    byte[] f = new byte[n];
    Arrays.fill(f, GUARD);
    return f;
  }

  private static byte[] slice(byte[] all, int from, int n) {
    return Arrays.copyOfRange(all, from, from + n);
  }

  /** {@code payload} at {@code offset}, every other byte of {@code all} the guard. */
  private static void assertRange(byte[] all, int offset, byte[] payload, String what) {
    byte[] expected = filled(all.length);
    System.arraycopy(payload, 0, expected, offset, payload.length);
    assertArrayEquals(expected, all, what + ": the payload at " + offset + ", guards elsewhere");
  }

  private static String sh(String... cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "timed out: " + String.join(" ", cmd));
    assertEquals(0, p.exitValue(), String.join(" ", cmd) + ": " + out);
    return out;
  }

  private static int status(String... cmd) throws IOException, InterruptedException {
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      return -1;
    }
    return p.exitValue();
  }
}
