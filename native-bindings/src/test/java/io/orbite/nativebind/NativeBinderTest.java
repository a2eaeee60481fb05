package io.orbite.nativebind;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import org.junit.jupiter.api.Test;

class NativeBinderTest {
  private static final String MISSING = "orbite_test_no_such_symbol_4f2a";

  @Test
  void bindingOnlyPresentSymbolsLeavesTheLibraryAvailable() throws Throwable {
    NativeBinder binder = NativeBinder.ofDefaultLookup("libc-test");
    MethodHandle getpid = binder.downcall("getpid", FunctionDescriptor.of(JAVA_INT));
    Availability availability = binder.availability();
    assertTrue(availability.isAvailable(), availability.toString());
    assertTrue(availability.cause().isEmpty());
    assertEquals(ProcessHandle.current().pid(), (long) (int) getpid.invokeExact());
    availability.require("getpid"); // does not throw
  }

  @Test
  void anOptionalExportIsFoundOrAbsentWithoutMakingTheLibraryUnavailable() throws Throwable {
    NativeBinder binder = NativeBinder.ofDefaultLookup("libc-test");
    MethodHandle getpid =
        binder.optionalDowncallWithErrno("getpid", FunctionDescriptor.of(JAVA_INT)).orElseThrow();
    assertTrue(
        binder.optionalDowncallWithErrno(MISSING, FunctionDescriptor.of(JAVA_INT)).isEmpty());
    assertTrue(binder.availability().isAvailable(), binder.availability().toString());
    try (Arena arena = Arena.ofConfined()) {
      assertEquals(
          ProcessHandle.current().pid(),
          (long) (int) getpid.invokeExact(ErrnoCapture.allocate(arena)));
    }
  }

  @Test
  void aPointerDowncallCallsTheFunctionItIsHanded() throws Throwable {
    NativeBinder binder = NativeBinder.ofDefaultLookup("libc-test");
    MethodHandle call = binder.pointerDowncall("getpid", FunctionDescriptor.of(JAVA_INT), false);
    MemorySegment getpid = Linker.nativeLinker().defaultLookup().find("getpid").orElseThrow();
    assertEquals(ProcessHandle.current().pid(), (long) (int) call.invokeExact(getpid));
    assertTrue(binder.availability().isAvailable());
  }

  @Test
  void missingSymbolMakesTheLibraryUnavailableWithACauseNamingIt() {
    NativeBinder binder = NativeBinder.ofDefaultLookup("libtest");
    binder.downcall("getpid", FunctionDescriptor.of(JAVA_INT));
    binder.downcallWithErrno(MISSING, FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    Availability availability = binder.availability();
    assertFalse(availability.isAvailable());
    assertEquals("libtest", availability.library());
    assertTrue(
        availability.cause().orElseThrow().contains(MISSING), availability.cause().orElseThrow());
  }

  @Test
  void requireOnAnUnavailableLibraryThrowsNamingLibraryCauseAndFunction() {
    NativeBinder binder = NativeBinder.ofDefaultLookup("libtest");
    binder.downcall(MISSING, FunctionDescriptor.of(JAVA_INT));
    Availability availability = binder.availability();
    NativeUnavailableException e =
        assertThrows(NativeUnavailableException.class, () -> availability.require("some_call"));
    assertEquals("libtest", e.library());
    assertTrue(e.unavailabilityCause().contains(MISSING));
    assertTrue(e.getMessage().contains("libtest"), e.getMessage());
    assertTrue(e.getMessage().contains(MISSING), e.getMessage());
    assertTrue(e.getMessage().contains("some_call"), e.getMessage());
  }

  @Test
  void standInForAMissingSymbolHasTheExactTypeAndThrowsUnavailable() {
    NativeBinder binder = NativeBinder.ofDefaultLookup("libtest");
    MethodHandle plain = binder.downcall(MISSING, FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    MethodHandle withErrno =
        binder.downcallWithErrno(MISSING, FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    assertNotNull(plain);
    assertEquals(MethodType.methodType(int.class, int.class), plain.type());
    assertEquals(
        MethodType.methodType(int.class, MemorySegment.class, int.class), withErrno.type());
    NativeUnavailableException e =
        assertThrows(
            NativeUnavailableException.class,
            () -> {
              int ignored = (int) plain.invokeExact(7);
            });
    assertTrue(e.getMessage().contains(MISSING), e.getMessage());
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      assertThrows(
          NativeUnavailableException.class,
          () -> {
            int ignored = (int) withErrno.invokeExact(state, 7);
          });
    }
  }

  @Test
  void sharedLibraryThatCannotBeLoadedMakesTheLibraryUnavailableWithoutThrowing() {
    NativeBinder binder =
        NativeBinder.ofLibrary("libnothere", "liborbite-definitely-not-here.so.9");
    MethodHandle h = binder.downcall("anything", FunctionDescriptor.of(JAVA_INT));
    assertNotNull(h);
    Availability availability = binder.availability();
    assertFalse(availability.isAvailable());
    assertTrue(
        availability.cause().orElseThrow().contains("liborbite-definitely-not-here.so.9"),
        availability.cause().orElseThrow());
    assertThrows(
        NativeUnavailableException.class,
        () -> {
          int ignored = (int) h.invokeExact();
        });
  }

  @Test
  void sharedLibraryLoadedByNameBindsItsSymbols() throws Throwable {
    NativeBinder binder = NativeBinder.ofLibrary("libc-by-name", "libc-not-here.so", "libc.so.6");
    MethodHandle getpid = binder.downcall("getpid", FunctionDescriptor.of(JAVA_INT));
    assertTrue(binder.availability().isAvailable(), binder.availability().toString());
    assertEquals(ProcessHandle.current().pid(), (long) (int) getpid.invokeExact());
  }

  @Test
  void errnoCaptureLayoutHoldsAnIntNamedErrno() {
    assertTrue(ErrnoCapture.LAYOUT.byteSize() >= 4);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = ErrnoCapture.allocate(arena);
      assertEquals(0, ErrnoCapture.errno(state));
    }
  }
}
