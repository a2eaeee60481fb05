package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.OwnerView;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code rdma.completionEvents} (the reference's {@code rdma_events}): every CQ lane of both
 * engines makes a completion channel and its CQ on it, takes and acknowledges its events, and
 * multi-slice READs and WRITEs over both rails land exactly (the provider's own payload count equal
 * to what moved); both engines close with nothing quarantined (each CQ destroyed before its
 * channel, every event acknowledged first), the provider asked once for each lane's CQ and channel.
 */
class RdmaCompletionEventsIT {
  private static final long PAYLOAD = (4L << 20) + 1;
  private static final long REGION = 2 * PAYLOAD + 256;

  private static EngineConfig events(String name) {
    EngineConfig c = RdmaTransferIT.rdmaConfig(name);
    return c.withRdma(c.rdma().withCompletionEvents(true));
  }

  @Test
  void lanesWithCompletionChannelsMoveEveryByteAndCloseClean() {
    SoftFaults sourceProvider = SoftFaults.create();
    SoftFaults requesterProvider = SoftFaults.create();
    TransferEngine source =
        FaultInjection.start(events("events-source"), RdmaTransferIT.hooks(sourceProvider));
    TransferEngine requester =
        FaultInjection.start(events("events-requester"), RdmaTransferIT.hooks(requesterProvider));
    try {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 11;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 12;
      long written = 13;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      long writeAt = PAYLOAD + 128;
      Pattern.fill(local.segment(), writeAt, PAYLOAD, written, writeAt);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 64, peer, remote.regionId(), 64, PAYLOAD)
                  .withTransport(Transport.RDMA),
              TransferRequest.write(local, writeAt, peer, remote.regionId(), writeAt, PAYLOAD)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(60));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      for (TaskResult r : s.tasks()) {
        assertEquals(PAYLOAD, r.bytes(), r::toString);
      }
      assertEquals(
          2 * PAYLOAD,
          requesterProvider.payloadBytes("soft0") + requesterProvider.payloadBytes("soft1"),
          "the provider moved the READ's and the WRITE's bytes, once each");
      // Requester: the READ landed, its guards and the WRITE's source unchanged.
      assertEquals(-1, Pattern.verify(local.segment(), 0, 64, guard, 0), "guard before");
      assertEquals(-1, Pattern.verify(local.segment(), 64, PAYLOAD, data, 64), "the READ");
      assertEquals(
          -1,
          Pattern.verify(
              local.segment(), 64 + PAYLOAD, writeAt - 64 - PAYLOAD, guard, 64 + PAYLOAD),
          "guard between");
      assertEquals(
          -1, Pattern.verify(local.segment(), writeAt, PAYLOAD, written, writeAt), "WRITE source");
      long end = writeAt + PAYLOAD;
      assertEquals(-1, Pattern.verify(local.segment(), end, REGION - end, guard, end), "after");
      // Source: the WRITE landed, every other byte as it was.
      assertEquals(-1, Pattern.verify(remote.segment(), 0, writeAt, data, 0), "source before");
      assertEquals(
          -1, Pattern.verify(remote.segment(), writeAt, PAYLOAD, written, writeAt), "the WRITE");
      assertEquals(
          -1, Pattern.verify(remote.segment(), end, REGION - end, data, end), "source after");

      for (TransferEngine e : List.of(requester, source)) {
        assertTrue(
            Await.until(
                Duration.ofSeconds(5),
                () -> {
                  List<OwnerView.Owner> lanes =
                      e.ownerView().owners().stream()
                          .filter(o -> o.kind().equals("CqLane"))
                          .toList();
                  return lanes.size() == 6
                      && lanes.stream()
                          .allMatch(o -> o.charges().getOrDefault("completionChannel", 0L) == 1)
                      && lanes.stream()
                              .mapToLong(o -> o.charges().getOrDefault("cqEvents", 0L))
                              .sum()
                          > 0;
                }),
            () -> "every lane has a channel and events were taken: " + e.ownerView());
      }
    } finally {
      requester.close(Duration.ofSeconds(30));
      source.close(Duration.ofSeconds(30));
    }
    assertTrue(requester.quarantined().isEmpty(), requester.quarantined()::toString);
    assertTrue(source.quarantined().isEmpty(), source.quarantined()::toString);
    for (SoftFaults provider : List.of(requesterProvider, sourceProvider)) {
      // Two rails of three lanes: the provider was asked to destroy six CQs and six channels.
      assertEquals(6, provider.destroyCalls(SoftFaults.Kind.CQ), "each lane's CQ, once");
      assertEquals(6, provider.destroyCalls(SoftFaults.Kind.COMP_CHANNEL), "each channel, once");
      assertEquals(2, provider.destroyCalls(SoftFaults.Kind.PD), "each device's PD, once");
    }
  }
}
