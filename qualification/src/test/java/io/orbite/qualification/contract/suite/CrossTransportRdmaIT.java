package io.orbite.qualification.contract.suite;

import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.engine.Transport;
import io.orbite.qualification.contract.HeldWorker;
import java.util.Map;

/**
 * The cross-transport contract suite over RDMA on the software provider: the source process and the
 * requester each with one software device and one CQ lane (so a held lane holds all of the
 * requester's RDMA work).
 */
class CrossTransportRdmaIT extends PeerTransportSuite {
  CrossTransportRdmaIT() {
    // The CQ lane is held about to post a granted slice's payload.
    super(
        Transport.RDMA,
        Map.of("ORBITE_CONF", "{\"rdma\":{\"enabled\":true,\"softwareDevices\":1,\"lanes\":1}}"),
        HeldWorker.atRdmaPost());
  }

  @Override
  EngineConfig transportConfig(String name) {
    return EngineConfig.defaults()
        .withName(name)
        .withRdma(RdmaConfig.defaults().withEnabled(true).withSoftwareDevices(1).withLanes(1));
  }
}
