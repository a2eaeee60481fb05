package io.orbite.cluster;

import static io.orbite.cluster.ClusterNodes.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.orbite.config.DashboardConfig;
import io.orbite.config.DirectoryConfig;
import io.orbite.config.EngineConfig;
import io.orbite.config.ListenConfig;
import io.orbite.config.ObservabilityConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Leave;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The directory on a real cluster in one JVM: ActorSystems over Artery TCP on 127.0.0.1, an engine
 * in each, their transports real. Every wait is a probe with a deadline.
 */
class PeerDirectoryIT {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final long LEN = 256 * 1024;
  private static final long GUARD = 4096;
  private static final long SOURCE_SEED = 0x40_0001L;
  private static final long GUARD_SEED = 0x40_0002L;

  private final ClusterNodes nodes = new ClusterNodes();

  @AfterEach
  void stop() throws Exception {
    nodes.close();
  }

  /** Changes a directory's stream delivers, collected as they come. */
  private static ConcurrentLinkedQueue<DirectoryChange> collect(
      PeerDirectory directory, ActorSystem<?> system) {
    ConcurrentLinkedQueue<DirectoryChange> seen = new ConcurrentLinkedQueue<>();
    directory.changes().runForeach(seen::add, system);
    return seen;
  }

  private static boolean lists(PeerDirectory directory, TransferEngine engine) {
    return directory.entry(engine.config().name()).stream()
        .anyMatch(e -> e.segment().equals(engine.localSegment()));
  }

  /** A source region filled with the pattern, with the region's id. */
  private static RegisteredMemory sourceRegion(TransferEngine source) {
    RegisteredMemory region = source.allocate(LEN, Access.READ_WRITE);
    Bytes.fill(region.segment(), 0, LEN, SOURCE_SEED);
    return region;
  }

  /** A local buffer of guard, payload, guard, all filled with the guard pattern. */
  private static RegisteredMemory guarded(TransferEngine requester) {
    RegisteredMemory local = requester.allocate(GUARD + LEN + GUARD, Access.READ_WRITE);
    Bytes.fill(local.segment(), 0, GUARD + LEN + GUARD, GUARD_SEED);
    return local;
  }

  private static void assertReadWhole(
      RegisteredMemory local, RegisteredMemory source, String what) {
    assertEquals(
        -1, Bytes.mismatch(local.segment(), GUARD, LEN, SOURCE_SEED, 0), what + ": payload");
    assertEquals(
        -1, Bytes.mismatch(local.segment(), 0, GUARD, GUARD_SEED, 0), what + ": guard before");
    assertEquals(
        -1,
        Bytes.mismatch(local.segment(), GUARD + LEN, GUARD, GUARD_SEED, GUARD + LEN),
        what + ": guard after");
    assertEquals(-1, Bytes.mismatch(source.segment(), 0, LEN, SOURCE_SEED, 0), what + ": source");
  }

  private static void assertUntouched(RegisteredMemory local, String what) {
    assertEquals(-1, Bytes.mismatch(local.segment(), 0, GUARD + LEN + GUARD, GUARD_SEED, 0), what);
  }

  private static BatchStatus read(
      TransferEngine requester, RegisteredMemory local, RemoteSegment remote, long regionId) {
    Batch batch = requester.allocateBatch(1);
    try {
      batch.submit(List.of(TransferRequest.read(local, GUARD, remote, regionId, 0, LEN)));
      return batch.await(WAIT);
    } finally {
      batch.free();
    }
  }

  @Test
  void anEngineFoundByNameIsOpenedThroughDescribeAndReadWithEveryByteChecked() {
    nodes.start(2);
    TransferEngine prefill = nodes.engine(nodes.node(0), "prefill");
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    RegisteredMemory source = sourceRegion(prefill);
    PeerDirectory atPrefill = nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    assertTrue(
        await(WAIT, () -> lists(atDecode, prefill) && lists(atDecode, decode)),
        () -> "decode's replica lists both: " + atDecode.members());
    assertTrue(await(WAIT, () -> lists(atPrefill, decode)), () -> "" + atPrefill.members());
    List<DirectoryEntry> members = atDecode.members();
    assertEquals(List.of("decode", "prefill"), members.stream().map(DirectoryEntry::name).toList());
    DirectoryEntry entry = atDecode.entry("prefill").orElseThrow();
    assertEquals(prefill.localSegment(), entry.segment());
    assertEquals(List.of("TCP"), entry.transports());
    assertEquals(Cluster.get(nodes.node(0)).selfMember().address().toString(), entry.member());

    try (RemoteSegment remote = atDecode.open("prefill", WAIT)) {
      assertEquals(prefill.localSegment(), remote.descriptor());
      RegisteredMemory local = guarded(decode);
      BatchStatus status = read(decode, local, remote, source.regionId());
      assertTrue(status.allCompleted(), status::toString);
      assertEquals(LEN, status.completedBytes());
      assertReadWhole(local, source, "READ of the engine found by name");
    }
  }

  @Test
  void anUnknownNameOrRegionFailsAtOnceNamingWhatIsPublished() {
    nodes.start(2);
    TransferEngine prefill = nodes.engine(nodes.node(0), "prefill");
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    assertTrue(await(WAIT, () -> lists(atDecode, prefill) && lists(atDecode, decode)));

    TransferException open =
        assertThrows(TransferException.class, () -> atDecode.open("prefil", WAIT));
    assertEquals(ErrorKind.INVALID_ARGUMENT, open.kind());
    assertEquals(
        "INVALID_ARGUMENT: no engine named 'prefil' in the directory (published now: decode, prefill)",
        open.getMessage());
    TransferException async =
        assertThrows(
            TransferException.class,
            () -> {
              try {
                atDecode.openAsync("nobody").toCompletableFuture().join();
              } catch (java.util.concurrent.CompletionException e) {
                throw e.getCause();
              }
            });
    assertEquals(ErrorKind.INVALID_ARGUMENT, async.kind());
    assertTrue(async.getMessage().contains("no engine named 'nobody'"), async.getMessage());

    TransferException engine =
        assertThrows(TransferException.class, () -> atDecode.region("nobody", "kv-pool"));
    assertEquals(ErrorKind.INVALID_ARGUMENT, engine.kind());
    assertEquals(
        "INVALID_ARGUMENT: no engine named 'nobody' in the directory (published now: decode, prefill)",
        engine.getMessage());
    TransferException region =
        assertThrows(TransferException.class, () -> atDecode.region("prefill", "kv-pool"));
    assertEquals(ErrorKind.INVALID_ARGUMENT, region.kind());
    assertTrue(
        region.getMessage().contains("no region named 'kv-pool' published by engine 'prefill'"),
        region.getMessage());
  }

  @Test
  void closingTheDirectoryRemovesTheEntryOnTheOtherNode() {
    nodes.start(2);
    TransferEngine prefill = nodes.engine(nodes.node(0), "prefill");
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    PeerDirectory atPrefill = nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    ConcurrentLinkedQueue<DirectoryChange> changes = collect(atDecode, nodes.node(1));
    assertTrue(await(WAIT, () -> lists(atDecode, prefill)));
    assertTrue(
        await(WAIT, () -> changes.stream().anyMatch(c -> c instanceof DirectoryChange.Joined)),
        changes::toString);
    DirectoryChange.Joined joined =
        (DirectoryChange.Joined)
            changes.stream().filter(c -> c instanceof DirectoryChange.Joined).findFirst().get();
    assertEquals("prefill", joined.name());
    assertEquals(prefill.localSegment(), joined.entry().segment());

    atPrefill.close();
    assertTrue(
        await(WAIT, () -> changes.stream().anyMatch(c -> c instanceof DirectoryChange.Removed)),
        changes::toString);
    DirectoryChange.Removed removed =
        (DirectoryChange.Removed)
            changes.stream().filter(c -> c instanceof DirectoryChange.Removed).findFirst().get();
    assertEquals("prefill", removed.name());
    assertEquals(prefill.localSegment(), removed.previous().segment());
    assertTrue(removed.reason().contains("withdrawn"), removed.reason());
    assertEquals(List.of("decode"), atDecode.members().stream().map(DirectoryEntry::name).toList());
    // Changes are about other engines only: decode's own entry made none.
    assertTrue(changes.stream().noneMatch(c -> c.name().equals("decode")), changes::toString);
    // The engine keeps running: the directory's close withdrew the listing only.
    assertTrue(prefill.owed().phase() == io.orbite.engine.EngineOwed.Phase.RUNNING);
  }

  @Test
  void aClosedEngineIsWithdrawnAndItsSegmentsAreRefused() {
    nodes.start(2);
    TransferEngine prefill = nodes.engine(nodes.node(0), "prefill");
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    RegisteredMemory source = sourceRegion(prefill);
    nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    ConcurrentLinkedQueue<DirectoryChange> changes = collect(atDecode, nodes.node(1));
    ConcurrentLinkedQueue<PeerEvent> events = new ConcurrentLinkedQueue<>();
    nodes.closeLater(decode.onPeerEvent(events::add));
    assertTrue(await(WAIT, () -> lists(atDecode, prefill)));
    RemoteSegment remote = nodes.closeLater(atDecode.open("prefill", WAIT));
    RegisteredMemory local = guarded(decode);
    assertTrue(read(decode, local, remote, source.regionId()).allCompleted());
    assertReadWhole(local, source, "READ before the close");

    prefill.close(Duration.ofSeconds(20));
    assertTrue(
        await(WAIT, () -> changes.stream().anyMatch(c -> c instanceof DirectoryChange.Removed)),
        changes::toString);
    assertTrue(atDecode.entry("prefill").isEmpty());
    // The directory's hint made decode check the endpoint: nothing answers there, so its entry for
    // the old incarnation is closed (or its lanes found out first); either way it is refused.
    assertTrue(
        await(
            WAIT,
            () ->
                events.stream()
                    .anyMatch(
                        e ->
                            (e instanceof PeerEvent.PeerLost
                                || e instanceof PeerEvent.PeerFenced))),
        events::toString);
    RegisteredMemory after = guarded(decode);
    assertRefusedWithNoByte(decode, after, remote, source.regionId());
  }

  private static void assertRefusedWithNoByte(
      TransferEngine requester, RegisteredMemory local, RemoteSegment remote, long regionId) {
    Batch batch = requester.allocateBatch(1);
    try {
      BatchStatus status;
      try {
        batch.submit(List.of(TransferRequest.read(local, GUARD, remote, regionId, 0, LEN)));
        status = batch.await(WAIT);
      } catch (TransferException refused) {
        assertTrue(
            refused.kind() == ErrorKind.EPOCH_MISMATCH || refused.kind() == ErrorKind.PEER_LOST,
            refused::toString);
        assertUntouched(local, "refused at submit");
        return;
      }
      TaskResult task = status.tasks().get(0);
      assertTrue(
          task.errorKind() == ErrorKind.EPOCH_MISMATCH || task.errorKind() == ErrorKind.PEER_LOST,
          status::toString);
      assertEquals(0, task.bytes(), status::toString);
      assertUntouched(local, "refused READ");
    } finally {
      batch.free();
    }
  }

  @Test
  void aMemberThatLeavesGracefullyIsRemoved() {
    nodes.start(3);
    TransferEngine prefill = nodes.engine(nodes.node(0), "prefill");
    TransferEngine decode1 = nodes.engine(nodes.node(1), "decode-1");
    TransferEngine decode2 = nodes.engine(nodes.node(2), "decode-2");
    PeerDirectory atDecode1 = nodes.join(decode1);
    PeerDirectory atDecode2 = nodes.join(decode2);
    nodes.join(prefill);
    ConcurrentLinkedQueue<DirectoryChange> changes = collect(atDecode1, nodes.node(1));
    assertTrue(
        await(WAIT, () -> lists(atDecode1, prefill) && lists(atDecode2, prefill)),
        () -> atDecode1.members() + " / " + atDecode2.members());
    String member = Cluster.get(nodes.node(0)).selfMember().address().toString();

    Cluster.get(nodes.node(0))
        .manager()
        .tell(Leave.create(Cluster.get(nodes.node(0)).selfMember().address()));
    assertTrue(
        await(
            WAIT,
            () ->
                changes.stream()
                    .anyMatch(
                        c -> c instanceof DirectoryChange.Removed r && r.name().equals("prefill"))),
        changes::toString);
    DirectoryChange.Removed removed =
        (DirectoryChange.Removed)
            changes.stream().filter(c -> c instanceof DirectoryChange.Removed).findFirst().get();
    assertEquals(prefill.localSegment(), removed.previous().segment());
    assertEquals(member, removed.previous().member());
    assertTrue(
        await(WAIT, () -> atDecode2.entry("prefill").isEmpty()), atDecode2.members()::toString);
    assertEquals(
        List.of("decode-1", "decode-2"),
        atDecode1.members().stream().map(DirectoryEntry::name).toList());
  }

  @Test
  void anotherIncarnationUnderTheSameNameIsARestartAndFencesTheOldSegment() {
    nodes.start(2);
    int port = ClusterNodes.freePort();
    // The first incarnation's directory looks at its engine only once a minute: when the engine
    // closes, its entry stays listed, as a killed process's does.
    EngineConfig first =
        EngineConfig.defaults()
            .withName("prefill")
            .withListen(ListenConfig.defaults().withPort(port))
            .withDirectory(DirectoryConfig.defaults().withRefreshMillis(60_000));
    TransferEngine old = nodes.engine(nodes.node(0), first);
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    RegisteredMemory oldSource = sourceRegion(old);
    nodes.join(old);
    PeerDirectory atDecode = nodes.join(decode);
    ConcurrentLinkedQueue<DirectoryChange> changes = collect(atDecode, nodes.node(1));
    assertTrue(await(WAIT, () -> lists(atDecode, old)));
    RemoteSegment oldRemote = nodes.closeLater(atDecode.open("prefill", WAIT));
    RegisteredMemory local = guarded(decode);
    assertTrue(read(decode, local, oldRemote, oldSource.regionId()).allCompleted());
    assertReadWhole(local, oldSource, "READ of the first incarnation");

    old.close(Duration.ofSeconds(20));
    TransferEngine restarted =
        nodes.engine(
            nodes.node(0), first.withDirectory(DirectoryConfig.defaults().withRefreshMillis(100)));
    RegisteredMemory newSource = sourceRegion(restarted);
    nodes.join(restarted);
    assertTrue(
        await(WAIT, () -> changes.stream().anyMatch(c -> c instanceof DirectoryChange.Restarted)),
        changes::toString);
    DirectoryChange.Restarted restart =
        (DirectoryChange.Restarted)
            changes.stream().filter(c -> c instanceof DirectoryChange.Restarted).findFirst().get();
    assertEquals(old.localSegment(), restart.previous().segment());
    assertEquals(restarted.localSegment(), restart.entry().segment());
    assertTrue(
        changes.stream().noneMatch(c -> c instanceof DirectoryChange.Removed), changes::toString);

    RegisteredMemory stale = guarded(decode);
    assertRefusedWithNoByte(decode, stale, oldRemote, oldSource.regionId());
    try (RemoteSegment fresh = atDecode.open("prefill", WAIT)) {
      assertEquals(restarted.localSegment(), fresh.descriptor());
      RegisteredMemory again = guarded(decode);
      assertTrue(read(decode, again, fresh, newSource.regionId()).allCompleted());
      assertReadWhole(again, newSource, "READ of the new incarnation");
    }
  }

  @Test
  void theDashboardShowsTheMembersInItsDirectoryPanel() throws Exception {
    nodes.start(2);
    TransferEngine prefill = nodes.engine(nodes.node(0), "prefill");
    TransferEngine decode =
        nodes.engine(
            nodes.node(1),
            EngineConfig.defaults()
                .withName("decode")
                .withObservability(
                    ObservabilityConfig.defaults().withDashboard(DashboardConfig.loopback(0)))
                .withDirectory(DirectoryConfig.defaults().withRefreshMillis(100)));
    nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    assertTrue(await(WAIT, () -> lists(atDecode, prefill) && lists(atDecode, decode)));
    String url = decode.observabilityUrls().get("dashboard");
    String panels = get(url + "api/panels");
    JsonNode directory = new ObjectMapper().readTree(panels).get(0);
    assertEquals(PeerDirectory.PANEL, directory.get("title").asText(), panels);
    assertEquals(
        "[\"engine\",\"endpoint\",\"epoch\",\"transports\",\"regions\",\"member\"]",
        directory.get("columns").toString());
    JsonNode rows = directory.get("rows");
    assertEquals(2, rows.size(), panels);
    assertEquals("decode", rows.get(0).get(0).asText());
    assertEquals("prefill", rows.get(1).get(0).asText());
    assertEquals(prefill.localSegment().endpoint(), rows.get(1).get(1).asText());
    assertEquals(Long.toHexString(prefill.localSegment().epoch()), rows.get(1).get(2).asText());
    assertEquals("", directory.get("detail").asText());
    atDecode.close();
    String after = get(url + "api/panels");
    assertEquals("[]", after);
  }

  private static String get(String url) throws Exception {
    try (InputStream in = URI.create(url).toURL().openStream()) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void joinRefusesAnEngineOutsideAClusterAndASecondJoin() throws Exception {
    TransferEngine local =
        nodes.closeLater(TransferEngine.start(EngineConfig.defaults().withName("alone")));
    TransferException refused =
        assertThrows(TransferException.class, () -> PeerDirectory.join(local));
    assertEquals(ErrorKind.INVALID_ARGUMENT, refused.kind());
    assertTrue(
        refused.getMessage().contains("pekko.actor.provider is 'local'"), refused.getMessage());
    assertTrue(refused.getMessage().contains("engine 'alone'"), refused.getMessage());

    nodes.start(1);
    TransferEngine engine = nodes.engine(nodes.node(0), "once");
    PeerDirectory directory = nodes.join(engine);
    TransferException twice =
        assertThrows(TransferException.class, () -> PeerDirectory.join(engine));
    assertEquals(ErrorKind.INVALID_ARGUMENT, twice.kind());
    assertTrue(twice.getMessage().contains("already joined"), twice.getMessage());
    directory.close();
    directory.close();
    nodes.join(engine).close();
  }
}
