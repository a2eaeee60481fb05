package io.orbite.transport.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.engine.Access;
import io.orbite.engine.Op;
import io.orbite.engine.OwnerState;
import io.orbite.engine.OwnerView;
import io.orbite.engine.QuarantinedOwner;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.spi.EngineTally;
import io.orbite.engine.spi.OwnerSupervision;
import io.orbite.engine.spi.QuarantineLedger;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.view.OwnerBoard;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * The owner of one source-side grant, driven as its session drives it (the reservation counting
 * windows where they open and close, the owner told when the task drains, ends or keeps a window):
 * it gives the task's loan back only once the reservation ended, and keeps it for good, quarantined
 * and listed, when a window could not be released. Its row follows its state.
 */
class GrantOwnerTest {
  private static final ActorTestKit testKit = ActorTestKit.create();

  @AfterAll
  static void shutdown() {
    testKit.shutdownTestKit();
  }

  private final Arena arena = Arena.ofAuto();
  private final OwnerBoard board = new OwnerBoard();
  private final QuarantineLedger quarantine = new QuarantineLedger();
  private final TestProbe<GrantOwner.Kept> parent = testKit.createTestProbe();
  private final TestProbe<Object> watcher = testKit.createTestProbe();

  private Registration registration() {
    return new Registration(7, arena.allocate(1 << 17), Access.READ_WRITE, null);
  }

  /** A reserved READ of region 7's {@code [4096, +65536)} in 4 slices, holding one loan. */
  private Reservation reservation(Registration registration) {
    assertTrue(registration.tryLoan(), "the reservation's loan");
    return Reservation.reserved(
        new RdmaWire.Reserve(31, Op.READ.ordinal(), 7, 4096, 65536, 4), Op.READ, registration);
  }

  private final OwnerSupervision supervision =
      new OwnerSupervision("test@here", quarantine, new EngineTally(), board, FaultHooks.NONE);

  private ActorRef<GrantOwner.Command> grant(Reservation r) {
    return testKit.spawn(
        GrantOwner.create(
            r, "rdma source session 3", board, quarantine, supervision, parent.ref()));
  }

  private Optional<OwnerView.Owner> row() {
    return board.snapshot().owners().stream().filter(o -> o.kind().equals("RdmaGrant")).findFirst();
  }

  /** Waits until the grant's row is in {@code state} with {@code windows} windows held. */
  private OwnerView.Owner awaitRow(OwnerState state, long windows) {
    return parent.awaitAssert(
        Duration.ofSeconds(5),
        () -> {
          OwnerView.Owner r = row().orElseThrow(() -> new AssertionError("no row"));
          assertEquals(state, r.state(), r::toString);
          assertEquals(windows, r.charges().get("windows"), r::toString);
          return r;
        });
  }

  @Test
  void theLoanGoesBackOnlyOnceDoneCameAndTheLastWindowWasReleased() {
    Registration reg = registration();
    Reservation r = reservation(reg);
    r.admit(Op.READ, 4096, 16384);
    r.admit(Op.READ, 4096 + 16384, 16384);
    ActorRef<GrantOwner.Command> g = grant(r);
    g.tell(GrantOwner.Refresh.INSTANCE); // its session owner's tick: it re-publishes its row
    OwnerView.Owner active = awaitRow(OwnerState.ACTIVE, 2);
    assertEquals(65536L, active.charges().get("bytes"), active::toString);
    assertEquals(7L, active.charges().get("regionId"), active::toString);
    assertEquals(4096L, active.charges().get("offset"), active::toString);
    assertTrue(
        active.detail().contains("READ of region 7 [4096, 69632) for parent 31 in 4 slice(s)"),
        active::detail);
    assertEquals(false, r.windowClosed(true, 16384).ended(), "no DONE yet");

    // DONE while a window is open: the session tells the grant it drains; the loan stays.
    assertEquals(false, r.done().ended(), "a window is still open");
    g.tell(GrantOwner.Draining.INSTANCE);
    awaitRow(OwnerState.DRAINING, 1);
    assertEquals(1, reg.loans(), "DONE came, but a window is still open");

    // The last release ends the reservation there, and its owner gives the loan back.
    assertEquals(true, r.windowClosed(true, 16384).ended(), "the last window's release ends it");
    g.tell(GrantOwner.Ended.INSTANCE);
    watcher.expectTerminated(g, Duration.ofSeconds(5));
    assertEquals(0, reg.loans(), "the loan went back");
    assertTrue(row().isEmpty(), () -> "its row is withdrawn: " + row());
    assertTrue(quarantine.list().isEmpty(), quarantine.list()::toString);
    parent.expectNoMessage(Duration.ofMillis(50));
  }

  @Test
  void aGrantWhoseWindowsWereAllReleasedEndsAtItsDone() {
    Registration reg = registration();
    Reservation r = reservation(reg);
    ActorRef<GrantOwner.Command> g = grant(r);
    r.admit(Op.READ, 4096, 65536);
    assertEquals(false, r.windowClosed(true, 65536).ended());
    assertEquals(1, reg.loans(), "held until DONE");
    assertEquals(true, r.done().ended(), "DONE after the last release ends it");
    g.tell(GrantOwner.Ended.INSTANCE);
    watcher.expectTerminated(g, Duration.ofSeconds(5));
    assertEquals(0, reg.loans());
    assertTrue(row().isEmpty(), () -> "its row is withdrawn: " + row());
  }

  @Test
  void aWindowThatCouldNotBeReleasedKeepsTheLoanForGoodAndListsTheGrant() {
    Registration reg = registration();
    Reservation r = reservation(reg);
    r.admit(Op.READ, 4096, 16384);
    r.admit(Op.READ, 4096 + 16384, 16384);
    ActorRef<GrantOwner.Command> g = grant(r);
    assertEquals(false, r.windowClosed(false, 0).ended(), "kept");
    g.tell(new GrantOwner.WindowKept("ibv_dealloc_mw failed (errno 5)"));
    assertEquals(r, parent.receiveMessage(Duration.ofSeconds(5)).reservation());
    assertEquals(false, r.windowClosed(true, 16384).ended());
    assertEquals(false, r.done().ended(), "a kept reservation never ends");
    g.tell(GrantOwner.Draining.INSTANCE);
    awaitRow(OwnerState.QUARANTINED, 1);
    assertEquals(1, reg.loans(), "the kept window's grant never gives its loan back");
    List<QuarantinedOwner> q = quarantine.list();
    assertEquals(1, q.size(), q::toString);
    QuarantinedOwner kept = q.getFirst();
    assertEquals(QuarantinedOwner.Kind.GRANT, kept.kind());
    assertEquals("RdmaGrant rdma source session 3 parent 31", kept.owner());
    assertTrue(kept.reason().contains("ibv_dealloc_mw failed (errno 5)"), kept::reason);
    assertTrue(kept.reason().contains("its loan on region 7 is kept"), kept::reason);
    assertEquals(65536L, kept.bytes());
    assertTrue(row().orElseThrow().detail().contains("ibv_dealloc_mw failed"), row()::toString);

    // Still alive and holding: another kept window and its session owner's tick change nothing.
    g.tell(new GrantOwner.WindowKept("QP 9 could not be destroyed"));
    g.tell(GrantOwner.Refresh.INSTANCE);
    awaitRow(OwnerState.QUARANTINED, 1);
    assertEquals(1, reg.loans());
    assertEquals(1, quarantine.list().size(), "listed once");
  }
}
