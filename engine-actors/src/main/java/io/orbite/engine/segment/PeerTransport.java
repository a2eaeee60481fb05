package io.orbite.engine.segment;

import io.orbite.engine.Transport;
import io.orbite.engine.spi.TransportCommand;
import io.orbite.engine.wire.Description;
import java.util.function.Function;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * A transport as the segment table uses it: who to ask for a channel to a peer, whether the table
 * charges an endpoint for that channel, and whether a peer that described itself so is within its
 * reach at all. The guardian makes one per transport provider that reaches peers.
 *
 * @param kind the transport
 * @param ref its supervisor
 * @param chargesEndpoint whether each of its channels holds one of {@code budgets.maxEndpoints}
 * @param unreachable why a peer so described is out of its reach, or null
 */
public record PeerTransport(
    Transport kind,
    ActorRef<TransportCommand> ref,
    boolean chargesEndpoint,
    Function<Description, String> unreachable) {}
