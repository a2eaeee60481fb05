package io.orbite.engine;

import java.util.List;

/**
 * What this engine served as a source, read at one moment ({@link Engine#sourceLedger()}): the
 * bytes served to each requester by transport and op, and the requesters connected now with their
 * epochs. An immutable snapshot, like {@link EngineCounters}; observability reads it.
 *
 * <p>A requester is named by a label its HELLO gives the source: today {@code "<remote
 * address>@<requester epoch hex>"}. At most {@link #MAX_REQUESTERS} labels are kept by name; bytes
 * served to later ones are counted under {@link #OTHER}, so churn cannot grow it.
 *
 * <p>SHM bytes are copies a requester makes straight out of this engine's memory, which the source
 * cannot see: they are in the ledger only as requesters report them.
 *
 * @param served one row per requester, transport and op that was served a byte
 * @param connected one row per requester incarnation and transport with a connection open now
 */
public record SourceLedger(List<Served> served, List<Connected> connected) {
  /** Most requesters counted by name; later ones share {@link #OTHER}. */
  public static final int MAX_REQUESTERS = 256;

  /** The label bytes served to requesters past {@link #MAX_REQUESTERS} are counted under. */
  public static final String OTHER = "other";

  /** Copies the lists, so the snapshot stays as it was read. */
  public SourceLedger {
    served = List.copyOf(served);
    connected = List.copyOf(connected);
  }

  /**
   * Bytes served to one requester over one transport for one op, since this engine started.
   *
   * @param requester the requester's label ({@link #OTHER} past {@link #MAX_REQUESTERS})
   * @param requesterEpoch the epoch of the requester incarnation served last under this label
   * @param transport the transport that carried them
   * @param op READ (bytes this source's memory gave) or WRITE (bytes that landed in it)
   * @param bytes the cumulative bytes
   */
  public record Served(
      String requester, long requesterEpoch, Transport transport, Op op, long bytes) {}

  /**
   * A requester incarnation with connections open to this source over one transport.
   *
   * @param requester the requester's label
   * @param requesterEpoch its epoch
   * @param transport TCP (data lanes) or RDMA (the control connection of an endpoint), or a
   *     transport whose requesters report themselves
   * @param connections how many are open now (TCP: one per lane)
   * @param sinceMillis when the first of them opened (epoch milliseconds)
   */
  public record Connected(
      String requester,
      long requesterEpoch,
      Transport transport,
      int connections,
      long sinceMillis) {}

  /**
   * The bytes served over {@code transport} for {@code op}, every requester together.
   *
   * @param transport the transport
   * @param op the op
   * @return the sum, 0 when none
   */
  public long bytes(Transport transport, Op op) {
    long sum = 0;
    for (Served s : served) {
      if (s.transport() == transport && s.op() == op) {
        sum += s.bytes();
      }
    }
    return sum;
  }
}
