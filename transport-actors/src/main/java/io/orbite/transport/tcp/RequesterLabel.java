package io.orbite.transport.tcp;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.SocketChannel;

/**
 * The label a source counts a requester under in its ledger ({@code EngineTally.servedTo}), from
 * what its HELLO tells: the requester's address and epoch, {@code "<address>@<epoch hex>"}. The
 * address alone would merge every requester of one host (each lane comes from another port), so the
 * epoch is part of the label until the HELLO names the requester's engine.
 */
public final class RequesterLabel {
  private RequesterLabel() {}

  /**
   * The label of the requester at the far end of {@code channel}.
   *
   * @param channel an accepted connection whose HELLO was read
   * @param requesterEpoch the epoch the HELLO named as the requester's
   * @return {@code "<address>@<epoch hex>"}; the address is {@code "unknown"} once the connection
   *     is gone
   */
  public static String of(SocketChannel channel, long requesterEpoch) {
    String host;
    try {
      SocketAddress remote = channel.getRemoteAddress();
      host =
          remote instanceof InetSocketAddress a && a.getAddress() != null
              ? a.getAddress().getHostAddress()
              : "unknown";
    } catch (IOException e) {
      host = "unknown";
    }
    return host + "@" + Long.toHexString(requesterEpoch);
  }
}
