/**
 * FFM bindings to libc, io_uring, libibverbs (with the software RDMA provider behind the same
 * function table) and host identity. Not API: exported only to the transports that call them and to
 * the qualification CLI (which reports what the host supports).
 */
module io.orbite.nativebind {
  exports io.orbite.nativebind to
      io.orbite.transport,
      io.orbite.qualification;
  exports io.orbite.nativebind.libc to
      io.orbite.transport,
      io.orbite.qualification;
  exports io.orbite.nativebind.uring to
      io.orbite.transport,
      io.orbite.qualification;
  exports io.orbite.nativebind.verbs to
      io.orbite.transport,
      io.orbite.qualification;
  exports io.orbite.nativebind.verbs.soft to
      io.orbite.transport,
      io.orbite.qualification;
}
