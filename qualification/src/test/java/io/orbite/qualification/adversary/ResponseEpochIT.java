package io.orbite.qualification.adversary;

import static io.orbite.qualification.adversary.Bytes.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * C3 from the requester's side, against an adversarial source that answers as another incarnation
 * than the one the requester described: a HELLO accepted in another epoch's name opens nothing, and
 * a READ response or WRITE acknowledgement naming another epoch is refused before any payload byte
 * lands. Both regions are checked in full.
 */
class ResponseEpochIT {
  private static final long REGION = 1L << 20;
  private static final long PEER_SEED = 0xB1;
  private static final long LOCAL_SEED = 0xB2;
  private static final long TASK = 64 * 1024;

  @Test
  void aHelloAcceptedInAnotherEpochsNameOpensNoLane() throws Exception {
    try (AdversarialSource peer = AdversarialSource.start(REGION, PEER_SEED, Script.SERVE);
        TransferEngine engine =
            TransferEngine.start(EngineConfig.defaults().withName("hello-epoch"))) {
      peer.acceptHellosAs(peer.epoch() ^ 0x5555);
      TransferException e =
          assertThrows(
              TransferException.class,
              () -> engine.openSegment(peer.endpoint(), Duration.ofSeconds(10)));
      assertEquals(ErrorKind.PROTOCOL, e.kind(), e::getMessage);
      assertTrue(e.getMessage().contains(Long.toHexString(peer.epoch() ^ 0x5555)), e::getMessage);
      assertEquals(List.of(), peer.ledger().received(), "no data frame was sent");
      assertTrue(peer.ledger().hellos().size() >= 1);
      assertRegion(peer.region(), List.of(), PEER_SEED, "peer region");
    }
  }

  @Test
  void aResponseNamingAnotherEpochIsRefusedBeforeItsPayloadLands() throws Exception {
    long other = 0x0BADL;
    Script script = r -> new Script.Reply.WrongEpoch(other);
    try (AdversarialSource peer = AdversarialSource.start(REGION, PEER_SEED, script);
        TransferEngine engine =
            TransferEngine.start(EngineConfig.defaults().withName("response-epoch"))) {
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, LOCAL_SEED, 0);
      RemoteSegment segment = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));

      TaskResult read =
          one(
              engine,
              TransferRequest.read(local, 10, segment, AdversarialSource.REGION_ID, 20, TASK));
      assertEquals(TaskState.FAILED, read.state(), read::toString);
      assertEquals(ErrorKind.PROTOCOL, read.errorKind(), read::toString);
      assertEquals(RemoteEffect.NONE, read.remoteEffect());
      assertEquals(0, read.bytes());
      assertTrue(read.locallyDrained());
      assertTrue(read.detail().contains(Long.toHexString(other)), read::detail);
      assertRegion(
          local.segment(),
          List.of(),
          LOCAL_SEED,
          "requester region: nothing of the foreign READ response");

      RemoteSegment again = engine.openSegment(peer.endpoint(), Duration.ofSeconds(10));
      TaskResult write =
          one(
              engine,
              TransferRequest.write(
                  local, 500_000, again, AdversarialSource.REGION_ID, 300_000, TASK));
      assertEquals(TaskState.FAILED, write.state(), write::toString);
      assertEquals(ErrorKind.PROTOCOL, write.errorKind(), write::toString);
      assertEquals(
          RemoteEffect.UNKNOWN, write.remoteEffect(), () -> "the peer applied it: " + write);
      assertEquals(TASK, peer.ledger().bytesAppliedInto(300_000, TASK));
      assertRegion(
          peer.region(),
          List.of(new Span(300_000, TASK, LOCAL_SEED, 500_000)),
          PEER_SEED,
          "peer region");
      assertRegion(local.segment(), List.of(), LOCAL_SEED, "requester region");
      assertEquals(List.of(), peer.ledger().problems());
    }
  }

  private static TaskResult one(TransferEngine engine, TransferRequest request) {
    Batch batch = engine.allocateBatch(1);
    batch.submit(List.of(request));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    assertTrue(s.done(), s::toString);
    batch.free();
    return s.tasks().getFirst();
  }
}
