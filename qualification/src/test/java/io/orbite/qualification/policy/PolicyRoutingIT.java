package io.orbite.qualification.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineCounters;
import io.orbite.engine.Op;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.Route;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.RegionCheck;
import io.orbite.qualification.verify.Span;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * First-match transport policies between engines in separate processes on one host: a source
 * process that offers both SHM (its allocations are exported) and TCP, and requesters whose
 * policies say "size up to 64 KiB → SHM, larger → TCP". One requester runs in this JVM, configured
 * from strict JSON; another is an engine process configured through {@code ORBITE_CONF}. Every byte
 * of both regions is checked, payload and guard; the per-transport counters of the requester and of
 * the source prove where each task went, and each task's result names the rule that chose it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PolicyRoutingIT {
  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  static Path logs;

  private static final long REGION = 16L << 20;
  private static final long SMALL = 64 * 1024;

  /** Rule 0: up to 64 KiB over SHM only; rule 1: larger over TCP. */
  private static final String POLICIES =
      "\"policies\":["
          + "{\"match\":{\"maxBytes\":65536},\"choose\":{\"transports\":[\"SHM\"]}},"
          + "{\"match\":{\"minBytes\":65537},\"choose\":{\"transports\":[\"TCP\"]}}]";

  private EngineProcess source;
  private TransferEngine requester;
  private long remote;
  private RegisteredMemory local;
  private RemoteSegment peer;

  @BeforeAll
  void start() throws Exception {
    source =
        EngineProcess.start(
            "policy-source", logs, Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}"));
    remote = Long.parseLong(source.call("ALLOC " + REGION + " READ_WRITE"));
    requester =
        TransferEngine.start(
            EngineConfig.fromJson("{\"name\":\"policy-requester\"," + POLICIES + "}"));
    local = requester.allocate(REGION, Access.READ_WRITE);
    peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(10));
    assertTrue(peer.sharedReachable(remote), "the source offers SHM for its allocation");
  }

  @AfterAll
  void stop() {
    try {
      if (requester != null) {
        requester.close(Duration.ofSeconds(20));
      }
    } finally {
      if (source != null) {
        source.close();
      }
    }
  }

  /** One task: where, how long, which way, and whether it names TCP itself. */
  private record Task(Op op, long localOffset, long remoteOffset, long length, boolean namedTcp) {
    static Task read(long l, long r, long n) {
      return new Task(Op.READ, l, r, n, false);
    }

    static Task write(long l, long r, long n) {
      return new Task(Op.WRITE, l, r, n, false);
    }

    boolean small() {
      return length <= SMALL;
    }
  }

  /**
   * READs and WRITEs, small and large, at unaligned offsets, interleaved; no two local or remote
   * ranges overlap, and no READ's remote range is a WRITE's. The 64 KiB boundary is on both sides.
   */
  private static final List<Task> MIX =
      List.of(
          Task.read(4093, 7, 4096 + 5),
          Task.write(8_400_013, 8_500_003, SMALL + 1),
          Task.read(300_007, 400_009, SMALL + 1),
          Task.write(8_000_003, 8_100_001, 4096),
          Task.read(20_001, 30_003, 1),
          Task.write(9_000_001, 10_000_003, (2L << 20) + 5),
          Task.read(1_000_003, 1_500_011, (1L << 20) + 13),
          Task.write(8_200_001, 8_300_007, SMALL),
          Task.read(100_003, 200_001, SMALL),
          Task.write(13_000_000, 13_000_001, 777),
          Task.read(3_000_001, 3_000_017, 3L << 20),
          new Task(Op.READ, 14_000_001, 14_000_003, 1000, true));

  @Test
  void smallTasksGoShmLargeGoTcpByTheRulesAndEveryByteIsRight() throws Exception {
    long remoteSeed = 0x5eed_0001L;
    long localSeed = 0x5eed_0002L;
    source.call("FILL " + remote + " " + remoteSeed);
    Pattern.fill(local.segment(), 0, REGION, localSeed, 0);

    List<TransferRequest> requests = new ArrayList<>();
    List<Span> localSpans = new ArrayList<>();
    List<Span> remoteSpans = new ArrayList<>();
    long shmRead = 0;
    long shmWritten = 0;
    long tcpRead = 0;
    long tcpWritten = 0;
    int shmTasks = 0;
    int tcpTasks = 0;
    for (Task t : MIX) {
      TransferRequest r =
          t.op() == Op.READ
              ? TransferRequest.read(
                  local, t.localOffset(), peer, remote, t.remoteOffset(), t.length())
              : TransferRequest.write(
                  local, t.localOffset(), peer, remote, t.remoteOffset(), t.length());
      requests.add(t.namedTcp() ? r.withTransport(Transport.TCP) : r);
      boolean shm = t.small() && !t.namedTcp();
      if (t.op() == Op.READ) {
        localSpans.add(new Span(t.localOffset(), t.length(), remoteSeed, t.remoteOffset()));
        shmRead += shm ? t.length() : 0;
        tcpRead += shm ? 0 : t.length();
      } else {
        remoteSpans.add(new Span(t.remoteOffset(), t.length(), localSeed, t.localOffset()));
        shmWritten += shm ? t.length() : 0;
        tcpWritten += shm ? 0 : t.length();
      }
      shmTasks += shm ? 1 : 0;
      tcpTasks += shm ? 0 : 1;
    }

    EngineCounters before = requester.counters();
    Map<String, Long> sourceBefore = counters(source);
    Batch batch = requester.allocateBatch(requests.size());
    batch.submit(requests);
    BatchStatus status = batch.await(Duration.ofSeconds(60));
    batch.free();
    assertTrue(status.done(), "batch drained");

    for (TaskResult r : status.tasks()) {
      Task t = MIX.get(r.index());
      assertTrue(r.completed(), r::toString);
      assertEquals(t.length(), r.bytes(), r::toString);
      assertEquals(t.op() == Op.WRITE ? RemoteEffect.APPLIED : RemoteEffect.NONE, r.remoteEffect());
      assertTrue(r.locallyDrained());
      assertEquals(1, r.attempts(), r::toString);
      if (t.namedTcp()) {
        assertEquals(TaskResult.NO_RULE, r.rule(), "a named transport: no rule: " + r);
        assertEquals(Route.REQUESTED, r.route());
        assertEquals(Transport.TCP, r.transport());
      } else {
        assertEquals(t.small() ? 0 : 1, r.rule(), r::toString);
        assertEquals(Route.POLICY, r.route(), r::toString);
        assertEquals(t.small() ? Transport.SHM : Transport.TCP, r.transport(), r::toString);
      }
    }

    EngineCounters after = requester.counters();
    assertEquals(
        shmTasks,
        after.tasksDispatched(Transport.SHM) - before.tasksDispatched(Transport.SHM),
        "SHM tasks");
    assertEquals(
        tcpTasks,
        after.tasksDispatched(Transport.TCP) - before.tasksDispatched(Transport.TCP),
        "TCP tasks");
    assertEquals(shmRead, after.shmBytesRead() - before.shmBytesRead(), "READ bytes over SHM");
    assertEquals(
        shmWritten, after.shmBytesWritten() - before.shmBytesWritten(), "WRITE bytes over SHM");
    assertEquals(0, after.transportFailovers() - before.transportFailovers(), "no failover");
    Map<String, Long> sourceAfter = counters(source);
    assertEquals(
        tcpRead,
        sourceAfter.get("sourceBytesRead") - sourceBefore.get("sourceBytesRead"),
        "the source served exactly the large READs (and the named TCP one) over TCP");
    assertEquals(
        tcpWritten,
        sourceAfter.get("sourceBytesWritten") - sourceBefore.get("sourceBytesWritten"),
        "and exactly the large WRITEs");

    assertEquals(
        -1,
        RegionCheck.check(local.segment(), localSpans, localSeed),
        "local region: every READ's bytes, and the guard pattern everywhere else");
    assertEquals(
        "OK",
        source.verify(remote, remoteSeed, remoteSpans),
        "remote region: every WRITE's bytes, and the guard pattern everywhere else");
  }

  @Test
  void anEngineProcessTakesItsPoliciesFromOrbiteConf() throws Exception {
    long remoteSeed = 0x5eed_0003L;
    long guard = 0x5eed_0004L;
    source.call("FILL " + remote + " " + remoteSeed);
    try (EngineProcess child =
        EngineProcess.start(
            "policy-requester-process", logs, Map.of("ORBITE_CONF", "{" + POLICIES + "}"))) {
      long mine = Long.parseLong(child.call("ALLOC " + REGION + " READ_WRITE"));
      child.call("FILL " + mine + " " + guard);
      child.call("OPEN " + source.endpoint());
      Map<String, Long> before = counters(child);
      Map<String, Long> sourceBefore = counters(source);
      // Eight 4 KiB READs at odd offsets, then three 1 MiB + 3 READs further on.
      long smallBase = 1001;
      long largeBase = 4_000_003;
      long large = (1L << 20) + 3;
      assertEquals(Long.toString(8 * 4096), child.call(xfer(mine, 8, 4096, 8192, smallBase, 77)));
      assertEquals("0 0 0 0 0 0 0 0", child.call("RULES"));
      assertEquals(
          Long.toString(3 * large),
          child.call(xfer(mine, 3, large, 2L << 20, largeBase, 4_100_007)));
      assertEquals("1 1 1", child.call("RULES"));
      Map<String, Long> after = counters(child);
      assertEquals(8, after.get("shmTasksDispatched") - before.get("shmTasksDispatched"));
      assertEquals(3, after.get("tcpTasksDispatched") - before.get("tcpTasksDispatched"));
      assertEquals(8 * 4096, after.get("shmBytesRead") - before.get("shmBytesRead"));
      assertEquals(
          3 * large,
          counters(source).get("sourceBytesRead") - sourceBefore.get("sourceBytesRead"),
          "the source served the large READs over TCP, and nothing else");
      List<Span> spans = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        spans.add(new Span(smallBase + i * 8192L, 4096, remoteSeed, 77 + i * 8192L));
      }
      for (int i = 0; i < 3; i++) {
        spans.add(
            new Span(largeBase + i * (2L << 20), large, remoteSeed, 4_100_007 + i * (2L << 20)));
      }
      assertEquals("OK", child.verify(mine, guard, spans), "the process's region, every byte");
    }
  }

  /** An XFER of {@code n} UNSPEC READs from the source's region. */
  private String xfer(long mine, int n, long length, long stride, long localBase, long remoteBase) {
    return "XFER READ UNSPEC "
        + mine
        + " "
        + n
        + " "
        + length
        + " "
        + stride
        + " "
        + localBase
        + " "
        + remote
        + " "
        + remoteBase;
  }

  /** A process's counters ({@code COUNTERS}) by name. */
  private static Map<String, Long> counters(EngineProcess p) throws IOException {
    Map<String, Long> out = new HashMap<>();
    for (String kv : p.call("COUNTERS").split(" ")) {
      int eq = kv.indexOf('=');
      out.put(kv.substring(0, eq), Long.parseLong(kv.substring(eq + 1)));
    }
    return out;
  }
}
