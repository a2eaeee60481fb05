package io.orbite.engine.spi;

import io.orbite.config.EngineConfig;
import io.orbite.engine.fault.FaultHooks;
import io.orbite.engine.view.OwnerBoard;
import java.util.concurrent.Executor;

/**
 * What the engine gives a transport when it starts it.
 *
 * @param registry the published registrations, for source-side authority checks
 * @param localEpoch this engine incarnation's epoch
 * @param blockingIo an executor for blocking set-up work (connect, handshakes), never the default
 *     dispatcher
 * @param quarantine where owners that cannot prove their drain are listed (C5, C7)
 * @param hooks fault-injection points for qualification tests; {@link FaultHooks#NONE} in
 *     production
 * @param supervision the engine's supervision: every owner actor a transport spawns runs under it,
 *     so an unexpected exception quarantines that owner instead of stopping or restarting it
 */
public record TransportContext(
    EngineConfig config,
    RegistryView registry,
    long localEpoch,
    Executor blockingIo,
    EngineTally counters,
    OwnerBoard owners,
    QuarantineLedger quarantine,
    FaultHooks hooks,
    OwnerSupervision supervision,
    PeerEventHub peerEvents) {}
