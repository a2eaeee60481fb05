package io.orbite.transport.rdma;

import io.orbite.engine.rail.RailHealth;
import java.util.List;

/**
 * What every RDMA endpoint of one engine shares, handed to each as it opens: the opened rails, the
 * rail circuit (C13), the rail selector, the counters, and the engine's two requester budgets.
 *
 * @param rails the opened rails, by index
 * @param health the rail circuit
 * @param selector the rail selector (spec 002)
 * @param counters the transport's counters
 * @param direct {@code rdma.maxDirectBytes}, shared by requester slices and source windows
 * @param parents {@code rdma.maxGrants} on the requester side: parents reserved at sources at once
 */
record RdmaStack(
    List<Rail> rails,
    RailHealth health,
    RailSelector selector,
    RdmaCounters counters,
    DirectBytes direct,
    DirectBytes parents) {}
