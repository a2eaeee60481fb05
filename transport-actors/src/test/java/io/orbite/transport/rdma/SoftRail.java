package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.view.OwnerBoard;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsResult;
import io.orbite.nativebind.verbs.soft.SoftFabric;
import io.orbite.nativebind.verbs.soft.SoftFaults;
import io.orbite.nativebind.verbs.soft.SoftVerbs;
import io.orbite.transport.HeldExecutor;
import io.orbite.transport.TestContexts;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One rail ({@code soft0}, two CQ lanes, their threads started) of the software verbs provider,
 * with its own fault table, and the parts an engine gives a transport's owners: a board, a
 * quarantine ledger, counters and a blocking-I/O executor the test can hold. For the tests of the
 * rail's owner actors ({@link RdmaContext}, {@link CqLaneOwner}); nothing of the provider is
 * stubbed.
 */
final class SoftRail implements AfterEachCallback {
  static final String DEVICE = "soft0";

  /** How long a test waits for an owner's answer or row. */
  static final Duration WAIT = Duration.ofSeconds(5);

  /** How long a test watches for a message that must not come. */
  static final Duration SHORT = Duration.ofMillis(300);

  final SoftFaults faults = SoftFaults.create();
  final SoftVerbs verbs = SoftVerbs.create(SoftFabric.onAddress("127.0.0.1", 1), faults);
  final OwnerBoard board = new OwnerBoard();
  final QuarantineLedger quarantine = new QuarantineLedger();
  final HeldExecutor blockingIo = new HeldExecutor();
  final EngineTally tally = new EngineTally();
  final RdmaCounters counters = new RdmaCounters(tally);
  final TransportContext context;
  final Rail rail;

  /**
   * While set, the engine's supervision of the owner under test sees an unexpected exception when a
   * message of the close type given at construction reaches it.
   */
  final AtomicBoolean breakAtClose = new AtomicBoolean();

  /** Lane threads a test blocked ({@link #block}), let go at {@link #close}. */
  private final List<CountDownLatch> blocked = new CopyOnWriteArrayList<>();

  /** A rail whose owners' supervision breaks at a message of type {@code close} when told to. */
  SoftRail(Class<?> close) {
    EngineConfig config = EngineConfig.defaults();
    FaultHooks hooks =
        new FaultHooks() {
          @Override
          public void beforeOwnerMessage(String owner, Object message) {
            if (breakAtClose.get() && close.isInstance(message)) {
              throw new IllegalStateException("test: the owner broke at its close");
            }
          }
        };
    context = TestContexts.context(config, blockingIo, tally, board, quarantine, hooks);
    Verbs.Device device = verbs.getDeviceList().value().getFirst();
    assertEquals(DEVICE, device.name());
    rail = Rail.open(verbs, device, 0, config.rdma(), context.registry(), tally);
    assertEquals(2, rail.lanes.size(), "rdma.lanes defaults to 2");
    rail.lanes.forEach(CqLane::start);
  }

  /** The lane at {@code index} now (a reclaim replaces it). */
  CqLane lane(int index) {
    return rail.lanes.get(index);
  }

  /** A QP in INIT on {@code lane}'s CQ, made under the route published now, held by its owner. */
  HeldQp qp(CqLane lane) {
    VerbsResult<Verbs.Qp> made = rail.connector.createQp(lane, false);
    assertTrue(made.ok(), made::describe);
    HeldQp held = new HeldQp();
    held.qp = new RcQp(made.value(), lane, rail, 0, 0);
    held.qp.owner = held;
    return held;
  }

  /**
   * Blocks {@code lane}'s thread in a task of its inbox until {@link #close}, as a lane stuck in a
   * native call would be: it cannot end when stopped.
   */
  void block(CqLane lane) {
    CountDownLatch latch = new CountDownLatch(1);
    CountDownLatch entered = new CountDownLatch(1);
    blocked.add(latch);
    assertTrue(
        lane.submit(
            () -> {
              entered.countDown();
              try {
                latch.await();
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            }));
    try {
      assertTrue(entered.await(5, TimeUnit.SECONDS), "the lane took it");
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  /** Waits (at most {@link #WAIT}, on {@code probe}) until {@code what} holds. */
  static void await(TestProbe<?> probe, BooleanSupplier what, String said) {
    probe.awaitAssert(
        WAIT,
        () -> {
          assertTrue(what.getAsBoolean(), said);
          return null;
        });
  }

  /** Closes the rail after each test of the class that registers it as an extension. */
  @Override
  public void afterEach(ExtensionContext test) {
    close();
  }

  /** Lets blocked lane threads go and stops the executor's threads. */
  void close() {
    blocked.forEach(CountDownLatch::countDown);
    blockingIo.release();
    blockingIo.shutdown();
  }

  /**
   * A QP's owner that keeps it until the test destroys it: it records each request to retire it
   * (its lane faulted, or the monitor fenced its route) and does nothing else.
   */
  static final class HeldQp implements RcQp.QpOwner {
    RcQp qp;
    final List<String> retireRequests = new CopyOnWriteArrayList<>();

    @Override
    public void qpFailed(RcQp failed, String why) {
      retireRequests.add(why);
    }

    /** Destroys the QP now (it was never posted on), as its owner would. */
    void destroy() {
      assertEquals(0, qp.lane.closer.destroyUnused(qp), "ibv_destroy_qp");
      assertTrue(qp.destroyed());
    }
  }
}
