package io.orbite.cluster;

import static io.orbite.cluster.ClusterNodes.await;
import static io.orbite.cluster.Fixtures.POOL;
import static io.orbite.cluster.Fixtures.WAIT;
import static io.orbite.cluster.Fixtures.assertReadWhole;
import static io.orbite.cluster.Fixtures.assertRefusedWithNoByte;
import static io.orbite.cluster.Fixtures.collect;
import static io.orbite.cluster.Fixtures.guarded;
import static io.orbite.cluster.Fixtures.lists;
import static io.orbite.cluster.Fixtures.read;
import static io.orbite.cluster.Fixtures.sourceRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import io.orbite.config.DirectoryConfig;
import io.orbite.config.EngineConfig;
import io.orbite.config.ListenConfig;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.PeerEvent;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Leave;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Changes on a real cluster in one JVM: an entry withdrawn, an engine closed, a member that leaves
 * or is downed, a restart under the same name, and an open that meets another incarnation than the
 * listed one; each seen on {@code changes()} and checked on the segments it fenced, byte by byte.
 */
class DirectoryChangesIT {
  private final ClusterNodes nodes = new ClusterNodes();

  @AfterEach
  void stop() throws Exception {
    nodes.close();
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
}
