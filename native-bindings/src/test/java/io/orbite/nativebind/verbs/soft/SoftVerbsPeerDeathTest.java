package io.orbite.nativebind.verbs.soft;

import static io.orbite.nativebind.verbs.VerbsEnd.read;
import static io.orbite.nativebind.verbs.VerbsEnd.sge;
import static io.orbite.nativebind.verbs.VerbsEnd.write;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.nativebind.verbs.ConformancePeer;
import io.orbite.nativebind.verbs.ConformanceSupport;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A peer process that dies: the far end is a {@link SoftVerbs} in a child JVM, SIGKILLed between
 * two transfers. The kernel closes its sockets as it reaps it, so the local requester's next work
 * request fails {@code WC_RETRY_EXC_ERR} (the next flushed), the QP goes to ERR, and a READ that
 * failed brought nothing into its local buffer.
 */
class SoftVerbsPeerDeathTest extends ConformanceSupport<SoftLocalEnd> {
  @Override
  protected SoftLocalEnd openLocal() {
    return new SoftLocalEnd("127.0.0.1");
  }

  @Override
  protected ConformancePeer openPeer() {
    return new ProcessPeer(List.of(), "127.0.0.1");
  }

  @Override
  protected void afterClose() {
    SoftVerbsConformance.assertNoSoftThreads();
  }

  @Test
  void aKilledPeerFailsTheNextReadRetryExceededFlushesTheRestAndBringsNothing() throws Exception {
    Pair p = pair();
    ConformancePeer.Buffer remote = peer.register(8192, REMOTE_RW, GUARD);
    Verbs.Mr src = local.buffer(8192, LOCAL, (byte) 0);
    byte[] payload = pattern(3000, 4);
    local.put(src, 0, payload);
    local.post(
        p.qp(), write(1, Ibv.SEND_SIGNALED, sge(src, 0, 3000), remote.addr() + 100, remote.rkey()));
    assertEquals(List.of(wc(1, OK)), summary(local.await(p.cq(), 1)));
    assertArrayEquals(guarded(8192, 100, payload), peer.read(remote), "before the kill");

    ((ProcessPeer) peer).kill();
    Verbs.Mr back = local.buffer(8192, LOCAL, GUARD);
    local.post(
        p.qp(),
        read(2, Ibv.SEND_SIGNALED, sge(back, 0, 3000), remote.addr() + 100, remote.rkey()),
        write(3, Ibv.SEND_SIGNALED, sge(src, 0, 3000), remote.addr(), remote.rkey()));
    assertEquals(
        List.of(wc(2, Ibv.WC_RETRY_EXC_ERR), wc(3, FLUSH)), summary(local.await(p.cq(), 2)));
    assertEquals(Ibv.QPS_ERR, local.state(p.qp()));
    assertArrayEquals(guards(8192), local.bytes(back), "a failed READ brings nothing");
  }
}
