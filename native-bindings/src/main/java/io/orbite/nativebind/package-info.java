/**
 * Foundation of OrbiTE's Panama FFM layer: the conventions every native binding follows.
 *
 * <ul>
 *   <li>One final class per native library (for example {@link io.orbite.nativebind.libc.Libc}),
 *       static methods only; every native function is a {@code private static final MethodHandle}
 *       built once, in the static initializer, through a {@link io.orbite.nativebind.NativeBinder}.
 *   <li>{@code errno} is captured by the linker ({@code Linker.Option.captureCallState("errno")})
 *       into a per-call segment and read from there ({@link io.orbite.nativebind.ErrnoCapture}),
 *       never after the fact.
 *   <li>Availability is probed once and kept; a static initializer never throws. Calling into an
 *       unavailable library raises {@link io.orbite.nativebind.NativeUnavailableException}.
 *   <li>A failed call raises {@link io.orbite.nativebind.NativeCallException} naming the call, its
 *       arguments and the errno ({@link io.orbite.nativebind.Errno}).
 *   <li>Temporary native memory lives in a confined {@link java.lang.foreign.Arena} owned by the
 *       call.
 * </ul>
 *
 * <p>See {@code docs/native-bindings.md}.
 */
package io.orbite.nativebind;
