package io.orbite.engine;

import java.time.Duration;
import java.util.Objects;

/**
 * One task: copy {@code lengthBytes} between {@code local} at {@code localOffset} and the peer's
 * region {@code regionId} at {@code remoteOffset}. Build with {@link #read} or {@link #write}.
 *
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

  public TransferRequest {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(transport, "transport");
    Objects.requireNonNull(priority, "priority");
  }

  /** Copy {@code length} bytes from the peer's region into {@code local}. */
  public static TransferRequest read(
      RegisteredMemory local, long localOffset, RemoteSegment remote, long regionId, long remoteOffset, long length) {
    return new TransferRequest(
        Op.READ, local, localOffset, remote, regionId, remoteOffset, length, Transport.UNSPEC, Priority.HIGH, null);
  }

  /** Copy {@code length} bytes from {@code local} into the peer's region. */
  public static TransferRequest write(
      RegisteredMemory local, long localOffset, RemoteSegment remote, long regionId, long remoteOffset, long length) {
    return new TransferRequest(
        Op.WRITE, local, localOffset, remote, regionId, remoteOffset, length, Transport.UNSPEC, Priority.HIGH, null);
  }

  public TransferRequest withTransport(Transport value) {
    return new TransferRequest(op, local, localOffset, remote, regionId, remoteOffset, lengthBytes, value, priority, deadline);
  }

  public TransferRequest withPriority(Priority value) {
    return new TransferRequest(op, local, localOffset, remote, regionId, remoteOffset, lengthBytes, transport, value, deadline);
  }

  public TransferRequest withDeadline(Duration value) {
    return new TransferRequest(op, local, localOffset, remote, regionId, remoteOffset, lengthBytes, transport, priority, value);
  }
}
