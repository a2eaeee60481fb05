package io.orbite.transport.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.orbite.engine.Access;
import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;
import java.lang.foreign.Arena;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A READ of a range the source lane already holds a loan on ({@link Authority#checkHeld}) is
 * refused exactly as {@link Authority#check} refuses it, and takes no loan of its own.
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
