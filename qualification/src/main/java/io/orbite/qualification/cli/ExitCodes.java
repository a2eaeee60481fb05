package io.orbite.qualification.cli;

import io.orbite.config.ConfigException;

/**
 * The exit codes of every {@code ./orbite} command (the launcher's own failures included), as the
 * README's table lists them.
 */
public final class ExitCodes {
  private ExitCodes() {}

  /** The command did what it was asked, and every byte it checked was right. */
  public static final int PASS = 0;

  /** A verification failed: a wrong byte, a failed or missing task, or a run that broke. */
  public static final int FAILED = 1;

  /**
   * A usage or configuration error: an unknown command or option, a bad value, a bad ORBITE_CONF.
   */
  public static final int USAGE = 2;

  /**
   * The environment lacks what the command needs: no JDK 22 or newer, no Maven, a build that could
   * not produce the engine, or a tool or kernel facility (a bench's ceiling tool, io_uring, shared
   * memory between processes). The command says which; a bench still prints what it measured.
   */
  public static final int ENVIRONMENT = 3;

  /**
   * The code for a command that ended with {@code failure}: USAGE for a configuration error
   * anywhere in its causes, else FAILED.
   *
   * @param failure what the command threw
   * @return {@link #USAGE} or {@link #FAILED}
   */
  public static int forFailure(Throwable failure) {
    return configError(failure) != null ? USAGE : FAILED;
  }

  /** The first configuration error among {@code failure}'s causes, or null. */
  static ConfigException configError(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof ConfigException c) {
        return c;
      }
    }
    return null;
  }
}
