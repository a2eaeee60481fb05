/**
 * Bindings to the C library (glibc, Linux x86_64): {@link io.orbite.nativebind.libc.Libc} and the
 * struct layout classes it uses ({@link io.orbite.nativebind.libc.Flock}).
 */
package io.orbite.nativebind.libc;
