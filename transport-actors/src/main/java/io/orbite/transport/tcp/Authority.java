package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;

/**
 * The source-side authority check of every data frame (C2, C3): the frame's epoch must be this
 * engine's, and the range must lie inside a live registration that grants the direction. A granted
 * check holds a loan on the registration that the caller must return.
 */
public final class Authority {
  private final RegistryView registry;
  private final long localEpoch;

  public Authority(RegistryView registry, long localEpoch) {
    this.registry = registry;
    this.localEpoch = localEpoch;
  }

  /** The refusal code for a frame, or 0 with {@code loan[0]} set to the loaned registration. */
  public int check(Op op, long epoch, long regionId, long offset, long count, Registration[] loan) {
    if (epoch != localEpoch) {
      return ErrorKind.EPOCH_MISMATCH.code();
    }
    Registration r = registry.lookup(regionId);
    if (r == null) {
      return ErrorKind.PERMISSION_DENIED.code();
    }
    if (!r.covers(offset, count)) {
      return ErrorKind.INVALID_ARGUMENT.code();
    }
    if (!r.access().allows(op)) {
      return ErrorKind.PERMISSION_DENIED.code();
    }
    if (!r.tryLoan()) {
      return ErrorKind.PERMISSION_DENIED.code();
    }
    loan[0] = r;
    return 0;
  }

  /**
   * {@link #check} for a frame of {@code held}, a registration on which the caller still holds a
   * loan from an earlier check: the same refusals in the same order, and no second loan. A range
   * hidden since that loan was taken is refused, as {@link Registration#tryLoan} would refuse it.
   */
  public int checkHeld(Op op, long epoch, Registration held, long offset, long count) {
    if (epoch != localEpoch) {
      return ErrorKind.EPOCH_MISMATCH.code();
    }
    if (!held.covers(offset, count)) {
      return ErrorKind.INVALID_ARGUMENT.code();
    }
    if (!held.access().allows(op) || !held.visible()) {
      return ErrorKind.PERMISSION_DENIED.code();
    }
    return 0;
  }
}
