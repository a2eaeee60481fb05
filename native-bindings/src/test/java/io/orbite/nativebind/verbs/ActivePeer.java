package io.orbite.nativebind.verbs;

/** A {@link ConformancePeer} that can also start work: one signaled WR, waited for. */
public interface ActivePeer extends ConformancePeer {
  /**
   * Posts one signaled {@code opcode} WR on QP {@code qpn} over {@code length} bytes at {@code
   * offset} of its own {@code local} buffer ({@code remoteAddr}/{@code rkey} for READ and WRITE,
   * {@code imm} as immOrInvalidate), and waits (5 s at most) for its completion.
   */
  Verbs.Wc post(
      int qpn,
      int opcode,
      Buffer local,
      int offset,
      int length,
      long remoteAddr,
      int rkey,
      int imm);
}
