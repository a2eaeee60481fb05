package io.orbite.engine;

import java.time.Duration;
import java.util.Objects;

/**
 * One task: copy {@code lengthBytes} between {@code local} at {@code localOffset} and the peer's
 * region {@code regionId} at {@code remoteOffset}. Build with {@link #read} or {@link #write}.
 *
 * <p>Only {@code op}, {@code transport} and {@code priority} are checked here; everything else is
 * checked when the request is submitted ({@link Batch#submit}).
 *
 * @param op the direction, seen from the requester
 * @param local the registered local memory the bytes are copied into (READ) or from (WRITE)
 * @param localOffset where in {@code local} the range starts
 * @param remote the opened peer or file segment
 * @param regionId the region of {@code remote} (one of its {@link RemoteSegment#regions()})
 * @param remoteOffset where in that region the range starts
 * @param lengthBytes how many bytes to copy; must be positive
 * @param transport which transport carries the task; {@link Transport#UNSPEC} lets the engine
 *     choose
 * @param priority the task's scheduling tier: the order in which a TCP or RDMA lane sends waiting
 *     work
 * @param deadline how long after submission the task may take; {@code null} means the engine's
 *     default deadline
 */
public record TransferRequest(
    Op op,
    RegisteredMemory local,
    long localOffset,
    RemoteSegment remote,
    long regionId,
    long remoteOffset,
    long lengthBytes,
    Transport transport,
    Priority priority,
    Duration deadline) {

  /**
   * Checks that the direction, transport and priority are given.
   *
   * @throws NullPointerException if {@code op}, {@code transport} or {@code priority} is null
   */
  public TransferRequest {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(transport, "transport");
    Objects.requireNonNull(priority, "priority");
  }

  /**
   * Copy {@code length} bytes from the peer's region into {@code local}.
   *
   * @param local the registered memory the bytes land in
   * @param localOffset where in {@code local} they land
   * @param remote the segment to read from
   * @param regionId the region of {@code remote} to read
   * @param remoteOffset where in that region the bytes start
   * @param length how many bytes to copy
   * @return a READ request over {@link Transport#UNSPEC} at {@link Priority#HIGH} with the engine's
   *     default deadline
   */
  public static TransferRequest read(
      RegisteredMemory local,
      long localOffset,
      RemoteSegment remote,
      long regionId,
      long remoteOffset,
      long length) {
    return new TransferRequest(
        Op.READ,
        local,
        localOffset,
        remote,
        regionId,
        remoteOffset,
        length,
        Transport.UNSPEC,
        Priority.HIGH,
        null);
  }

  /**
   * Copy {@code length} bytes from {@code local} into the peer's region.
   *
   * @param local the registered memory the bytes come from
   * @param localOffset where in {@code local} they start
   * @param remote the segment to write to
   * @param regionId the region of {@code remote} to write
   * @param remoteOffset where in that region the bytes land
   * @param length how many bytes to copy
   * @return a WRITE request over {@link Transport#UNSPEC} at {@link Priority#HIGH} with the
   *     engine's default deadline
   */
  public static TransferRequest write(
      RegisteredMemory local,
      long localOffset,
      RemoteSegment remote,
      long regionId,
      long remoteOffset,
      long length) {
    return new TransferRequest(
        Op.WRITE,
        local,
        localOffset,
        remote,
        regionId,
        remoteOffset,
        length,
        Transport.UNSPEC,
        Priority.HIGH,
        null);
  }

  /**
   * This request, carried by another transport.
   *
   * @param value the transport; not null
   * @return a copy that differs only in {@code transport}
   * @throws NullPointerException if {@code value} is null
   */
  public TransferRequest withTransport(Transport value) {
    return new TransferRequest(
        op,
        local,
        localOffset,
        remote,
        regionId,
        remoteOffset,
        lengthBytes,
        value,
        priority,
        deadline);
  }

  /**
   * This request, at another scheduling tier.
   *
   * @param value the priority; not null
   * @return a copy that differs only in {@code priority}
   * @throws NullPointerException if {@code value} is null
   */
  public TransferRequest withPriority(Priority value) {
    return new TransferRequest(
        op,
        local,
        localOffset,
        remote,
        regionId,
        remoteOffset,
        lengthBytes,
        transport,
        value,
        deadline);
  }

  /**
   * This request, with another deadline.
   *
   * @param value how long after submission the task may take (positive, checked at submit), or
   *     {@code null} for the engine's default deadline
   * @return a copy that differs only in {@code deadline}
   */
  public TransferRequest withDeadline(Duration value) {
    return new TransferRequest(
        op,
        local,
        localOffset,
        remote,
        regionId,
        remoteOffset,
        lengthBytes,
        transport,
        priority,
        value);
  }
}
