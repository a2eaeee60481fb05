package io.orbite.qualification.notify;

import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.config.SecurityConfig;
import io.orbite.engine.Transport;
import io.orbite.engine.security.TlsFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/**
 * C16 over RDMA on the software provider with every connection under mutual TLS (docs/security.md):
 * the sender process's Describe, its RDMA control connection (the grants and completions) and its
 * notification connection all run over TLS, and every written byte and guard is there when the
 * notification arrives, as without TLS. The receiver refuses every connection that begins in the
 * clear, so the suite passes only if all three ran under TLS.
 */
class WriteThenNotifyTlsRdmaIT extends WriteThenNotifySuite {
  private static final String RECEIVER = "notify-receiver-tls";
  private static final String SENDER = "notify-sender-rdma";

  @TempDir static Path tlsDir;

  private TlsFiles ca;

  WriteThenNotifyTlsRdmaIT() {
    super(Transport.RDMA);
  }

  /** The authority and both engines' stores, made on first use. */
  private TlsFiles ca() {
    if (ca == null) {
      try {
        ca = TlsFiles.authority(tlsDir, 2);
        ca.issue(RECEIVER, 0, 2);
        ca.issue(SENDER, 0, 2);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return ca;
  }

  @Override
  EngineConfig receiverConfig() {
    return EngineConfig.defaults()
        .withName(RECEIVER)
        .withRdma(RdmaConfig.defaults().withEnabled(true).withSoftwareDevices(1).withLanes(1))
        .withSecurity(
            SecurityConfig.defaults()
                .withTls(
                    tlsDir.resolve(RECEIVER + ".p12").toString(),
                    ca().trustStore().toString(),
                    ca().passwordFile().toString()));
  }

  @Override
  String senderConf() {
    return "{\"rdma\":{\"enabled\":true,\"softwareDevices\":1,\"lanes\":1},"
        + "\"security\":{\"tlsKeyStore\":\""
        + tlsDir.resolve(SENDER + ".p12")
        + "\",\"tlsTrustStore\":\""
        + ca().trustStore()
        + "\",\"tlsPasswordFile\":\""
        + ca().passwordFile()
        + "\"}}";
  }

  @Override
  String dispatchedKey() {
    return "rdmaTasksDispatched";
  }
}
