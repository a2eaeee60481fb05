package io.orbite.cluster;

import static io.orbite.cluster.ClusterNodes.await;
import static io.orbite.cluster.Fixtures.LEN;
import static io.orbite.cluster.Fixtures.POOL;
import static io.orbite.cluster.Fixtures.WAIT;
import static io.orbite.cluster.Fixtures.assertReadWhole;
import static io.orbite.cluster.Fixtures.collect;
import static io.orbite.cluster.Fixtures.guarded;
import static io.orbite.cluster.Fixtures.lists;
import static io.orbite.cluster.Fixtures.read;
import static io.orbite.cluster.Fixtures.sourceRegion;
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
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.typed.Cluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Lookups on a real cluster in one JVM (ActorSystems over Artery TCP on 127.0.0.1, an engine in
 * each, their transports real): by name, by region, what is published and when, the dashboard
 * panel, and the refusals. Changes are {@link DirectoryChangesIT}'s. Every wait is a probe with a
 * deadline.
 */
class PeerDirectoryIT {
  private final ClusterNodes nodes = new ClusterNodes();

  @AfterEach
  void stop() throws Exception {
    nodes.close();
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
