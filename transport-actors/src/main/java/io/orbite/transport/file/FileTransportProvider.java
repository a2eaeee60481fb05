package io.orbite.transport.file;

import io.orbite.engine.Transport;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.spi.TransportProvider;
import org.apache.pekko.actor.typed.Behavior;

/**
 * Plugs the file transport into the engine through {@link java.util.ServiceLoader}. Always
 * available: where io_uring is not, file segments use FileChannel positioned I/O.
 */
public final class FileTransportProvider implements TransportProvider {
  @Override
  public Transport kind() {
    return Transport.FILE;
  }

  @Override
  public Behavior<TransportCommand> create(TransportContext context) {
    return FileTransport.create(context);
  }
}
