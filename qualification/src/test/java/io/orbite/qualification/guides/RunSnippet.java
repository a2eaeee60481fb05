package io.orbite.qualification.guides;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * Runs one compiled method-body snippet of a guide in a JVM of its own: {@code RunSnippet <wrapper
 * class>} calls its {@code run(...)} with null arguments, as the snippet must not need them. What
 * the snippet throws ends {@code main}, so the JVM's exit shows whether anything it started keeps
 * the process alive.
 */
final class RunSnippet {
  private RunSnippet() {}

  public static void main(String[] args) throws Throwable {
    Class<?> type = Class.forName(args[0]);
    Method run =
        java.util.Arrays.stream(type.getDeclaredMethods())
            .filter(m -> m.getName().equals("run"))
            .findFirst()
            .orElseThrow(() -> new IllegalArgumentException(args[0] + " has no run method"));
    var ctor = type.getDeclaredConstructor();
    ctor.setAccessible(true);
    run.setAccessible(true);
    try {
      run.invoke(ctor.newInstance(), null, null, null, 0L, null);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
