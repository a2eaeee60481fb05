package io.orbite.qualification.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.MergeConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.config.TcpConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.PeerSegment;
import io.orbite.qualification.harness.EngineProcess;
import io.orbite.qualification.verify.Pattern;
import io.orbite.qualification.verify.Span;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a source advertises in Describe (its TCP frame payload limit and its {@code merge.maxBytes})
 * reaches its requesters' channels. A source configured with the smallest frame limit is read and
 * written in frames it takes by a requester left at the default (which would otherwise send frames
 * the source refuses as a protocol violation), every byte and guard checked on both sides; and each
 * channel (TCP, SHM, RDMA) merges up to the least of both sides' limits and its transport's own,
 * and not at all with {@code merge.enabled} off.
 */
class PeerTransferLimitsIT {
  /** The smallest {@code tcp.maxFramePayloadBytes}. */
  private static final int SMALL_FRAME = 4096;

  /** Many frames of the small limit, and a tail that fills none. */
  private static final long PAYLOAD = (1L << 20) + 777;

  private static final long LOCAL_AT = 4096 + 13;
  private static final long REMOTE_AT = 8192 + 5;
  private static final long REGION = REMOTE_AT + PAYLOAD + 4099;
  private static final Duration AWAIT = Duration.ofSeconds(60);

  /** Counts the READ responses with a payload the requester's lanes receive. */
  private static final class ReadResponses implements FaultHooks {
    final AtomicInteger count = new AtomicInteger();

    @Override
    public void beforeReadPayload(String lane) {
      count.incrementAndGet();
    }
  }

  @Test
  void aRequesterAtTheDefaultReadsAndWritesASourceWithSmallFramesInFramesItTakes() {
    ReadResponses responses = new ReadResponses();
    EngineConfig small =
        EngineConfig.defaults()
            .withName("small-frames-source")
            .withTcp(TcpConfig.defaults().withMaxFramePayloadBytes(SMALL_FRAME));
    EngineConfig defaults = EngineConfig.defaults().withName("small-frames-requester");
    assertTrue(defaults.tcp().maxFramePayloadBytes() > SMALL_FRAME);
    try (TransferEngine source = TransferEngine.start(small);
        TransferEngine requester = FaultInjection.start(defaults, responses)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(10));
      PeerChannel tcp = ((PeerSegment) peer).channel();
      assertEquals(Transport.TCP, tcp.transport());
      assertEquals(SMALL_FRAME, tcp.mergeLimitBytes(), "merged no further than one frame it takes");

      long data = 0x51a11L;
      long guard = 0x6a2dL;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      run(
          requester,
          TransferRequest.read(local, LOCAL_AT, peer, remote.regionId(), REMOTE_AT, PAYLOAD));
      EnginePair.assertRegion(
          local.segment(),
          List.of(new Span(LOCAL_AT, PAYLOAD, data, REMOTE_AT)),
          guard,
          "READ destination");
      assertEquals(
          -1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "READ source untouched");
      long frames = (PAYLOAD + SMALL_FRAME - 1) / SMALL_FRAME;
      assertTrue(
          responses.count.get() >= frames,
          "the READ came back in " + responses.count.get() + " frames, not at least " + frames);

      long written = 0x3c0ffL;
      long remoteGuard = 0x9e11L;
      Pattern.fill(local.segment(), 0, REGION, written, 0);
      Pattern.fill(remote.segment(), 0, REGION, remoteGuard, 0);
      run(
          requester,
          TransferRequest.write(local, LOCAL_AT, peer, remote.regionId(), REMOTE_AT, PAYLOAD));
      EnginePair.assertRegion(
          remote.segment(),
          List.of(new Span(REMOTE_AT, PAYLOAD, written, LOCAL_AT)),
          remoteGuard,
          "WRITE destination");
      assertEquals(
          -1, Pattern.verify(local.segment(), 0, REGION, written, 0), "WRITE source untouched");
    }
  }

  /** Runs {@code request} over TCP alone and asserts that it moved every byte. */
  private static void run(TransferEngine requester, TransferRequest request) {
    Batch batch = requester.allocateBatch(1);
    try {
      batch.submit(List.of(request.withTransport(Transport.TCP)));
      BatchStatus s = batch.await(AWAIT);
      TaskResult t = s.tasks().getFirst();
      assertTrue(s.allCompleted(), t::toString);
      assertEquals(PAYLOAD, t.bytes(), t::toString);
    } finally {
      batch.free();
    }
  }

  /** The source's advertised {@code merge.maxBytes}: above one SHM dealt part, below 1 MiB. */
  private static final long SOURCE_MERGE = 512L << 10;

  /** The SHM channel's own bound: the part of a run one lane is dealt. */
  private static final long SHM_PART = 256L << 10;

  @Test
  void eachChannelMergesUpToTheLeastOfBothSidesLimitsAndNotAtAllWithMergingOff(
      @TempDir(cleanup = CleanupMode.ON_SUCCESS) Path logs) throws Exception {
    String conf =
        "{\"shm\":{\"enabled\":true},"
            + "\"rdma\":{\"enabled\":true,\"softwareDevices\":1,\"lanes\":1},"
            + "\"merge\":{\"maxBytes\":"
            + SOURCE_MERGE
            + "}}";
    try (EngineProcess source =
        EngineProcess.start("merge-limits-source", logs, Map.of("ORBITE_CONF", conf))) {
      // An allocation exported through SHM, so the requester opens an SHM channel too.
      source.call("ALLOC 1048576 READ_WRITE");
      assertEquals(
          Map.of(
              Transport.TCP, SOURCE_MERGE, Transport.SHM, SHM_PART, Transport.RDMA, SOURCE_MERGE),
          limits(source, MergeConfig.defaults()),
          "a requester at the default merges up to the source's limit (SHM: one dealt part)");
      assertEquals(
          Map.of(Transport.TCP, 65_536L, Transport.SHM, 65_536L, Transport.RDMA, 65_536L),
          limits(source, MergeConfig.defaults().withMaxBytes(65_536)),
          "a requester's smaller merge.maxBytes bounds every channel");
      assertEquals(
          Map.of(Transport.TCP, 0L, Transport.SHM, 0L, Transport.RDMA, 0L),
          limits(source, MergeConfig.defaults().withEnabled(false)),
          "merge.enabled off: no channel takes merged work");
    }
  }

  /**
   * Opens {@code source} from a requester of this JVM with {@code merge} (and RDMA on) and answers
   * each of its channels' merge limit, by transport.
   */
  private static Map<Transport, Long> limits(EngineProcess source, MergeConfig merge) {
    EngineConfig config =
        EngineConfig.defaults()
            .withName("merge-limits-requester")
            .withMerge(merge)
            .withRdma(RdmaConfig.defaults().withEnabled(true).withSoftwareDevices(1).withLanes(1));
    try (TransferEngine requester = TransferEngine.start(config)) {
      RemoteSegment peer = requester.openSegment(source.endpoint(), Duration.ofSeconds(20));
      Map<Transport, Long> limits = new EnumMap<>(Transport.class);
      for (PeerChannel c : ((PeerSegment) peer).channels()) {
        limits.put(c.transport(), c.mergeLimitBytes());
      }
      return limits;
    }
  }
}
