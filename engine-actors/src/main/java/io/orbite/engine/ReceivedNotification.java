package io.orbite.engine;

import java.util.Arrays;
import java.util.Objects;

/**
 * A notification this engine accepted from a peer ({@link Engine#notifications()}, {@link
 * Engine#pollNotifications(int)}): who sent it, its tag and payload, and when it arrived. Each one
 * is handed to exactly one taker.
 *
 * @param senderName the sending engine's {@code name}
 * @param sender the sending incarnation: its endpoint and epoch, as it names itself (open it with
 *     {@link Engine#openSegmentAsync(SegmentDescriptor)} to answer through its memory)
 * @param tag the tag the sender gave
 * @param bytes the payload; copied on the way in and out
 * @param receivedAtNanos {@link System#nanoTime()} when the connection's thread put it in the inbox
 *     (comparable with {@code nanoTime} of other processes on the same Linux host)
 */
public record ReceivedNotification(
    String senderName, SegmentDescriptor sender, String tag, byte[] bytes, long receivedAtNanos) {
  /** Checks the components and copies {@code bytes}. */
  public ReceivedNotification {
    Objects.requireNonNull(senderName, "ReceivedNotification.senderName is null");
    Objects.requireNonNull(sender, "ReceivedNotification.sender is null");
    Objects.requireNonNull(tag, "ReceivedNotification.tag is null");
    bytes = bytes == null ? new byte[0] : bytes.clone();
  }

  /**
   * A copy of the payload.
   *
   * @return the payload's bytes
   */
  @Override
  public byte[] bytes() {
    return bytes.clone();
  }

  /**
   * The payload's length, without a copy.
   *
   * @return its length in bytes
   */
  public int length() {
    return bytes.length;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ReceivedNotification n
        && n.senderName.equals(senderName)
        && n.sender.equals(sender)
        && n.tag.equals(tag)
        && Arrays.equals(n.bytes, bytes)
        && n.receivedAtNanos == receivedAtNanos;
  }

  @Override
  public int hashCode() {
    return Objects.hash(senderName, sender, tag, Arrays.hashCode(bytes), receivedAtNanos);
  }

  @Override
  public String toString() {
    return "ReceivedNotification[from "
        + senderName
        + "@"
        + sender
        + ", tag="
        + tag
        + ", "
        + bytes.length
        + " B]";
  }
}
