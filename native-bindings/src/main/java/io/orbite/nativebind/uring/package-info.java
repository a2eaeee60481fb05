/**
 * io_uring through raw system calls ({@code io_uring_setup}, {@code io_uring_enter}, {@code
 * io_uring_register}) and rings mapped with {@code mmap}; no liburing, whose ring helpers are
 * inline functions FFM cannot call. {@link io.orbite.nativebind.uring.IoUring} holds the calls, the
 * constants and the availability probe; {@link io.orbite.nativebind.uring.Ring} one mapped ring;
 * {@link io.orbite.nativebind.uring.Sqe}, {@link io.orbite.nativebind.uring.Cqe}, {@link
 * io.orbite.nativebind.uring.IoUringParams}, {@link io.orbite.nativebind.uring.GeteventsArg} and
 * {@link io.orbite.nativebind.uring.ProbeLayout} the kernel structs (checked against {@code
 * <linux/io_uring.h>} with gcc in the tests).
 */
package io.orbite.nativebind.uring;
