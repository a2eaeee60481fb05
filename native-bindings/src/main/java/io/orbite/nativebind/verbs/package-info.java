/**
 * RDMA verbs: the {@link io.orbite.nativebind.verbs.Verbs} function table, its FFM binding to
 * {@code libibverbs.so.1} ({@link io.orbite.nativebind.verbs.NativeVerbs}), and the constants of
 * {@code <infiniband/verbs.h>} it uses ({@link io.orbite.nativebind.verbs.Ibv}).
 */
package io.orbite.nativebind.verbs;
