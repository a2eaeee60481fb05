package io.orbite.qualification.notify;

import io.orbite.config.EngineConfig;
import io.orbite.config.ShmConfig;
import io.orbite.engine.Transport;

/**
 * C16 over SHM: the sender copies into the receiver's mapped memory itself, and notifies over the
 * control connection once its copies completed.
 */
class WriteThenNotifyShmIT extends WriteThenNotifySuite {
  WriteThenNotifyShmIT() {
    super(Transport.SHM);
  }

  @Override
  EngineConfig receiverConfig() {
    return EngineConfig.defaults()
        .withName("notify-receiver-shm")
        .withShm(ShmConfig.defaults().withEnabled(true));
  }

  @Override
  String senderConf() {
    return "{}";
  }

  @Override
  String dispatchedKey() {
    return "shmTasksDispatched";
  }
}
