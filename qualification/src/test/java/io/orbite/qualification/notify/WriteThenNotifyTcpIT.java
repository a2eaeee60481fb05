package io.orbite.qualification.notify;

import io.orbite.config.EngineConfig;
import io.orbite.engine.Transport;

/** C16 over TCP: the notification follows the source's acknowledgements of applied WRITEs. */
class WriteThenNotifyTcpIT extends WriteThenNotifySuite {
  WriteThenNotifyTcpIT() {
    super(Transport.TCP);
  }

  @Override
  EngineConfig receiverConfig() {
    return EngineConfig.defaults().withName("notify-receiver-tcp");
  }

  @Override
  String senderConf() {
    return "{}";
  }

  @Override
  String dispatchedKey() {
    return "tcpTasksDispatched";
  }
}
