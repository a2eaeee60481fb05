package io.orbite.transport.tcp;

import io.orbite.engine.ErrorKind;
import io.orbite.engine.Op;
import io.orbite.engine.security.AuthenticatedPeer;
import io.orbite.engine.spi.Registration;
import io.orbite.engine.spi.RegistryView;

/**
 * The source-side authority check of every data frame (C2, C3): the frame's epoch must be this
 * engine's, and the range must lie inside a live registration that grants the direction and whose
 * allow-list admits the connection's peer. A granted check holds a loan on the registration that
 * the caller must return.
 *
 * <p>One per connection ({@link #forPeer}): the peer its handshake proved is fixed for the
 * connection's life, so the check allocates nothing per frame.
 */
public final class Authority {
  private final RegistryView registry;
  private final long localEpoch;
  private final AuthenticatedPeer peer;

  /**
   * The check for a connection whose peer proved nothing: ranges with an allow-list are refused.
   *
   * @param registry the live registrations
   * @param localEpoch this incarnation's epoch
   */
  public Authority(RegistryView registry, long localEpoch) {
    this(registry, localEpoch, null);
  }

  /**
   * The check for a connection from {@code peer}.
   *
   * @param registry the live registrations
   * @param localEpoch this incarnation's epoch
   * @param peer who the connection's handshake proved its requester to be; null when it proved
   *     nothing (an engine that does not authenticate)
   */
  public Authority(RegistryView registry, long localEpoch, AuthenticatedPeer peer) {
    this.registry = registry;
    this.localEpoch = localEpoch;
    this.peer = peer;
  }

  /**
   * The same check for a connection from {@code peer}.
   *
   * @param peer who the connection's handshake proved its requester to be, or null
   * @return an authority over the same registrations and epoch
   */
  public Authority forPeer(AuthenticatedPeer peer) {
    return new Authority(registry, localEpoch, peer);
  }

  /** The refusal code for a frame, or 0 with {@code loan[0]} set to the loaned registration. */
  public int check(Op op, long epoch, long regionId, long offset, long count, Registration[] loan) {
    if (epoch != localEpoch) {
      return ErrorKind.EPOCH_MISMATCH.code();
    }
    Registration r = registry.lookup(regionId);
    if (r == null || !r.allows(peer)) {
      // A range this peer may not reach is refused as one that does not exist: its bounds and
      // access are not told.
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
    if (!held.allows(peer)) {
      return ErrorKind.PERMISSION_DENIED.code();
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
