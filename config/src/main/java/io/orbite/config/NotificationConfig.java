package io.orbite.config;

/**
 * Notifications between engines ({@code Engine.notify}, notifications attached to submissions, and
 * the receiver's inbox). JSON section {@code notifications}.
 *
 * @param inboxCapacity most notifications this engine holds received and not yet taken ({@code
 *     Engine.notifications()}, {@code pollNotifications}); one more is refused {@code
 *     RESOURCE_EXHAUSTED} and its sender told so. Default {@value #DEFAULT_INBOX_CAPACITY}; range
 *     {@value #MIN_INBOX_CAPACITY}..{@value #MAX_INBOX_CAPACITY}.
 * @param inboxBytes most bytes (tags and payloads) those held notifications may take in all; beyond
 *     it a notification is refused as when the inbox is full. Default {@value #DEFAULT_INBOX_BYTES}
 *     (64 MiB); range {@value #MIN_INBOX_BYTES} (16 MiB, above the largest notification)..{@value
 *     #MAX_INBOX_BYTES} (16 GiB).
 * @param maxTagBytes longest tag, in bytes of UTF-8, that this engine sends or accepts. Default
 *     {@value #DEFAULT_MAX_TAG_BYTES}; range {@value #MIN_MAX_TAG_BYTES}..{@value
 *     #MAX_MAX_TAG_BYTES}.
 * @param maxPayloadBytes largest payload, in bytes, that this engine sends or accepts. Default
 *     {@value #DEFAULT_MAX_PAYLOAD_BYTES} (64 KiB); range {@value #MIN_MAX_PAYLOAD_BYTES}..{@value
 *     #MAX_MAX_PAYLOAD_BYTES} (8 MiB).
 * @param answerTimeoutMillis how long a sender waits for the peer's answer to a notification it
 *     sent, in milliseconds; past it the notification is {@code UNKNOWN} (it may have been
 *     delivered, and it is never sent again). Default {@value #DEFAULT_ANSWER_TIMEOUT_MILLIS} (10
 *     s); range {@value #MIN_ANSWER_TIMEOUT_MILLIS}..{@value #MAX_ANSWER_TIMEOUT_MILLIS} (10 min).
 */
public record NotificationConfig(
    int inboxCapacity,
    long inboxBytes,
    int maxTagBytes,
    int maxPayloadBytes,
    int answerTimeoutMillis) {
  /** JSON key of this section, and the path prefix of its messages. */
  static final String SECTION = "notifications";

  /** Default {@link #inboxCapacity()}. */
  public static final int DEFAULT_INBOX_CAPACITY = 4096;

  /** Smallest accepted {@link #inboxCapacity()}. */
  public static final int MIN_INBOX_CAPACITY = 1;

  /** Largest accepted {@link #inboxCapacity()}. */
  public static final int MAX_INBOX_CAPACITY = 1_048_576;

  /** Default {@link #inboxBytes()}: 64 MiB. */
  public static final long DEFAULT_INBOX_BYTES = 64L << 20;

  /** Smallest accepted {@link #inboxBytes()}: 16 MiB, so the largest notification always fits. */
  public static final long MIN_INBOX_BYTES = 16L << 20;

  /** Largest accepted {@link #inboxBytes()}: 16 GiB. */
  public static final long MAX_INBOX_BYTES = 16L << 30;

  /** Default {@link #maxTagBytes()}. */
  public static final int DEFAULT_MAX_TAG_BYTES = 256;

  /** Smallest accepted {@link #maxTagBytes()}. */
  public static final int MIN_MAX_TAG_BYTES = 1;

  /** Largest accepted {@link #maxTagBytes()}: a tag is a key, not a payload. */
  public static final int MAX_MAX_TAG_BYTES = 4096;

  /** Default {@link #maxPayloadBytes()}: 64 KiB. */
  public static final int DEFAULT_MAX_PAYLOAD_BYTES = 64 << 10;

  /** Smallest accepted {@link #maxPayloadBytes()}: tags only. */
  public static final int MIN_MAX_PAYLOAD_BYTES = 0;

  /** Largest accepted {@link #maxPayloadBytes()}: 8 MiB (bulk bytes go by WRITE). */
  public static final int MAX_MAX_PAYLOAD_BYTES = 8 << 20;

  /** Default {@link #answerTimeoutMillis()}: 10 seconds. */
  public static final int DEFAULT_ANSWER_TIMEOUT_MILLIS = 10_000;

  /** Smallest accepted {@link #answerTimeoutMillis()}. */
  public static final int MIN_ANSWER_TIMEOUT_MILLIS = 1;

  /** Largest accepted {@link #answerTimeoutMillis()}: 10 minutes. */
  public static final int MAX_ANSWER_TIMEOUT_MILLIS = 600_000;

  /**
   * Validates every component against its {@code MIN_*}..{@code MAX_*} range.
   *
   * @throws ConfigException naming {@code notifications.<key>} for the first component out of range
   */
  public NotificationConfig {
    Checks.requireRange(
        SECTION + ".inboxCapacity", inboxCapacity, MIN_INBOX_CAPACITY, MAX_INBOX_CAPACITY);
    Checks.requireRange(SECTION + ".inboxBytes", inboxBytes, MIN_INBOX_BYTES, MAX_INBOX_BYTES);
    Checks.requireRange(
        SECTION + ".maxTagBytes", maxTagBytes, MIN_MAX_TAG_BYTES, MAX_MAX_TAG_BYTES);
    Checks.requireRange(
        SECTION + ".maxPayloadBytes",
        maxPayloadBytes,
        MIN_MAX_PAYLOAD_BYTES,
        MAX_MAX_PAYLOAD_BYTES);
    Checks.requireRange(
        SECTION + ".answerTimeoutMillis",
        answerTimeoutMillis,
        MIN_ANSWER_TIMEOUT_MILLIS,
        MAX_ANSWER_TIMEOUT_MILLIS);
  }

  /**
   * All components at their defaults.
   *
   * @return the settings an absent or empty {@code notifications} section reads as
   */
  public static NotificationConfig defaults() {
    return new NotificationConfig(
        DEFAULT_INBOX_CAPACITY,
        DEFAULT_INBOX_BYTES,
        DEFAULT_MAX_TAG_BYTES,
        DEFAULT_MAX_PAYLOAD_BYTES,
        DEFAULT_ANSWER_TIMEOUT_MILLIS);
  }

  /**
   * A copy with {@link #inboxCapacity()} replaced; checked as by the constructor.
   *
   * @param inboxCapacity most notifications held received and not yet taken
   * @return a new {@code NotificationConfig}; this one is unchanged
   * @throws ConfigException naming {@code notifications.inboxCapacity} if it is out of range
   */
  public NotificationConfig withInboxCapacity(int inboxCapacity) {
    return new NotificationConfig(
        inboxCapacity, inboxBytes, maxTagBytes, maxPayloadBytes, answerTimeoutMillis);
  }

  /**
   * A copy with {@link #inboxBytes()} replaced; checked as by the constructor.
   *
   * @param inboxBytes most bytes the held notifications may take in all
   * @return a new {@code NotificationConfig}; this one is unchanged
   * @throws ConfigException naming {@code notifications.inboxBytes} if it is out of range
   */
  public NotificationConfig withInboxBytes(long inboxBytes) {
    return new NotificationConfig(
        inboxCapacity, inboxBytes, maxTagBytes, maxPayloadBytes, answerTimeoutMillis);
  }

  /**
   * A copy with {@link #maxTagBytes()} replaced; checked as by the constructor.
   *
   * @param maxTagBytes longest tag, in bytes of UTF-8
   * @return a new {@code NotificationConfig}; this one is unchanged
   * @throws ConfigException naming {@code notifications.maxTagBytes} if it is out of range
   */
  public NotificationConfig withMaxTagBytes(int maxTagBytes) {
    return new NotificationConfig(
        inboxCapacity, inboxBytes, maxTagBytes, maxPayloadBytes, answerTimeoutMillis);
  }

  /**
   * A copy with {@link #maxPayloadBytes()} replaced; checked as by the constructor.
   *
   * @param maxPayloadBytes largest payload, in bytes
   * @return a new {@code NotificationConfig}; this one is unchanged
   * @throws ConfigException naming {@code notifications.maxPayloadBytes} if it is out of range
   */
  public NotificationConfig withMaxPayloadBytes(int maxPayloadBytes) {
    return new NotificationConfig(
        inboxCapacity, inboxBytes, maxTagBytes, maxPayloadBytes, answerTimeoutMillis);
  }

  /**
   * A copy with {@link #answerTimeoutMillis()} replaced; checked as by the constructor.
   *
   * @param answerTimeoutMillis how long a sender waits for the peer's answer, in milliseconds
   * @return a new {@code NotificationConfig}; this one is unchanged
   * @throws ConfigException naming {@code notifications.answerTimeoutMillis} if it is out of range
   */
  public NotificationConfig withAnswerTimeoutMillis(int answerTimeoutMillis) {
    return new NotificationConfig(
        inboxCapacity, inboxBytes, maxTagBytes, maxPayloadBytes, answerTimeoutMillis);
  }

  static NotificationConfig read(ConfigReader r) {
    return new NotificationConfig(
        r.intValue("inboxCapacity", DEFAULT_INBOX_CAPACITY, MIN_INBOX_CAPACITY, MAX_INBOX_CAPACITY),
        r.longValue("inboxBytes", DEFAULT_INBOX_BYTES, MIN_INBOX_BYTES, MAX_INBOX_BYTES),
        r.intValue("maxTagBytes", DEFAULT_MAX_TAG_BYTES, MIN_MAX_TAG_BYTES, MAX_MAX_TAG_BYTES),
        r.intValue(
            "maxPayloadBytes",
            DEFAULT_MAX_PAYLOAD_BYTES,
            MIN_MAX_PAYLOAD_BYTES,
            MAX_MAX_PAYLOAD_BYTES),
        r.intValue(
            "answerTimeoutMillis",
            DEFAULT_ANSWER_TIMEOUT_MILLIS,
            MIN_ANSWER_TIMEOUT_MILLIS,
            MAX_ANSWER_TIMEOUT_MILLIS));
  }
}
