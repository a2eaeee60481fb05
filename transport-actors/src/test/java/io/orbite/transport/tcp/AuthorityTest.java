package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.security.AuthenticatedPeer;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import java.lang.foreign.Arena;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A READ of a range the source lane already holds a loan on ({@link Authority#checkHeld}) is
 * refused exactly as {@link Authority#check} refuses it, and takes no loan of its own; a range with
 * an allow-list is refused to every connection whose peer did not prove a listed name.
 */
class AuthorityTest {
  private static final long EPOCH = 0xE90CL;
  private static final long LENGTH = 8192;

  private final Registration readOnly =
      new Registration(3, Arena.ofAuto().allocate(LENGTH), Access.READ, null);
  private final RegistryView view = new RegistryView();
  private final Authority authority = new Authority(view, EPOCH);
  private final Registration[] loan = new Registration[1];

  AuthorityTest() {
    view.publish(Map.of(readOnly.regionId(), readOnly));
  }

  @Test
  void aHeldRangeIsCheckedAsAFreshOneWithoutASecondLoan() {
    assertEquals(0, authority.check(Op.READ, EPOCH, 3, 0, 4096, loan));
    assertSame(readOnly, loan[0]);
    assertEquals(1, readOnly.loans());
    // Each frame is compared with what check answers for it, and neither takes a loan.
    long[][] frames = {
      {EPOCH, 0, 4096},
      {EPOCH, LENGTH - 4096, 4096},
      {EPOCH, LENGTH - 100, 200},
      {EPOCH, -1, 16},
      {EPOCH, 0, 0},
      {EPOCH + 1, 0, 4096},
    };
    for (long[] f : frames) {
      int held = authority.checkHeld(Op.READ, f[0], readOnly, f[1], f[2]);
      Registration[] other = new Registration[1];
      int fresh = authority.check(Op.READ, f[0], 3, f[1], f[2], other);
      if (fresh == 0) {
        readOnly.returnLoan();
      }
      assertEquals(fresh, held, () -> "frame epoch/offset/count " + java.util.Arrays.toString(f));
      assertEquals(1, readOnly.loans(), "checkHeld takes no loan");
    }
    assertEquals(
        ErrorKind.PERMISSION_DENIED.code(),
        authority.checkHeld(Op.WRITE, EPOCH, readOnly, 0, 4096),
        "the direction is still checked");
  }

  @Test
  void anAllowListedRangeIsRefusedToAnUnlistedOrUnprovenPeerBeforeAnyLoan() {
    Registration listed =
        new Registration(
            5,
            Arena.ofAuto().allocate(LENGTH),
            Access.READ_WRITE,
            null,
            null,
            "kv",
            Set.of("decode-1"));
    view.publish(Map.of(readOnly.regionId(), readOnly, listed.regionId(), listed));
    AuthenticatedPeer[] refused = {
      null, new AuthenticatedPeer("decode-2", 9, true), new AuthenticatedPeer("decode-1", 9, false)
    };
    int denied = ErrorKind.PERMISSION_DENIED.code();
    for (AuthenticatedPeer peer : refused) {
      Authority a = authority.forPeer(peer);
      for (Op op : Op.values()) {
        Registration[] taken = new Registration[1];
        assertEquals(denied, a.check(op, EPOCH, 5, 0, 4096, taken), () -> op + " by " + peer);
        assertEquals(
            denied,
            a.check(op, EPOCH, 5, LENGTH, 4096, taken),
            () -> op + " past the end by " + peer + ": refused as unknown, its length not told");
        assertNull(taken[0]);
        assertEquals(0, listed.loans(), () -> op + " by " + peer + " took no loan");
      }
      // A range without an allow-list still serves every peer.
      assertEquals(0, a.check(Op.READ, EPOCH, 3, 0, 4096, loan), () -> "unlisted range: " + peer);
      readOnly.returnLoan();
    }
    Authority allowed = authority.forPeer(new AuthenticatedPeer("decode-1", 9, true));
    for (Op op : Op.values()) {
      Registration[] taken = new Registration[1];
      assertEquals(0, allowed.check(op, EPOCH, 5, 0, 4096, taken), () -> op + " by decode-1");
      assertSame(listed, taken[0]);
      assertEquals(1, listed.loans());
      for (AuthenticatedPeer peer : refused) {
        assertEquals(
            denied,
            authority.forPeer(peer).checkHeld(op, EPOCH, listed, 0, 4096),
            () -> "a loan held elsewhere lets no other peer in: " + peer);
      }
      assertEquals(0, allowed.checkHeld(op, EPOCH, listed, 0, 4096));
      listed.returnLoan();
    }
  }

  @Test
  void aHeldRangeHiddenSinceItsLoanIsRefused() {
    assertEquals(0, authority.check(Op.READ, EPOCH, 3, 0, 4096, loan));
    readOnly.hide();
    assertEquals(
        ErrorKind.PERMISSION_DENIED.code(),
        authority.checkHeld(Op.READ, EPOCH, readOnly, 0, 4096),
        "a range being unregistered serves no new frame, even under a loan already held");
    assertEquals(1, readOnly.loans());
    readOnly.returnLoan();
  }
}
