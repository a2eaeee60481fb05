package io.orbite.transport.shm;

import io.orbite.engine.Transport;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.spi.TransportContext;
import io.orbite.engine.spi.TransportProvider;
import io.orbite.engine.wire.Description;
import io.orbite.nativebind.HostIdentity;
import io.orbite.nativebind.libc.Libc;
import java.util.Optional;
import org.apache.pekko.actor.typed.Behavior;

/** Plugs the SHM transport into the engine through {@link java.util.ServiceLoader}. */
public final class ShmTransportProvider implements TransportProvider {
  /** Probed once: libc bound, and this host's identity readable. */
  private static final Optional<String> UNAVAILABILITY = probe();

  private static Optional<String> probe() {
    if (!Libc.isAvailable()) {
      return Libc.unavailabilityCause();
    }
    try {
      HostIdentity.current();
      return Optional.empty();
    } catch (RuntimeException e) {
      return Optional.of("host identity unreadable: " + e.getMessage());
    }
  }

  static Optional<String> unavailability() {
    return UNAVAILABILITY;
  }

  @Override
  public Transport kind() {
    return Transport.SHM;
  }

  @Override
  public boolean available() {
    return UNAVAILABILITY.isEmpty();
  }

  /** A further channel to a same-host peer whose memory is exported, tried first by UNSPEC. */
  @Override
  public PeerRole peerRole() {
    return PeerRole.FURTHER;
  }

  @Override
  public int preference() {
    return 10;
  }

  /** Each SHM endpoint holds one of {@code budgets.maxEndpoints}, as a TCP endpoint does. */
  @Override
  public boolean chargesEndpoint() {
    return true;
  }

  @Override
  public String unreachable(Description description) {
    return description.shared() == null ? "the peer exports no memory through SHM" : null;
  }

  @Override
  public Behavior<TransportCommand> create(TransportContext context) {
    return ShmTransport.create(context, HostIdentity.current());
  }
}
