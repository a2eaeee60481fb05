package io.orbite.qualification.notify;

import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.engine.Transport;

/**
 * C16 over RDMA on the software provider: the notification follows the reaped completions of the
 * WRITEs' slices (and the source's receipts).
 */
class WriteThenNotifyRdmaIT extends WriteThenNotifySuite {
  WriteThenNotifyRdmaIT() {
    super(Transport.RDMA);
  }

  @Override
  EngineConfig receiverConfig() {
    return EngineConfig.defaults()
        .withName("notify-receiver-rdma")
        .withRdma(RdmaConfig.defaults().withEnabled(true).withSoftwareDevices(1).withLanes(1));
  }

  @Override
  String senderConf() {
    return "{\"rdma\":{\"enabled\":true,\"softwareDevices\":1,\"lanes\":1}}";
  }

  @Override
  String dispatchedKey() {
    return "rdmaTasksDispatched";
  }
}
