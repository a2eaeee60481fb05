package io.orbite.nativebind.testkit;

import org.junit.jupiter.api.Assumptions;

/**
 * What a test needs from the machine (a tool such as gcc or ip, a kernel feature such as io_uring)
 * and what happens when it is missing. Under CI ({@code CI=true}, as {@code .ci/run} runs) the test
 * fails with a message naming what is missing and how to get it: CI installs the tools, so a
 * missing one is a broken CI machine, not a reason to pass. Anywhere else the test is skipped, and
 * the reason is printed on stderr so that the skip is seen. Shared with the other modules' tests
 * through this module's test jar.
 */
public final class Prerequisite {
  private Prerequisite() {}

  /** Whether the tests run under CI. */
  public static boolean underCi() {
    return "true".equals(System.getenv("CI"));
  }

  /**
   * Returns when {@code present}; otherwise fails under CI and skips elsewhere.
   *
   * @param missing what is missing and how to get it, e.g. {@code "gcc not found on PATH (apt-get
   *     install gcc libc6-dev)"}
   */
  public static void require(boolean present, String missing) {
    if (present) {
      return;
    }
    if (underCi()) {
      throw new AssertionError("CI=true, so this test may not be skipped: " + missing);
    }
    System.err.println("SKIPPED (" + callerTest() + "): " + missing);
    Assumptions.abort(missing);
  }

  /** The test method that asked, for the skip line. */
  private static String callerTest() {
    for (StackTraceElement e : Thread.currentThread().getStackTrace()) {
      String c = e.getClassName();
      if (!c.equals(Prerequisite.class.getName())
          && !c.startsWith("java.")
          && (c.endsWith("Test") || c.endsWith("IT"))) {
        return c.substring(c.lastIndexOf('.') + 1) + "." + e.getMethodName();
      }
    }
    return "a test";
  }
}
