package io.orbite.qualification.rdma;

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
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferException;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.wire.FrameCodec;
import io.orbite.engine.wire.FrameType;
import io.orbite.qualification.verify.Pattern;
import java.io.DataInputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The RDMA transport's refusals, each before any side effect, checked with both regions: the
 * source's own authority check (C2) on a range it no longer publishes, its {@code rdma.maxGrants}
 * budget, the requester's {@code rdma.maxEndpoints} budget, and a stale epoch on the RDMA control
 * connection (refused at its HELLO, before any QP exists).
 */
class RdmaBudgetsIT {
  private static final long REGION = 2L << 20;
  private static final long TASK = 64 * 1024;

  @Test
  void theSourceRefusesAGrantForARangeItNoLongerPublishesAndNothingMoves() {
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("c2-source"));
        TransferEngine requester = TransferEngine.start(RdmaTransferIT.rdmaConfig("c2-req"))) {
      java.lang.foreign.MemorySegment own = java.lang.foreign.Arena.global().allocate(REGION, 4096);
      RegisteredMemory remote = source.register(own, Access.READ_WRITE);
      long data = 11;
      Pattern.fill(own, 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 12;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      source.unregister(remote);
      Batch batch = requester.allocateBatch(2);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                  .withTransport(Transport.RDMA),
              TransferRequest.write(local, TASK, peer, remote.regionId(), TASK, TASK)
                  .withTransport(Transport.RDMA)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      for (TaskResult r : s.tasks()) {
        assertEquals(ErrorKind.PERMISSION_DENIED, r.errorKind(), r::toString);
        assertEquals(RemoteEffect.NONE, r.remoteEffect(), r::toString);
        assertEquals(0, r.bytes());
        assertTrue(r.locallyDrained());
        assertTrue(r.detail().contains("refused"), r::toString);
      }
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");
      assertEquals(-1, Pattern.verify(own, 0, REGION, data, 0), "the source is untouched");
    }
  }

  @Test
  void grantsBeyondTheSourcesBudgetAreRefusedResourceExhaustedWithNoEffect() {
    EngineConfig tight = RdmaTransferIT.rdmaConfig("grants-source");
    tight =
        tight.withRdma(
            new io.orbite.config.RdmaConfig(
                true,
                "software",
                List.of(),
                tight.rdma().lanes(),
                "127.0.0.1",
                2,
                64,
                1,
                16,
                1024,
                3,
                10_000,
                30_000,
                300_000,
                1_000,
                10,
                false,
                List.of(),
                io.orbite.config.RdmaConfig.DEFAULT_GID_INDEX,
                io.orbite.config.RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
                io.orbite.config.RdmaSelectionConfig.defaults()));
    try (TransferEngine source = TransferEngine.start(tight);
        TransferEngine requester = TransferEngine.start(RdmaTransferIT.rdmaConfig("grants-req"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 21;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 22;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      int n = (int) (REGION / TASK);
      List<TransferRequest> reads = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        reads.add(
            TransferRequest.read(local, i * TASK, peer, remote.regionId(), i * TASK, TASK)
                .withTransport(Transport.RDMA));
      }
      Batch batch = requester.allocateBatch(n);
      batch.submit(reads);
      BatchStatus s = batch.await(Duration.ofSeconds(60));
      batch.free();
      int refused = 0;
      for (TaskResult r : s.tasks()) {
        long at = r.index() * TASK;
        if (r.errorKind() == null) {
          assertEquals(-1, Pattern.verify(local.segment(), at, TASK, data, at), r::toString);
        } else {
          refused++;
          assertEquals(ErrorKind.RESOURCE_EXHAUSTED, r.errorKind(), r::toString);
          assertTrue(r.detail().contains("rdma.maxGrants"), r::toString);
          assertEquals(RemoteEffect.NONE, r.remoteEffect());
          assertEquals(0, r.bytes());
          assertEquals(-1, Pattern.verify(local.segment(), at, TASK, guard, at), "untouched");
        }
      }
      assertTrue(refused > 0, "one grant at a time: the rest of a burst is refused");
      assertTrue(refused < n, "and the grant that fits is served");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source untouched");
    }
  }

  @Test
  void anEndpointBeyondTheRequestersBudgetIsRefusedAndUnspecUsesTcp() {
    EngineConfig one = RdmaTransferIT.rdmaConfig("ep-req");
    var r = one.rdma();
    one =
        one.withRdma(
            new io.orbite.config.RdmaConfig(
                true,
                "software",
                List.of(),
                r.lanes(),
                "127.0.0.1",
                2,
                1,
                r.maxGrants(),
                r.maxSendWr(),
                r.maxCqes(),
                r.railErrors(),
                r.railErrorWindowMillis(),
                r.railCooldownMillis(),
                r.railMaxCooldownMillis(),
                r.railProbeIntervalMillis(),
                r.priorityAgingMillis(),
                r.priorityAgingPerEntry(),
                List.of(),
                io.orbite.config.RdmaConfig.DEFAULT_GID_INDEX,
                io.orbite.config.RdmaConfig.DEFAULT_MAX_DIRECT_BYTES,
                io.orbite.config.RdmaSelectionConfig.defaults()));
    try (TransferEngine a = TransferEngine.start(RdmaTransferIT.rdmaConfig("ep-a"));
        TransferEngine b = TransferEngine.start(RdmaTransferIT.rdmaConfig("ep-b"));
        TransferEngine requester = TransferEngine.start(one)) {
      RegisteredMemory remote = b.allocate(REGION, Access.READ_WRITE);
      long data = 31;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      requester.openSegment(a.localSegment().endpoint(), Duration.ofSeconds(20));
      RemoteSegment second =
          requester.openSegment(b.localSegment().endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(1);
      TransferException e =
          assertThrows(
              TransferException.class,
              () ->
                  batch.submit(
                      List.of(
                          TransferRequest.read(local, 0, second, remote.regionId(), 0, TASK)
                              .withTransport(Transport.RDMA))));
      assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e::getMessage);
      assertTrue(e.getMessage().contains("rdma.maxEndpoints"), e::getMessage);
      assertEquals(0, batch.status().tasks().size(), "nothing admitted");
      long tcp = requester.counters().of(Transport.TCP).tasksDispatched.sum();
      long guard = 32;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      batch.submit(List.of(TransferRequest.read(local, 0, second, remote.regionId(), 0, TASK)));
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      assertTrue(s.allCompleted(), s::toString);
      assertEquals(tcp + 1, requester.counters().of(Transport.TCP).tasksDispatched.sum());
      assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0));
      assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK));
    }
  }

  @Test
  void aStaleEpochOnTheRdmaControlConnectionIsRefusedAtItsHello() throws Exception {
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("hello-src"))) {
      var self = source.localSegment();
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(self.host(), self.port()), 5_000);
        s.setSoTimeout(10_000);
        ByteBuffer hello = ByteBuffer.allocate(FrameCodec.HEADER_BYTES);
        long stale = self.epoch() ^ 0x5a5a;
        FrameCodec.encode(
            hello, 0, FrameType.HELLO, 0, 0, 1, stale, 0x1234, 0, Transport.RDMA.code());
        s.getOutputStream().write(hello.array());
        byte[] ack = new byte[FrameCodec.HEADER_BYTES];
        new DataInputStream(s.getInputStream()).readFully(ack);
        ByteBuffer a = ByteBuffer.wrap(ack);
        assertEquals(FrameType.HELLO_ACK, FrameCodec.type(a, 0));
        assertEquals(ErrorKind.EPOCH_MISMATCH.code(), FrameCodec.status(a, 0));
        assertEquals(self.epoch(), FrameCodec.epoch(a, 0), "the answer names the live epoch");
        assertEquals(-1, s.getInputStream().read(), "and the connection is closed");
      }
      assertTrue(
          io.orbite.qualification.Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "sourceSessions") == 0),
          "no session is left");
    }
  }
}
