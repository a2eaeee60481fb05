package io.orbite.engine.spi;

import io.orbite.engine.Transport;
import org.apache.pekko.actor.typed.Behavior;

/**
 * A transport plugged into the engine, found with {@link java.util.ServiceLoader} so that
 * engine-actors does not depend on transport implementations.
 */
public interface TransportProvider {
  Transport kind();

  /** Whether this transport can run on this machine, probed once. */
  default boolean available() {
    return true;
  }

  /** The behaviour of this transport's supervisor actor. */
  Behavior<TransportCommand> create(TransportContext context);
}
