package io.orbite.nativebind.verbs.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.orbite.nativebind.Errno;
import io.orbite.nativebind.verbs.Ibv;
import io.orbite.nativebind.verbs.Verbs;
import io.orbite.nativebind.verbs.VerbsEnd;

/**
 * The local end of a soft conformance test: a {@link VerbsEnd} over a {@link SoftVerbs} of its own
 * (one device, {@code soft0}, on the address given, port 1, GID index 0) with a fault table.
 *
 * <p>Its QPs use an ACK timeout of {@link #SOFT_ACK_TIMEOUT} (a 4.3 s retry budget), as the soft
 * suite always did: the soft wire is TCP between JVMs on a loaded two-core runner. The soft-only
 * tests also drive the table directly (destroying through {@code verbs}, fetching completion events
 * themselves), so at {@link #close} an {@code EINVAL} destroy (of what the test destroyed itself, a
 * dead soft handle) is accepted, and every CQ is acknowledged in full before it is destroyed; both
 * are the soft provider's answers, safe only there.
 *
 * <p>The static helpers below address a QP by GID alone, on port 1, with the soft end's timeout:
 * the soft-only tests use them to reach QPs or GIDs a generic connect would not.
 */
final class SoftLocalEnd extends VerbsEnd {
  /** The ACK timeout exponent of a soft end: 4.096 us x 2^17 = 0.54 s per try. */
  static final int SOFT_ACK_TIMEOUT = 17;

  final SoftFaults faults;

  SoftLocalEnd(String ipv4) {
    this(SoftFaults.create(), ipv4);
  }

  private SoftLocalEnd(SoftFaults faults, String ipv4) {
    this(faults, SoftVerbs.create(SoftFabric.onAddress(ipv4, 1), faults));
  }

  private SoftLocalEnd(SoftFaults faults, SoftVerbs verbs) {
    super(verbs, verbs.getDeviceList().value().get(0), 1, 0, SOFT_ACK_TIMEOUT);
    this.faults = faults;
  }

  static void toInit(Verbs verbs, Verbs.Qp qp) {
    assertEquals(
        0,
        verbs.modifyQp(
            qp,
            new Verbs.QpAttr(Ibv.QPS_INIT, 0, QP_ACCESS, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, null),
            Ibv.QP_STATE | Ibv.QP_PKEY_INDEX | Ibv.QP_PORT | Ibv.QP_ACCESS_FLAGS));
  }

  static Verbs.QpAttr rtrAttr(Verbs.Gid gid, int remoteQpn) {
    Verbs.AddressVector av = new Verbs.AddressVector(0, 0, 1, gid, 0, 64);
    return new Verbs.QpAttr(
        Ibv.QPS_RTR, Ibv.MTU_4096, 0, 0, 1, remoteQpn, 0, 0, 0, 16, 1, 0, 0, 0, av);
  }

  static Verbs.QpAttr rtsAttr(int rnrRetry) {
    return new Verbs.QpAttr(
        Ibv.QPS_RTS, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, SOFT_ACK_TIMEOUT, 7, rnrRetry, null);
  }

  /** INIT to RTS, connected to {@code remoteQpn} at {@code gid}. */
  static void toRts(Verbs verbs, Verbs.Qp qp, Verbs.Gid gid, int remoteQpn, int rnrRetry) {
    assertEquals(0, verbs.modifyQp(qp, rtrAttr(gid, remoteQpn), RTR_MASK));
    assertEquals(0, verbs.modifyQp(qp, rtsAttr(rnrRetry), RTS_MASK));
  }

  /** Every CQ in full: the soft provider bounds the count by what is outstanding. */
  @Override
  protected int unackedEvents(Verbs.Cq cq) {
    return Integer.MAX_VALUE;
  }

  /** 0, or EINVAL for what the test destroyed itself. */
  @Override
  protected boolean closedOk(int rc) {
    return rc == 0 || rc == Errno.EINVAL.number();
  }

  @Override
  public void close() {
    faults.clearDestroyFaults();
    super.close();
  }
}
