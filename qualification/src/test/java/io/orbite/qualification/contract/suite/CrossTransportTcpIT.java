package io.orbite.qualification.contract.suite;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Transport;
import io.orbite.qualification.contract.HeldWorker;
import java.util.Map;

/**
 * The cross-transport contract suite over TCP: a source process with the default configuration, a
 * requester with one lane (so a held lane thread holds all of the requester's TCP work).
 */
class CrossTransportTcpIT extends PeerTransportSuite {
  CrossTransportTcpIT() {
    // The lane thread is held about to read a READ's payload off its socket.
    super(Transport.TCP, Map.of(), new HeldWorker());
  }

  @Override
  EngineConfig transportConfig(String name) {
    EngineConfig c = EngineConfig.defaults().withName(name);
    return c.withTcp(c.tcp().withLanes(1));
  }
}
