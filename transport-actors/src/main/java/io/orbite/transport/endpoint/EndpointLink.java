package io.orbite.transport.endpoint;

import io.orbite.engine.spi.PeerChannel;
import io.orbite.engine.spi.TransportCommand;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * What one transport's endpoint owns once it is open: the workers (lanes, QPs) to one peer
 * incarnation and the channel batches dispatch to. {@link PeerEndpoint} runs its lifecycle; the
 * link keeps only what is its transport's own. Made by an {@link Opener} on the blocking-I/O
 * executor; its methods are called on the endpoint actor's thread, except where they say.
 */
public interface EndpointLink {
  /**
   * Opens a link, blocking: connects, proves, constructs and starts the workers.
   *
   * @see PeerEndpoint#create
   */
  @FunctionalInterface
  interface Opener {
    /**
     * Opens the link.
     *
     * @param fenced called (from any thread) when the channel is fenced, so the endpoint drains and
     *     retires it
     * @return the open link
     * @throws Exception naming why it could not open (a {@code TransferException} keeps its kind;
     *     anything else is UNAVAILABLE)
     */
    EndpointLink open(Runnable fenced) throws Exception;
  }

  /**
   * The channel batches dispatch to; its gate is the link's state.
   *
   * @return the channel
   */
  PeerChannel channel();

  /**
   * Answers an open of the peer that reaches this link while it is active.
   *
   * @param detail what that open carries for this transport (SHM: the exports its Describe named),
   *     or null
   * @return the reply: by default the channel
   */
  default TransportCommand.OpenPeerReply attach(Object detail) {
    return new TransportCommand.PeerOpened(channel());
  }

  /**
   * Closes every worker, without blocking; idempotent. The endpoint has closed (or fenced) the
   * channel's gate first, so no new work reaches the workers; they fail what they hold.
   *
   * @param reason why, for messages
   */
  void close(String reason);

  /**
   * Completes once no worker of the link touches any task's memory: every lane thread ended, every
   * QP destroyed or given up on. A link whose workers all ended by themselves (the peer was lost)
   * completes it without a close, after closing its channel's gate saying why.
   *
   * @return what could not be released and is kept for good (never retried, C7): empty when all was
   */
  CompletionStage<List<String>> drained();

  /**
   * The workers still running (their names), for a quarantine's reason; any thread.
   *
   * @return the names, empty once drained
   */
  List<String> running();

  /**
   * What the owner view shows of the link: lanes up, bytes in flight, QPs.
   *
   * @return the charges by name
   */
  Map<String, Long> charges();

  /**
   * How often the endpoint calls {@link #tick} while active, or null for never.
   *
   * @return the period, or null
   */
  default Duration tickEvery() {
    return null;
  }

  /** Periodic work of an active link (the owner view is refreshed after it). */
  default void tick() {}
}
