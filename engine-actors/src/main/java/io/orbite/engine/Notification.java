package io.orbite.engine;

import java.util.Arrays;
import java.util.Objects;

/**
 * A short message for a peer engine: "the bytes are there". Attached to a submission ({@link
 * Batch#submit(java.util.List, Notification)}) it is sent only after every WRITE of that submission
 * was applied at the peer, and never when one failed; sent alone ({@code Engine.notify(segment,
 * tag, bytes)}) it is sent at once. The peer receives it through {@code Engine.notifications()} or
 * {@code Engine.pollNotifications(max)}, at most once.
 *
 * @param tag what the receiver dispatches on (a request id, a layer); bounded by {@code
 *     notifications.maxTagBytes} in UTF-8
 * @param bytes an opaque payload, bounded by {@code notifications.maxPayloadBytes}; copied on the
 *     way in and out, so that neither side can change the other's copy
 */
public record Notification(String tag, byte[] bytes) {
  /** Checks the components and copies {@code bytes}. */
  public Notification {
    Objects.requireNonNull(tag, "Notification.tag is null");
    bytes = bytes == null ? new byte[0] : bytes.clone();
  }

  /**
   * A notification.
   *
   * @param tag the tag, not null
   * @param bytes the payload (null: empty)
   * @return the notification
   */
  public static Notification of(String tag, byte[] bytes) {
    return new Notification(tag, bytes);
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
    return o instanceof Notification n && n.tag.equals(tag) && Arrays.equals(n.bytes, bytes);
  }

  @Override
  public int hashCode() {
    return tag.hashCode() * 31 + Arrays.hashCode(bytes);
  }

  @Override
  public String toString() {
    return "Notification[tag=" + tag + ", " + bytes.length + " B]";
  }
}
