package io.orbite.engine;

import io.orbite.config.EngineConfig;
import java.time.Duration;

/**
 * How long the facade's asks, and the blocking forms of {@link Engine} that wait on them, may take:
 * one place, so that a blocking call never gives up before the ask it waits on.
 */
final class CallTimeouts {
  /** A control call: an owner answers from its mailbox. */
  static final Duration CONTROL = Duration.ofSeconds(30);

  /**
   * What a side close or the shutdown may take beyond its own timeout: the control service (30 s)
   * and the transports (60 s) may each take their limit, plus slack.
   */
  static final Duration CLOSE_LIMIT = Duration.ofSeconds(120);

  private CallTimeouts() {}

  /** An open describes the peer and may first connect to it. */
  static Duration open(EngineConfig config) {
    return Duration.ofMillis(
            config.timeouts().describeTimeoutMillis() + config.tcp().connectTimeoutMillis())
        .plus(CONTROL);
  }

  /** An unregister waits for the range's loans for up to the destruction window. */
  static Duration unregister(EngineConfig config) {
    return Duration.ofMillis(config.timeouts().destructionWindowMillis()).plus(CONTROL);
  }
}
