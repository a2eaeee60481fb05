package io.orbite.qualification.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.config.TimeoutConfig;
import io.orbite.engine.Access;
import io.orbite.engine.Batch;
import io.orbite.engine.BatchStatus;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.OwnerState;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.RegisteredMemory;
import io.orbite.engine.RemoteEffect;
import io.orbite.engine.RemoteSegment;
import io.orbite.engine.TaskResult;
import io.orbite.engine.TaskState;
import io.orbite.engine.TransferEngine;
import io.orbite.engine.TransferRequest;
import io.orbite.engine.Transport;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.fault.FaultInjection;
import io.orbite.engine.spi.Registration;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.qualification.Await;
import io.orbite.qualification.verify.Pattern;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * MR cleanup failure and engine replacement: the requester's persistent MR cannot be deregistered
 * when its engine closes. The MR is kept (never deregistered again), its context is quarantined,
 * and its registration stays loaned, so its memory is never freed under the device: it still holds
 * its bytes. A fresh engine in the same process, with a fresh epoch, then moves verified bytes over
 * RDMA to the same source.
 */
class RdmaCleanupIT {
  private static final long REGION = 4L << 20;
  private static final long TASK = 1L << 20;

  @Test
  void anMrThatCannotBeDeregisteredKeepsItsMemoryAndAFreshEngineCarriesOn() {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks = RdmaTransferIT.hooks(faults);
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("mr-source"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 71;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);

      TransferEngine first = FaultInjection.start(RdmaTransferIT.rdmaConfig("mr-first"), hooks);
      RegisteredMemory local = first.allocate(REGION, Access.READ_WRITE);
      long firstEpoch = first.localSegment().epoch();
      read(first, local, source, remote, data);
      faults.failNextDestroy(SoftFaults.Kind.MR, 5, true);
      first.close(Duration.ofSeconds(30));

      Registration kept = (Registration) local;
      assertFalse(kept.released(), "the memory under the kept MR was not freed");
      assertTrue(kept.loans() > 0, "the kept MR holds a loan on its registration");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 0, TASK, data, 0),
          "and it still holds the bytes the READ brought");
      List<QuarantinedOwner> quarantined = first.quarantined();
      assertTrue(
          quarantined.stream().anyMatch(q -> q.owner().startsWith("RdmaContext")),
          () -> "its context is quarantined: " + quarantined);
      // The provider's own counts: the kept MR's context never tried its PD (the MR holds it),
      // the other context released its PD; a second close deregisters and deallocates nothing.
      int mrDestroys = faults.destroyCalls(SoftFaults.Kind.MR);
      assertTrue(mrDestroys > 0, "the provider was asked to deregister MRs at close");
      assertEquals(1, faults.destroyCalls(SoftFaults.Kind.PD), "only the other context's PD");
      assertEquals(1, faults.destroyCalls(SoftFaults.Kind.CONTEXT), "only the other device");
      first.close(Duration.ofSeconds(5));
      assertEquals(mrDestroys, faults.destroyCalls(SoftFaults.Kind.MR), "the MR never retried");
      assertEquals(1, faults.destroyCalls(SoftFaults.Kind.PD), "no PD retried");
      assertEquals(1, faults.destroyCalls(SoftFaults.Kind.CONTEXT), "no device closed again");

      try (TransferEngine second = TransferEngine.start(RdmaTransferIT.rdmaConfig("mr-second"))) {
        assertNotEquals(firstEpoch, second.localSegment().epoch(), "a fresh epoch");
        RegisteredMemory fresh = second.allocate(REGION, Access.READ_WRITE);
        read(second, fresh, source, remote, data);
      }
    }
  }

  /**
   * A CQ, then (in other engines) a completion channel and a PD, whose destroy fails when its
   * engine closes: the context is quarantined naming the call, what depends on the failed object is
   * kept (a failed CQ or channel stops the PD and the context from being released), and a second
   * close retries nothing. The channel's engine runs {@code rdma.completionEvents}: each lane's CQ
   * is on a channel, destroyed after its CQ.
   */
  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(
      value = SoftFaults.Kind.class,
      names = {"CQ", "COMP_CHANNEL", "PD"})
  void aFailedCqOrPdDestroyQuarantinesItsContextAndIsNeverRetried(SoftFaults.Kind kind) {
    SoftFaults faults = SoftFaults.create();
    FaultHooks hooks = RdmaTransferIT.hooks(faults);
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("dep-source"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 81;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      EngineConfig config = RdmaTransferIT.rdmaConfig("dep-" + kind);
      boolean channels = kind == SoftFaults.Kind.COMP_CHANNEL;
      if (channels) {
        config = config.withRdma(config.rdma().withCompletionEvents(true));
      }
      TransferEngine engine = FaultInjection.start(config, hooks);
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      read(engine, local, source, remote, data);
      faults.failNextDestroy(kind, 5, true);
      engine.close(Duration.ofSeconds(30));
      String call =
          switch (kind) {
            case CQ -> "ibv_destroy_cq";
            case COMP_CHANNEL -> "ibv_destroy_comp_channel";
            default -> "ibv_dealloc_pd";
          };
      List<QuarantinedOwner> q = engine.quarantined();
      assertTrue(
          q.stream()
              .anyMatch(o -> o.owner().startsWith("RdmaContext") && o.reason().contains(call)),
          () -> "the context is quarantined naming " + call + ": " + q);
      int channelDestroys = faults.destroyCalls(SoftFaults.Kind.COMP_CHANNEL);
      // Two rails of three lanes: a channel per lane with events on, none without.
      assertEquals(channels ? 6 : 0, channelDestroys, "each lane's channel destroyed once");
      // The provider's own count of PD deallocations: a failed CQ or channel keeps its context's
      // PD (never asked); a failed PD was asked once, like the other context's.
      int pds = kind == SoftFaults.Kind.PD ? 2 : 1;
      assertEquals(pds, faults.destroyCalls(SoftFaults.Kind.PD), "PDs the provider was asked");
      int mrDestroys = faults.destroyCalls(SoftFaults.Kind.MR);
      engine.close(Duration.ofSeconds(5)); // a second close: nothing is destroyed again
      assertEquals(q, engine.quarantined(), "nothing changed, nothing retried");
      assertEquals(
          channelDestroys,
          faults.destroyCalls(SoftFaults.Kind.COMP_CHANNEL),
          "no channel destroyed again");
      assertEquals(pds, faults.destroyCalls(SoftFaults.Kind.PD), "no PD deallocated again");
      assertEquals(mrDestroys, faults.destroyCalls(SoftFaults.Kind.MR), "no MR deregistered again");
      assertTrue(((Registration) local).released(), "no MR was kept: the memory was freed");
    }
  }

  /**
   * A failed close of the requester's first device (sticky {@code EIO}) at engine close: its
   * context is quarantined naming {@code ibv_close_device}, the call was made once per device and a
   * second close makes none (counted in the provider), and a fresh engine in the same process moves
   * a verified READ. Spec 001's table keeps only the device owner here: the MRs, the CQs and the PD
   * were released before the close was tried, each with a native receipt, so the registration's
   * memory is freed (unlike a failed MR, above).
   */
  @Test
  void aDeviceCloseThatFailsQuarantinesItsContextIsNeverRetriedAndAFreshEngineCarriesOn() {
    SoftFaults faults = SoftFaults.create();
    try (TransferEngine source = TransferEngine.start(RdmaTransferIT.rdmaConfig("dev-source"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 91;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      TransferEngine engine =
          FaultInjection.start(RdmaTransferIT.rdmaConfig("dev-first"), hooks(faults));
      RegisteredMemory local = engine.allocate(REGION, Access.READ_WRITE);
      long firstEpoch = engine.localSegment().epoch();
      read(engine, local, source, remote, data);
      faults.failNextDestroy(SoftFaults.Kind.CONTEXT, 5, true);
      engine.close(Duration.ofSeconds(30));
      List<QuarantinedOwner> q = engine.quarantined();
      assertEquals(
          1,
          q.stream()
              .filter(
                  o ->
                      o.owner().startsWith("RdmaContext")
                          && o.reason().contains("ibv_close_device errno 5"))
              .count(),
          () -> "one context is quarantined naming ibv_close_device: " + q);
      assertEquals(2, faults.destroyCalls(SoftFaults.Kind.CONTEXT), "each device closed once");
      assertEquals(2, faults.destroyCalls(SoftFaults.Kind.PD), "each PD released once");
      engine.close(Duration.ofSeconds(5)); // a second close: nothing is closed again
      assertEquals(q, engine.quarantined(), "nothing changed");
      assertEquals(2, faults.destroyCalls(SoftFaults.Kind.CONTEXT), "the failed close not retried");
      assertEquals(2, faults.destroyCalls(SoftFaults.Kind.PD), "nor any PD");
      assertTrue(((Registration) local).released(), "every MR had its receipt: memory freed");
      assertEquals(
          -1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "the source is untouched");

      try (TransferEngine second = TransferEngine.start(RdmaTransferIT.rdmaConfig("dev-second"))) {
        assertNotEquals(firstEpoch, second.localSegment().epoch(), "a fresh epoch");
        RegisteredMemory fresh = second.allocate(REGION, Access.READ_WRITE);
        read(second, fresh, source, remote, data);
      }
    }
  }

  /**
   * A source whose window deallocations fail ({@code EIO}, the first two): each READ or WRITE still
   * completes on the requester with all its bytes (its payload and its completion SEND had landed
   * before the source released the window), while the source keeps each failed window's loan on its
   * registration and its {@code rdma.maxGrants} charge (never retried), its grant's owner stays,
   * quarantined and listed ({@code GRANT}) naming {@code ibv_dealloc_mw}, serves the next grant
   * while the budget allows (the WRITE after the first failure), and refuses the one after that
   * {@code RESOURCE_EXHAUSTED} naming {@code rdma.maxGrants}, with no effect and no byte moved.
   */
  @Test
  void windowsWhoseDeallocationFailsKeepTheirLoanAndChargeAndLaterGrantsAreRefusedClearly() {
    SoftFaults faults = SoftFaults.create();
    long task = 64 * 1024; // one slice, so one grant, per task
    try (TransferEngine source =
            FaultInjection.start(
                withMaxGrants(RdmaTransferIT.rdmaConfig("mw-source"), 2), hooks(faults));
        TransferEngine requester = TransferEngine.start(RdmaTransferIT.rdmaConfig("mw-req"))) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 61;
      long guard = 62;
      long written = 63;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      Pattern.fill(local.segment(), 2 * task, task, written, 2 * task);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      Registration held = (Registration) remote;
      faults.failNextDestroy(SoftFaults.Kind.MW, 5, false);
      faults.failNextDestroy(SoftFaults.Kind.MW, 5, false);

      TaskResult first =
          one(requester, TransferRequest.read(local, 0, peer, remote.regionId(), 0, task));
      assertEquals(TaskState.COMPLETED, first.state(), first::toString);
      assertEquals(task, first.bytes(), first::toString);
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> faults.destroyCalls(SoftFaults.Kind.MW) == 1),
          "the source tried to deallocate the first window");
      assertEquals(1, held.loans() - held.pins(), "the failed window keeps its loan");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 1),
          "and its rdma.maxGrants charge");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  source.quarantined().stream()
                      .anyMatch(
                          o ->
                              o.kind() == QuarantinedOwner.Kind.GRANT
                                  && o.owner().startsWith("RdmaGrant rdma source session ")
                                  && o.reason().contains("ibv_dealloc_mw failed (errno 5)"))),
          () -> "the grant is listed naming ibv_dealloc_mw: " + source.quarantined());
      // The owner view is published as owners report: wait for the kept grant's row.
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () ->
                  source.ownerView().owners().stream()
                          .filter(
                              o ->
                                  o.kind().equals("RdmaGrant")
                                      && o.state() == OwnerState.QUARANTINED)
                          .count()
                      == 1),
          () -> "the kept grant's owner stays: " + source.ownerView().owners());

      TaskResult second =
          one(
              requester,
              TransferRequest.write(local, 2 * task, peer, remote.regionId(), 2 * task, task));
      assertEquals(TaskState.COMPLETED, second.state(), second::toString);
      assertEquals(RemoteEffect.APPLIED, second.remoteEffect(), second::toString);
      assertTrue(
          Await.until(Duration.ofSeconds(10), () -> faults.destroyCalls(SoftFaults.Kind.MW) == 2),
          "the source tried to deallocate the second window");
      assertEquals(2, held.loans() - held.pins(), "both failed windows keep their loans");
      assertTrue(
          Await.until(
              Duration.ofSeconds(5),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "grants") == 2),
          "and both charges: the budget is spent");
      assertEquals(2, RdmaPeerIT.charge(source, "RdmaTransport", "grantsRetained"));

      TaskResult third =
          one(
              requester,
              TransferRequest.read(local, 4 * task, peer, remote.regionId(), 4 * task, task));
      assertEquals(TaskState.FAILED, third.state(), third::toString);
      assertEquals(ErrorKind.RESOURCE_EXHAUSTED, third.errorKind(), third::toString);
      assertTrue(third.detail().contains("rdma.maxGrants"), third::toString);
      assertEquals(RemoteEffect.NONE, third.remoteEffect(), third::toString);
      assertEquals(0, third.bytes(), third::toString);
      assertEquals(2, faults.destroyCalls(SoftFaults.Kind.MW), "no deallocation retried");
      // The refused task's reservation holds its loan until its DONE reaches the source.
      assertTrue(
          Await.until(Duration.ofSeconds(5), () -> held.loans() - held.pins() == 2),
          () -> "still held: the two kept windows' loans, " + (held.loans() - held.pins()));

      // Requester: the READ's range holds the source's bytes, the WRITE's its own, all else guard.
      assertEquals(-1, Pattern.verify(local.segment(), 0, task, data, 0), "the READ landed");
      assertEquals(-1, Pattern.verify(local.segment(), task, task, guard, task), "guard");
      assertEquals(
          -1, Pattern.verify(local.segment(), 2 * task, task, written, 2 * task), "WRITE source");
      assertEquals(
          -1,
          Pattern.verify(local.segment(), 3 * task, REGION - 3 * task, guard, 3 * task),
          "the refused READ's range and the rest untouched");
      // Source: only the WRITE's range changed.
      assertEquals(-1, Pattern.verify(remote.segment(), 0, 2 * task, data, 0), "source before");
      assertEquals(
          -1, Pattern.verify(remote.segment(), 2 * task, task, written, 2 * task), "WRITE landed");
      assertEquals(
          -1,
          Pattern.verify(remote.segment(), 3 * task, REGION - 3 * task, data, 3 * task),
          "source after");

      // At close, a kept window keeps its PD (spec 001: an MW prevents the PD's destruction), so
      // its context is quarantined too, and the loaned registration is never freed.
      source.close(Duration.ofSeconds(30));
      List<QuarantinedOwner> closed = source.quarantined();
      assertTrue(
          closed.stream()
              .anyMatch(
                  o ->
                      o.owner().startsWith("RdmaContext")
                          && o.reason().contains("ibv_dealloc_pd errno 16")),
          () -> "a context kept by its window's PD: " + closed);
      assertFalse(held.released(), "the loaned registration is retained");
      assertEquals(2, faults.destroyCalls(SoftFaults.Kind.MW), "no deallocation retried at close");
      // The provider's own counts: both PDs were asked for once (a kept window's answered EBUSY),
      // and a device under a busy PD was never closed.
      long busy =
          closed.stream().filter(o -> o.reason().contains("ibv_dealloc_pd errno 16")).count();
      assertEquals(2, faults.destroyCalls(SoftFaults.Kind.PD), "each PD asked once");
      assertEquals(
          2 - busy, faults.destroyCalls(SoftFaults.Kind.CONTEXT), "only free devices closed");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, 2 * task, data, 0), "its bytes");
    }
  }

  private static FaultHooks hooks(SoftFaults faults) {
    return new FaultHooks() {
      @Override
      public Object rdmaFaults() {
        return faults;
      }
    };
  }

  /**
   * A window still bound when the source closes its side, whose deallocation then fails: its grant
   * is kept while its session settles (the window is released by the session's close, after its
   * thread ended the serving). The session's owner still tells the transport the session ended once
   * only that kept grant is left, so the source side closes (no session is left), and the grant
   * stays listed with its loan; the requester's READ fails with nothing landed.
   */
  @Test
  void aWindowKeptWhileItsSessionSettlesStillLetsTheSourceSideClose() throws Exception {
    SoftFaults faults = SoftFaults.create();
    HeldPosts hold = new HeldPosts();
    try (TransferEngine source =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("settle-source"), hooks(faults));
        TransferEngine requester =
            FaultInjection.start(RdmaTransferIT.rdmaConfig("settle-req"), hold)) {
      RegisteredMemory remote = source.allocate(REGION, Access.READ_WRITE);
      long data = 64;
      Pattern.fill(remote.segment(), 0, REGION, data, 0);
      RegisteredMemory local = requester.allocate(REGION, Access.READ_WRITE);
      long guard = 65;
      Pattern.fill(local.segment(), 0, REGION, guard, 0);
      RemoteSegment peer =
          requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
      Batch batch = requester.allocateBatch(1);
      batch.submit(
          List.of(
              TransferRequest.read(local, 0, peer, remote.regionId(), 0, 64 * 1024)
                  .withTransport(Transport.RDMA)));
      assertTrue(hold.awaitFirstPost(), "the slice's window is bound at the source");
      faults.failNextDestroy(SoftFaults.Kind.MW, 5, false);

      source.closeSource(Duration.ofSeconds(10));
      assertTrue(
          Await.until(
              Duration.ofSeconds(10),
              () -> RdmaPeerIT.charge(source, "RdmaTransport", "sourceSessions") == 0),
          () -> "the settled session is gone from the transport: " + source.ownerView());
      assertTrue(
          source.quarantined().stream()
              .anyMatch(
                  o ->
                      o.kind() == QuarantinedOwner.Kind.GRANT
                          && o.reason().contains("ibv_dealloc_mw failed (errno 5)")),
          () -> "the grant kept while its session settled is listed: " + source.quarantined());
      assertTrue(((Registration) remote).loans() > 0, "and it keeps its loan");

      hold.letGo();
      BatchStatus s = batch.await(Duration.ofSeconds(30));
      batch.free();
      TaskResult r = s.tasks().getFirst();
      assertEquals(TaskState.FAILED, r.state(), r::toString);
      assertEquals(0, r.bytes(), r::toString);
      assertEquals(-1, Pattern.verify(local.segment(), 0, REGION, guard, 0), "nothing landed");
      assertEquals(-1, Pattern.verify(remote.segment(), 0, REGION, data, 0), "source unchanged");
    }
  }

  /** {@code c} with {@code rdma.maxGrants} set (and a 1 s destruction window, to close fast). */
  static EngineConfig withMaxGrants(EngineConfig c, int maxGrants) {
    RdmaConfig r = c.rdma();
    return c.withTimeouts(TimeoutConfig.defaults().withDestructionWindowMillis(1_000))
        .withRdma(
            new RdmaConfig(
                r.enabled(),
                r.provider(),
                r.devices(),
                r.lanes(),
                r.softwareAddress(),
                r.softwareDevices(),
                r.maxEndpoints(),
                maxGrants,
                r.maxSendWr(),
                r.maxCqes(),
                r.railErrors(),
                r.railErrorWindowMillis(),
                r.railCooldownMillis(),
                r.railMaxCooldownMillis(),
                r.railProbeIntervalMillis(),
                r.priorityAgingMillis(),
                r.priorityAgingPerEntry(),
                r.softwareAddresses(),
                r.gidIndex(),
                r.maxDirectBytes(),
                r.selection()));
  }

  /** One request, over RDMA, awaited. */
  private static TaskResult one(TransferEngine requester, TransferRequest request) {
    Batch batch = requester.allocateBatch(1);
    batch.submit(List.of(request.withTransport(Transport.RDMA)));
    TaskResult r = batch.await(Duration.ofSeconds(30)).tasks().getFirst();
    batch.free();
    return r;
  }

  /** One RDMA READ of 1 MiB into {@code local}, its bytes and guards checked. */
  /**
   * A READ of {@value #TASK} B from the start of {@code remote} (filled with {@code data}) into
   * {@code local} (at least {@value #REGION} B, refilled with a guard), over a segment opened for
   * it: it completes, its bytes and every guard byte after it checked.
   */
  static void read(
      TransferEngine requester,
      RegisteredMemory local,
      TransferEngine source,
      RegisteredMemory remote,
      long data) {
    long guard = data + 1;
    Pattern.fill(local.segment(), 0, REGION, guard, 0);
    RemoteSegment peer =
        requester.openSegment(source.localSegment().endpoint(), Duration.ofSeconds(20));
    Batch batch = requester.allocateBatch(1);
    batch.submit(
        List.of(
            TransferRequest.read(local, 0, peer, remote.regionId(), 0, TASK)
                .withTransport(Transport.RDMA)));
    BatchStatus s = batch.await(Duration.ofSeconds(30));
    batch.free();
    assertTrue(s.allCompleted(), s::toString);
    assertEquals(-1, Pattern.verify(local.segment(), 0, TASK, data, 0), "payload");
    assertEquals(-1, Pattern.verify(local.segment(), TASK, REGION - TASK, guard, TASK), "guards");
  }
}
