package io.orbite.nativebind;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Builds the downcall handles of one native library, in that library's static initializer, and
 * records every problem instead of throwing.
 *
 * <p>Usage (the pattern every binding class follows):
 *
 * <pre>{@code
 * private static final NativeBinder BINDER = NativeBinder.ofDefaultLookup("libc");
 * private static final MethodHandle CLOSE =
 *         BINDER.downcallWithErrno("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
 * // ... one field per function ...
 * private static final Availability AVAILABILITY = BINDER.availability();   // last
 * }</pre>
 *
 * <p>Nothing here throws: an unsupported platform, a library that cannot be loaded, a missing
 * symbol or a linker refusal each make the library unavailable with a cause naming it. A handle
 * that could not be built is replaced by one of the same type that throws {@link
 * NativeUnavailableException}, so handle fields are never null and {@code invokeExact} call sites
 * keep their exact types.
 *
 * <p>Not thread-safe; meant for class initialization only.
 */
public final class NativeBinder {
  private static final MethodHandle NEW_UNAVAILABLE;

  static {
    MethodHandle h;
    try {
      h =
          MethodHandles.lookup()
              .findConstructor(
                  NativeUnavailableException.class,
                  MethodType.methodType(void.class, String.class, String.class, String.class));
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e); // cannot happen: the constructor is ours
    }
    NEW_UNAVAILABLE = h;
  }

  private final String library;
  private final Linker linker; // null when the library is unusable as a whole
  private final SymbolLookup lookup; // null when the library is unusable as a whole
  private final List<String> problems = new ArrayList<>();

  private NativeBinder(String library, Linker linker, SymbolLookup lookup, String problem) {
    this.library = library;
    this.linker = linker;
    this.lookup = lookup;
    if (problem != null) {
      problems.add(problem);
    }
  }

  /** A binder over the linker's default lookup (libc and what the JVM already loaded). */
  public static NativeBinder ofDefaultLookup(String library) {
    String platform = platformProblem();
    if (platform != null) {
      return new NativeBinder(library, null, null, platform);
    }
    try {
      Linker linker = Linker.nativeLinker();
      return new NativeBinder(library, linker, linker.defaultLookup(), null);
    } catch (Throwable t) {
      return new NativeBinder(library, null, null, "native linker unusable: " + describe(t));
    }
  }

  /**
   * A binder over a shared library loaded by name ({@code dlopen}), trying each candidate in turn
   * (e.g. {@code "libibverbs.so.1", "libibverbs.so"}). The library stays loaded for the JVM's life.
   */
  public static NativeBinder ofLibrary(String library, String... candidates) {
    String platform = platformProblem();
    if (platform != null) {
      return new NativeBinder(library, null, null, platform);
    }
    Linker linker;
    try {
      linker = Linker.nativeLinker();
    } catch (Throwable t) {
      return new NativeBinder(library, null, null, "native linker unusable: " + describe(t));
    }
    List<String> failures = new ArrayList<>();
    for (String candidate : candidates) {
      try {
        return new NativeBinder(
            library, linker, SymbolLookup.libraryLookup(candidate, Arena.global()), null);
      } catch (Throwable t) {
        failures.add(candidate + " (" + describe(t) + ")");
      }
    }
    String problem =
        candidates.length == 0
            ? "no shared object name given"
            : "cannot load "
                + String.join(", ", Arrays.asList(candidates))
                + ": "
                + String.join("; ", failures);
    return new NativeBinder(library, null, null, problem);
  }

  /** The library's name as used in messages. */
  public String library() {
    return library;
  }

  /**
   * A downcall handle for {@code symbol}, or a throwing stand-in of the same type if it cannot be
   * built. For errno use {@link #downcallWithErrno}, not a capture option passed here.
   */
  public MethodHandle downcall(
      String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
    return link(symbol, descriptor, false, options);
  }

  /**
   * As {@link #downcall}, with {@code errno} captured: the handle takes an extra first argument,
   * the capture segment from {@link ErrnoCapture#allocate}.
   */
  public MethodHandle downcallWithErrno(
      String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
    if (linker == null) {
      return standIn(symbol, descriptor, true, problems.getFirst());
    }
    Linker.Option capture;
    try {
      capture = Linker.Option.captureCallState("errno");
    } catch (Throwable t) {
      String problem = "cannot capture errno for " + symbol + ": " + describe(t);
      problems.add(problem);
      return standIn(symbol, descriptor, true, problem);
    }
    Linker.Option[] all = Arrays.copyOf(options, options.length + 1);
    all[options.length] = capture;
    return link(symbol, descriptor, true, all);
  }

  /**
   * A downcall handle with {@code errno} captured for an optional export (such as {@code
   * ibv_reg_dmabuf_mr}, absent from older libraries), or empty when the library lacks it. Its
   * absence is not a problem: the library stays available.
   */
  public Optional<MethodHandle> optionalDowncallWithErrno(
      String symbol, FunctionDescriptor descriptor) {
    if (linker == null) {
      return Optional.empty();
    }
    try {
      Optional<MemorySegment> address = lookup.find(symbol);
      if (address.isEmpty()) {
        return Optional.empty();
      }
      return Optional.of(
          linker.downcallHandle(
              address.get(), descriptor, Linker.Option.captureCallState("errno")));
    } catch (Throwable t) {
      return Optional.empty();
    }
  }

  /**
   * A handle for calling a function pointer of type {@code descriptor} that the library hands out
   * (an ops table entry): its first argument is the pointer; {@code errno} captured, as {@link
   * #downcallWithErrno}, when {@code capturesErrno}. A throwing stand-in when the linker is
   * unusable.
   */
  public MethodHandle pointerDowncall(
      String name, FunctionDescriptor descriptor, boolean capturesErrno) {
    if (linker == null) {
      MethodHandle standIn = standIn(name, descriptor, capturesErrno, problems.getFirst());
      return MethodHandles.dropArguments(standIn, 0, MemorySegment.class);
    }
    try {
      return capturesErrno
          ? linker.downcallHandle(descriptor, Linker.Option.captureCallState("errno"))
          : linker.downcallHandle(descriptor);
    } catch (Throwable t) {
      String problem = "cannot link " + name + ": " + describe(t);
      problems.add(problem);
      MethodHandle standIn = standIn(name, descriptor, capturesErrno, problem);
      return MethodHandles.dropArguments(standIn, 0, MemorySegment.class);
    }
  }

  private MethodHandle link(
      String symbol,
      FunctionDescriptor descriptor,
      boolean capturesErrno,
      Linker.Option[] options) {
    if (linker == null) {
      return standIn(symbol, descriptor, capturesErrno, problems.getFirst());
    }
    try {
      Optional<MemorySegment> address = lookup.find(symbol);
      if (address.isEmpty()) {
        String problem = "symbol " + symbol + " not found";
        problems.add(problem);
        return standIn(symbol, descriptor, capturesErrno, problem);
      }
      return linker.downcallHandle(address.get(), descriptor, options);
    } catch (Throwable t) {
      String problem = "cannot link " + symbol + ": " + describe(t);
      problems.add(problem);
      return standIn(symbol, descriptor, capturesErrno, problem);
    }
  }

  /**
   * The probe's result: available if no problem was recorded, else unavailable with every problem.
   */
  public Availability availability() {
    return problems.isEmpty()
        ? Availability.available(library)
        : Availability.unavailable(library, String.join("; ", problems));
  }

  /**
   * For an exception a downcall's {@code invokeExact} declares but a correctly typed call cannot
   * throw: rethrows unchecked exceptions and errors as they are, wraps anything else.
   */
  public static RuntimeException unexpected(String function, Throwable t) {
    if (t instanceof RuntimeException re) {
      return re;
    }
    if (t instanceof Error e) {
      throw e;
    }
    return new IllegalStateException("unexpected exception from native call " + function, t);
  }

  private MethodHandle standIn(
      String symbol, FunctionDescriptor descriptor, boolean capturesErrno, String problem) {
    MethodType type;
    try {
      type = descriptor.toMethodType();
    } catch (Throwable t) {
      type = MethodType.methodType(void.class);
    }
    if (capturesErrno) {
      type = type.insertParameterTypes(0, MemorySegment.class);
    }
    MethodHandle create =
        MethodHandles.insertArguments(NEW_UNAVAILABLE, 0, library, problem, symbol);
    MethodHandle thrower =
        MethodHandles.throwException(type.returnType(), NativeUnavailableException.class);
    MethodHandle h = MethodHandles.collectArguments(thrower, 0, create);
    return MethodHandles.dropArguments(h, 0, type.parameterList());
  }

  private static String platformProblem() {
    String os = System.getProperty("os.name", "?");
    String arch = System.getProperty("os.arch", "?");
    if (!os.toLowerCase(Locale.ROOT).startsWith("linux")
        || !(arch.equals("amd64") || arch.equals("x86_64"))) {
      return "unsupported platform "
          + os
          + "/"
          + arch
          + " (OrbiTE native bindings need Linux x86_64)";
    }
    return null;
  }

  private static String describe(Throwable t) {
    String m = t.getMessage();
    return m == null ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + m;
  }
}
