package io.orbite.qualification.bench;

import io.orbite.engine.security.TlsFiles;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;

/**
 * The TLS ceiling of {@code bench tcp --tls}: one JDK {@link SSLSocket} stream on loopback, mutual
 * TLS 1.3 with the bench's own stores and AES-128-GCM, a writer thread sending 1 MiB writes for a
 * fixed time and a reader thread taking them, as iperf3's one stream does for plain TCP. It is what
 * the JDK's TLS moves over one connection on this host at this moment, with no engine in the way.
 */
final class TlsCeiling {
  private static final int CHUNK = 1 << 20;

  private TlsCeiling() {}

  /**
   * Streams for {@code seconds} and returns GB/s (10⁹ bytes) as the reader received them.
   *
   * @param ca the authority whose stores both ends use
   * @param server the server's key store
   * @param client the client's key store
   */
  static double oneStream(TlsFiles ca, Path server, Path client, double seconds)
      throws IOException, GeneralSecurityException, InterruptedException {
    SSLContext serverContext = ca.context(server);
    SSLContext clientContext = ca.context(client);
    try (SSLServerSocket listener =
        (SSLServerSocket)
            serverContext
                .getServerSocketFactory()
                .createServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      listener.setNeedClientAuth(true);
      listener.setEnabledCipherSuites(new String[] {"TLS_AES_128_GCM_SHA256"});
      CompletableFuture<long[]> read =
          CompletableFuture.supplyAsync(
              () -> {
                try (SSLSocket s = (SSLSocket) listener.accept();
                    InputStream in = s.getInputStream()) {
                  byte[] buf = new byte[CHUNK];
                  long bytes = 0;
                  long first = 0;
                  int n;
                  while ((n = in.read(buf)) > 0) {
                    if (first == 0) {
                      first = System.nanoTime();
                    }
                    bytes += n;
                  }
                  return new long[] {bytes, System.nanoTime() - first};
                } catch (IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              });
      try (SSLSocket s =
          (SSLSocket)
              clientContext
                  .getSocketFactory()
                  .createSocket(InetAddress.getLoopbackAddress(), listener.getLocalPort())) {
        s.setEnabledCipherSuites(new String[] {"TLS_AES_128_GCM_SHA256"});
        s.startHandshake();
        OutputStream out = s.getOutputStream();
        byte[] chunk = new byte[CHUNK];
        new java.util.Random(1).nextBytes(chunk);
        long until = System.nanoTime() + (long) (seconds * 1e9);
        while (System.nanoTime() < until) {
          out.write(chunk);
        }
        out.flush();
        s.shutdownOutput();
      }
      long[] r;
      try {
        r = read.get(60, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
        throw new IOException("the TLS ceiling's reader failed: " + e, e);
      }
      return r[0] / 1e9 / (r[1] / 1e9);
    }
  }
}
