package io.orbite.engine.security;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.SecurityConfig;
import io.orbite.engine.spi.Conduit;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The TLS conduit over real loopback sockets: a non-blocking writer whose socket keeps filling (so
 * sealed records wait for {@link Conduit#flush()}), a blocking reader taking odd-sized pieces (so
 * decrypted bytes wait in the conduit, which {@link Conduit#buffered()} must say), and every byte
 * compared.
 */
class TlsConduitTest {
  @TempDir static Path dir;
  private static Credentials client;
  private static Credentials server;

  @BeforeAll
  static void issue() throws Exception {
    TlsFiles ca = TlsFiles.authority(dir, 2);
    client = load(ca, ca.issue("writer", 0, 2), "writer");
    server = load(ca, ca.issue("reader", 0, 2), "reader");
  }

  private static Credentials load(TlsFiles ca, Path store, String name) {
    return Credentials.load(
        SecurityConfig.defaults()
            .withTls(store.toString(), ca.trustStore().toString(), ca.passwordFile().toString()),
        name,
        k -> null);
  }

  @Test
  void aNonBlockingGatheredStreamArrivesWholeThroughOddReads() throws Exception {
    byte[] data = new byte[(8 << 20) + 12345];
    new Random(5).nextBytes(data);
    try (ServerSocketChannel listener =
            ServerSocketChannel.open()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        SocketChannel c = SocketChannel.open()) {
      CompletableFuture<byte[]> received =
          CompletableFuture.supplyAsync(
              () -> {
                try (SocketChannel s = listener.accept()) {
                  s.setOption(StandardSocketOptions.SO_RCVBUF, 32 << 10);
                  int first = s.socket().getInputStream().read();
                  Conduit in =
                      new PeerAuth(server, "reader", 2)
                          .secureAccepted(s, first, System.nanoTime() + 10_000_000_000L);
                  assertEquals(java.util.Set.of("writer"), in.peerNames());
                  byte[] got = new byte[data.length];
                  ByteBuffer piece = ByteBuffer.allocateDirect(777);
                  int at = 0;
                  boolean sawBuffered = false;
                  while (at < got.length) {
                    piece.clear().limit(Math.min(777, got.length - at));
                    int n = in.read(piece);
                    if (n < 0) {
                      break;
                    }
                    piece.flip().get(got, at, n);
                    at += n;
                    sawBuffered |= in.buffered();
                  }
                  assertTrue(sawBuffered, "reads smaller than a record leave bytes buffered");
                  return java.util.Arrays.copyOf(got, at);
                } catch (Exception e) {
                  throw new IllegalStateException(e);
                }
              });
      c.setOption(StandardSocketOptions.SO_SNDBUF, 32 << 10);
      c.connect(listener.getLocalAddress());
      Conduit out = new PeerAuth(client, "writer", 1).secure(c, "the reader", 10_000);
      assertEquals(java.util.Set.of("reader"), out.peerNames());
      assertTrue(out.protection().startsWith("TLSv1.3"), out.protection());
      c.configureBlocking(false);
      ByteBuffer[] parts = {
        ByteBuffer.wrap(data, 0, 56),
        ByteBuffer.allocateDirect(data.length - 56 - 1000).put(data, 56, data.length - 56 - 1000),
        ByteBuffer.wrap(data, data.length - 1000, 1000)
      };
      parts[1].flip();
      int waits = 0;
      try (Selector selector = Selector.open()) {
        SelectionKey key = c.register(selector, SelectionKey.OP_WRITE);
        while (parts[2].hasRemaining() || !out.flush()) {
          long n = parts[2].hasRemaining() ? out.write(parts, 0, 3) : 0;
          if (n == 0) {
            waits++;
            selector.select(1000);
            selector.selectedKeys().clear();
          }
        }
        key.cancel();
      }
      assertTrue(waits > 0, "the socket filled at least once");
      assertArrayEquals(data, received.get(60, TimeUnit.SECONDS));
    }
  }
}
