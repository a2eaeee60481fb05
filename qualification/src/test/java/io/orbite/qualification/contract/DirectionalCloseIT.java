package io.orbite.qualification.contract;

import static io.orbite.qualification.contract.EnginePair.assertRegion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.EngineOwed;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** C8: each direction closes on its own; the other keeps working, byte for byte. */
class DirectionalCloseIT {
  private static final long REGION = 1L << 20;

  /**
   * A verified READ: the requester's whole region, and the source's ({@code source}, pattern {@code
   * seed}) unchanged.
   */
  private static void read(
      TransferEngine requester,
      RegisteredMemory local,
      RemoteSegment peer,
      RegisteredMemory source,
      long seed,
      long guard) {
    long regionId = source.regionId();
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    Batch batch = requester.allocateBatch(1);
    batch.submit(List.of(TransferRequest.read(local, 17, peer, regionId, 33, 300_000)));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    batch.free();
    assertTrue(s.allCompleted(), s::toString);
    assertRegion(
        local.segment(),
        List.of(new Span(17, 300_000, seed, 33)),
        guard,
        "requester region after READ");
    assertRegion(source.segment(), List.of(), seed, "source region after READ");
  }

  @Test
  void afterCloseRequesterNothingIsAdmittedButTheEngineStillServesAsASource() {
    try (TransferEngine closing =
            TransferEngine.start(EngineConfig.defaults().withName("closing"));
        TransferEngine other = TransferEngine.start(EngineConfig.defaults().withName("other"))) {
      RegisteredMemory served = closing.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(served.segment(), 0, REGION, 1, 0);
      RegisteredMemory otherRegion = other.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory closingLocal = closing.allocate(REGION, Access.READ_WRITE);
      RemoteSegment toOther =
          closing.openSegment(other.localSegment().endpoint(), Duration.ofSeconds(10));
      Batch kept = closing.allocateBatch(4);

      EngineOwed owed = closing.closeRequester(Duration.ofSeconds(10));
      assertEquals(0, owed.tasksInFlight(), owed::toString);

      Pattern.fill(closingLocal.segment(), 0, REGION, 2, 0);
      TransferException submit =
          assertThrows(
              TransferException.class,
              () ->
                  kept.submit(
                      List.of(
                          TransferRequest.read(
                              closingLocal, 0, toOther, otherRegion.regionId(), 0, 4096))));
      assertEquals(ErrorKind.UNAVAILABLE, submit.kind(), submit::getMessage);
      assertEquals(
          ErrorKind.UNAVAILABLE,
          assertThrows(TransferException.class, () -> closing.allocateBatch(1)).kind());
      assertEquals(
          ErrorKind.UNAVAILABLE,
          assertThrows(
                  TransferException.class,
                  () ->
                      closing.openSegment(other.localSegment().endpoint(), Duration.ofSeconds(10)))
              .kind());
      assertEquals(-1, Pattern.verify(closingLocal.segment(), 0, REGION, 2, 0), "nothing moved");

      // Still a source: the other engine reads from it, byte for byte.
      RemoteSegment toClosing =
          other.openSegment(closing.localSegment().endpoint(), Duration.ofSeconds(10));
      read(other, otherRegion, toClosing, served, 1, 3);
      // A second call is harmless and reports the same.
      assertEquals(0, closing.closeRequester(Duration.ofSeconds(5)).tasksInFlight());
    }
  }

  @Test
  void afterCloseSourcePeersCannotReachTheEngineButItStillRequests() {
    try (TransferEngine closing =
            TransferEngine.start(EngineConfig.defaults().withName("closing-source"));
        TransferEngine other =
            TransferEngine.start(EngineConfig.defaults().withName("other-source"))) {
      RegisteredMemory served = closing.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(served.segment(), 0, REGION, 4, 0);
      RegisteredMemory otherServed = other.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(otherServed.segment(), 0, REGION, 5, 0);
      RegisteredMemory otherLocal = other.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory closingLocal = closing.allocate(REGION, Access.READ_WRITE);
      RemoteSegment toClosing =
          other.openSegment(closing.localSegment().endpoint(), Duration.ofSeconds(10));
      read(other, otherLocal, toClosing, served, 4, 6);

      EngineOwed owed = closing.closeSource(Duration.ofSeconds(10));
      assertEquals(0, owed.loans(), "every source loan came back: " + owed);

      assertEquals(
          ErrorKind.UNAVAILABLE,
          assertThrows(
                  TransferException.class,
                  () -> other.openSegment(closing.localSegment().endpoint(), Duration.ofSeconds(5)))
              .kind());
      // The old segment's lanes were closed by the source: a READ on it cannot complete.
      Pattern.fill(otherLocal.segment(), 0, REGION, 7, 0);
      Batch batch = other.allocateBatch(1);
      try {
        batch.submit(
            List.of(TransferRequest.read(otherLocal, 0, toClosing, served.regionId(), 0, 4096)));
        BatchStatus s = batch.await(Duration.ofSeconds(30));
        assertTrue(s.done() && !s.tasks().get(0).completed(), s::toString);
        assertTrue(s.tasks().get(0).locallyDrained());
      } catch (TransferException refused) {
        // Refused at submit once its lanes have ended: to this requester the peer is gone (C18).
        assertEquals(ErrorKind.PEER_LOST, refused.kind(), refused::getMessage);
      }
      batch.free();
      assertEquals(-1, Pattern.verify(otherLocal.segment(), 0, REGION, 7, 0), "nothing landed");

      // Still a requester: it reads from the other engine, byte for byte.
      RemoteSegment toOther =
          closing.openSegment(other.localSegment().endpoint(), Duration.ofSeconds(10));
      read(closing, closingLocal, toOther, otherServed, 5, 8);
      assertEquals(
          0, closing.closeSource(Duration.ofSeconds(5)).loans(), "a second call is harmless");
    }
  }
}
