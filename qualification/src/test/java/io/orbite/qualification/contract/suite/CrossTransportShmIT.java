package io.orbite.qualification.contract.suite;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Transport;
import io.orbite.qualification.contract.HeldWorker;
import java.util.Map;

/**
 * The cross-transport contract suite over SHM: a same-host source process that exports its
 * allocations ({@code shm.enabled}), a requester with one copy lane per endpoint (so a held copy
 * holds all of the requester's SHM work). Every task is larger than the size a caller copies on its
 * own thread where a check holds the lane.
 */
class CrossTransportShmIT extends PeerTransportSuite {
  CrossTransportShmIT() {
    // The copy lane is held about to copy a task.
    super(
        Transport.SHM,
        Map.of("ORBITE_CONF", "{\"shm\":{\"enabled\":true}}"),
        HeldWorker.atSharedCopy());
  }

  @Override
  EngineConfig transportConfig(String name) {
    EngineConfig c = EngineConfig.defaults().withName(name);
    return c.withShm(c.shm().withLanes(1));
  }

  @Override
  boolean stallsByHold() {
    return true;
  }
}
