package io.orbite.cluster;

import static io.orbite.cluster.ClusterNodes.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.typesafe.config.ConfigFactory;
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
  private static final String POOL = "kv-pool";

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

  /** A source region named {@value #POOL}, filled with the pattern. */
  private static RegisteredMemory sourceRegion(TransferEngine source) {
    RegisteredMemory region = source.allocate(LEN, Access.READ_WRITE, POOL);
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
    prefill.allocate(4096, Access.READ);
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

    DirectoryRegion pool = atDecode.region("prefill", POOL);
    assertEquals(new DirectoryRegion(POOL, source.regionId(), LEN, Access.READ_WRITE), pool);
    // Only named regions are published.
    assertEquals(List.of(pool), entry.regions());

    try (RemoteSegment remote = atDecode.open("prefill", WAIT)) {
      assertEquals(prefill.localSegment(), remote.descriptor());
      assertEquals("prefill", remote.engineName());
      assertEquals(pool.regionId(), remote.region(POOL).orElseThrow().regionId());
      RegisteredMemory local = guarded(decode);
      BatchStatus status = read(decode, local, remote, pool.regionId());
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
    sourceRegion(prefill);
    nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    assertTrue(
        await(
            WAIT,
            () ->
                lists(atDecode, decode)
                    && atDecode.entry("prefill").stream().anyMatch(e -> !e.regions().isEmpty())));

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
        assertThrows(TransferException.class, () -> atDecode.region("prefill", "kv-poo"));
    assertEquals(ErrorKind.INVALID_ARGUMENT, region.kind());
    assertEquals(
        "INVALID_ARGUMENT: no region named 'kv-poo' published by engine 'prefill' in the directory"
            + " (it publishes: kv-pool)",
        region.getMessage());
    TransferException none =
        assertThrows(TransferException.class, () -> atDecode.region("decode", "kv-pool"));
    assertTrue(none.getMessage().endsWith("(it publishes: none)"), none.getMessage());
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
    PeerDirectory atOld = nodes.join(old);
    PeerDirectory atDecode = nodes.join(decode);
    ConcurrentLinkedQueue<DirectoryChange> changes = collect(atDecode, nodes.node(1));
    // Both replicas hold both entries: no change of the map is on its way to the old directory,
    // which would make it look at its engine and withdraw once the engine closed.
    assertTrue(await(WAIT, () -> lists(atDecode, old) && lists(atOld, decode)));
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
      assertEquals(newSource.regionId(), atDecode.region("prefill", POOL).regionId());
      RegisteredMemory again = guarded(decode);
      assertTrue(read(decode, again, fresh, newSource.regionId()).allCompleted());
      assertReadWhole(again, newSource, "READ of the new incarnation");
    }
  }

  @Test
  void onlyListedNamesArePublishedAndRegistrationChangesAreUpdates() {
    nodes.start(2);
    TransferEngine prefill =
        nodes.engine(
            nodes.node(0),
            EngineConfig.defaults()
                .withName("prefill")
                .withDirectory(
                    DirectoryConfig.defaults().withRefreshMillis(100).withPublish(List.of(POOL))));
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    RegisteredMemory pool = sourceRegion(prefill);
    prefill.allocate(4096, Access.READ_WRITE, "private");
    prefill.allocate(4096, Access.READ_WRITE);
    nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    ConcurrentLinkedQueue<DirectoryChange> changes = collect(atDecode, nodes.node(1));
    assertTrue(await(WAIT, () -> lists(atDecode, prefill)));
    assertEquals(
        List.of(new DirectoryRegion(POOL, pool.regionId(), LEN, Access.READ_WRITE)),
        atDecode.entry("prefill").orElseThrow().regions());

    prefill.unregister(pool);
    assertTrue(
        await(
            WAIT,
            () ->
                changes.stream()
                    .anyMatch(
                        c ->
                            c instanceof DirectoryChange.Updated u
                                && u.entry().regions().isEmpty())),
        changes::toString);
    TransferException gone =
        assertThrows(TransferException.class, () -> atDecode.region("prefill", POOL));
    assertTrue(gone.getMessage().endsWith("(it publishes: none)"), gone.getMessage());

    RegisteredMemory again = prefill.allocate(8192, Access.READ, POOL);
    assertTrue(
        await(
            WAIT,
            () ->
                atDecode
                    .entry("prefill")
                    .orElseThrow()
                    .regions()
                    .equals(
                        List.of(new DirectoryRegion(POOL, again.regionId(), 8192, Access.READ)))),
        () -> "" + atDecode.entry("prefill"));
    DirectoryChange.Updated updated =
        (DirectoryChange.Updated)
            changes.stream().filter(c -> c instanceof DirectoryChange.Updated).findFirst().get();
    assertEquals(prefill.localSegment(), updated.entry().segment());
    assertTrue(
        changes.stream().noneMatch(c -> c instanceof DirectoryChange.Restarted), changes::toString);
  }

  @Test
  void anEngineIsListedOnlyOnceItsApplicationMarksItReady() {
    nodes.start(2);
    TransferEngine prefill =
        nodes.engine(
            nodes.node(0),
            EngineConfig.defaults()
                .withName("prefill")
                .withListen(ListenConfig.defaults().withReadyAtStart(false))
                .withDirectory(DirectoryConfig.defaults().withRefreshMillis(100)));
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    PeerDirectory atPrefill = nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    // Once prefill's replica lists decode, and decode's its own entry, replication runs both ways;
    // prefill's directory has looked at its engine many times by then (every 100 ms).
    assertTrue(await(WAIT, () -> lists(atPrefill, decode) && lists(atDecode, decode)));
    assertTrue(
        await(Duration.ofMillis(500), () -> atDecode.entry("prefill").isPresent()) == false,
        () -> "listed before it was ready: " + atDecode.members());
    RegisteredMemory pool = sourceRegion(prefill);
    prefill.markReady();
    assertTrue(await(WAIT, () -> lists(atDecode, prefill)));
    assertEquals(
        List.of(new DirectoryRegion(POOL, pool.regionId(), LEN, Access.READ_WRITE)),
        atDecode.entry("prefill").orElseThrow().regions());
  }

  @Test
  void aMalformedValueInTheMapIsSkippedAndTheDirectoryGoesOn() throws Exception {
    nodes.start(2);
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    PeerDirectory atDecode = nodes.join(decode);
    assertTrue(await(WAIT, () -> lists(atDecode, decode)));
    // Another node writes garbage under two names: not JSON, and an entry whose name is not its
    // key.
    ActorSystem<?> writer = nodes.node(0);
    var self =
        org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData.get(writer)
            .selfUniqueAddress();
    String liar =
        EntryCodec.write(
            new EntryCodec.Listed(
                new DirectoryEntry(
                    "someone-else",
                    decode.localSegment(),
                    List.of("TCP"),
                    List.of(),
                    Cluster.get(writer).selfMember().address().toString()),
                Cluster.get(writer).selfMember().uniqueAddress().longUid()));
    org.apache.pekko.cluster.ddata.typed.javadsl.Replicator.UpdateResponse<
            org.apache.pekko.cluster.ddata.LWWMap<String, String>>
        written =
            org.apache.pekko.actor.typed.javadsl.AskPattern
                .<org.apache.pekko.cluster.ddata.typed.javadsl.Replicator.Command,
                    org.apache.pekko.cluster.ddata.typed.javadsl.Replicator.UpdateResponse<
                        org.apache.pekko.cluster.ddata.LWWMap<String, String>>>
                    ask(
                        org.apache.pekko.cluster.ddata.typed.javadsl.DistributedData.get(writer)
                            .replicator(),
                        replyTo ->
                            new org.apache.pekko.cluster.ddata.typed.javadsl.Replicator.Update<>(
                                DirectoryActor.KEY,
                                org.apache.pekko.cluster.ddata.LWWMap.create(),
                                org.apache.pekko.cluster.ddata.typed.javadsl.Replicator
                                    .writeLocal(),
                                replyTo,
                                map ->
                                    map.put(self, "garbage", "{not json").put(self, "liar", liar)),
                        WAIT,
                        writer.scheduler())
                .toCompletableFuture()
                .get(20, java.util.concurrent.TimeUnit.SECONDS);
    assertTrue(
        written instanceof org.apache.pekko.cluster.ddata.typed.javadsl.Replicator.UpdateSuccess<?>,
        written::toString);
    // A well-formed engine joins after the garbage and is listed; the garbage never is.
    TransferEngine prefill = nodes.engine(nodes.node(0), "prefill");
    nodes.join(prefill);
    assertTrue(await(WAIT, () -> lists(atDecode, prefill)), atDecode.members()::toString);
    assertEquals(
        List.of("decode", "prefill"),
        atDecode.members().stream().map(DirectoryEntry::name).toList());
    TransferException refused =
        assertThrows(TransferException.class, () -> atDecode.open("garbage", WAIT));
    assertEquals(ErrorKind.INVALID_ARGUMENT, refused.kind());
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
  void aMemberDownedBySplitBrainResolverIsRemovedAndItsSegmentsAreRefused() throws Exception {
    // Every node runs the split-brain resolver (keep-majority). The prefill node's system stops
    // without leaving (no coordinated shutdown): to the others it goes unreachable, is downed by
    // the
    // majority and removed, as a killed process is.
    nodes.start(
        3,
        ConfigFactory.parseString(
            """
            pekko.cluster.downing-provider-class = "org.apache.pekko.cluster.sbr.SplitBrainResolverProvider"
            pekko.cluster.split-brain-resolver.active-strategy = keep-majority
            pekko.cluster.split-brain-resolver.stable-after = 2s
            pekko.coordinated-shutdown.run-by-actor-system-terminate = off
            """));
    // Its directory looks at its engine once a minute, so the engine's close below (which stands
    // for
    // the killed process's sockets closing) is not withdrawn: only the member's removal takes the
    // entry out.
    TransferEngine prefill =
        nodes.engine(
            nodes.node(0),
            EngineConfig.defaults()
                .withName("prefill")
                .withDirectory(DirectoryConfig.defaults().withRefreshMillis(60_000)));
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    RegisteredMemory source = sourceRegion(prefill);
    PeerDirectory atPrefill = nodes.join(prefill);
    PeerDirectory atDecode = nodes.join(decode);
    TransferEngine third = nodes.engine(nodes.node(2), "decode-2");
    PeerDirectory atThird = nodes.join(third);
    ConcurrentLinkedQueue<DirectoryChange> changes = collect(atDecode, nodes.node(1));
    assertTrue(
        await(
            WAIT,
            () ->
                lists(atDecode, prefill)
                    && lists(atThird, prefill)
                    && lists(atPrefill, decode)
                    && lists(atPrefill, third)));
    RemoteSegment remote = nodes.closeLater(atDecode.open("prefill", WAIT));
    RegisteredMemory local = guarded(decode);
    assertTrue(read(decode, local, remote, source.regionId()).allCompleted());
    assertReadWhole(local, source, "READ before the member died");
    String member = Cluster.get(nodes.node(0)).selfMember().address().toString();

    prefill.close(Duration.ofSeconds(20));
    nodes.node(0).terminate();
    Duration detection = Duration.ofSeconds(40);
    assertTrue(
        await(
            detection,
            () ->
                changes.stream()
                    .anyMatch(
                        c -> c instanceof DirectoryChange.Removed r && r.name().equals("prefill"))),
        changes::toString);
    DirectoryChange.Removed removed =
        (DirectoryChange.Removed)
            changes.stream().filter(c -> c instanceof DirectoryChange.Removed).findFirst().get();
    assertEquals(member, removed.previous().member());
    // The reason names the member's status, unless the map lost the entry (another node removed it
    // for the departed member) before this node heard of the departure.
    assertTrue(
        removed.reason().startsWith("its cluster member " + member + " is ")
            || removed.reason().startsWith("its entry was withdrawn"),
        removed.reason());
    assertTrue(await(WAIT, () -> atThird.entry("prefill").isEmpty()), atThird.members()::toString);
    assertRefusedWithNoByte(decode, guarded(decode), remote, source.regionId());
  }

  @Test
  void anOpenThatMeetsAnotherIncarnationThanTheListedOneSaysTheDirectoryLags() {
    nodes.start(2);
    int port = ClusterNodes.freePort();
    EngineConfig config =
        EngineConfig.defaults()
            .withName("prefill")
            .withListen(ListenConfig.defaults().withPort(port))
            .withDirectory(DirectoryConfig.defaults().withRefreshMillis(60_000));
    TransferEngine old = nodes.engine(nodes.node(0), config);
    TransferEngine decode = nodes.engine(nodes.node(1), "decode");
    PeerDirectory atOld = nodes.join(old);
    PeerDirectory atDecode = nodes.join(decode);
    assertTrue(await(WAIT, () -> lists(atDecode, old) && lists(atOld, decode)));
    // The listed incarnation goes without withdrawing (its directory looks once a minute) and
    // another answers at its endpoint, one that never joined the directory.
    old.close(Duration.ofSeconds(20));
    TransferEngine other = nodes.engine(nodes.node(0), config.withName("not-prefill"));
    assertEquals(port, other.localSegment().port());

    TransferException lags =
        assertThrows(TransferException.class, () -> atDecode.open("prefill", WAIT));
    assertEquals(ErrorKind.EPOCH_MISMATCH, lags.kind(), lags::toString);
    assertTrue(lags.getMessage().contains("the directory lags"), lags.getMessage());
    assertTrue(lags.getMessage().contains(old.localSegment().toString()), lags.getMessage());
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
