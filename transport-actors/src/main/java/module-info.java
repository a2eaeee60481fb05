/**
 * The TCP, SHM and file transports, found by the engine through {@link java.util.ServiceLoader}.
 * They reach the engine only through its API and its SPI, and export nothing.
 */
module io.orbite.transport {
  requires io.orbite.engine;
  requires io.orbite.config;
  requires io.orbite.nativebind;
  requires pekko.actor;
  requires org.agrona;
  requires org.slf4j;

  provides io.orbite.engine.spi.TransportProvider with
      io.orbite.transport.tcp.TcpTransportProvider,
      io.orbite.transport.shm.ShmTransportProvider,
      io.orbite.transport.file.FileTransportProvider,
      io.orbite.transport.rdma.RdmaTransportProvider;
  provides io.orbite.engine.spi.SharedMemoryProvider with
      io.orbite.transport.shm.ShmMemoryProvider;
}
