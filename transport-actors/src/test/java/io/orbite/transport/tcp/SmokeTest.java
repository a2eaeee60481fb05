package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class SmokeTest {
  @Test
  void readAndWriteOneRange() {
    try (TransferEngine source = TransferEngine.start(EngineConfig.defaults().withName("source"));
        TransferEngine requester = TransferEngine.start(EngineConfig.defaults().withName("requester"))) {
      RegisteredMemory remote = source.allocate(8 << 20, Access.READ_WRITE);
      Patterns.fill(remote.segment(), 7);
      RegisteredMemory local = requester.allocate(8 << 20, Access.READ_WRITE);
      RemoteSegment peer = requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      Batch b = requester.allocateBatch(16);
      b.submit(List.of(TransferRequest.read(local, 0, peer, remote.regionId(), 0, 4 << 20)));
      BatchStatus s = b.await(Duration.ofSeconds(10));
      System.out.println(s);
      assertTrue(s.allCompleted());
      assertEquals(-1, Patterns.mismatch(local.segment(), 0, 4 << 20, 7, 0));
      b.free();
    }
  }
}
