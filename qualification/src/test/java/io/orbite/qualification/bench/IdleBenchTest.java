package io.orbite.qualification.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.orbite.config.EngineConfig;
import io.orbite.config.RdmaConfig;
import io.orbite.engine.Transport;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code ./orbite bench idle}'s two variants, without running it: the default one as before (TCP
 * and SHM, {@code idle_*} figures), and {@code --rdma-events}, whose two engines both run the RDMA
 * transport with completion events on (the configuration each process is given) and report {@code
 * idle_rdma_events_*}.
 */
class IdleBenchTest {
  @Test
  void theRdmaEventsVariantTurnsCompletionEventsOnInBothEnginesAndNamesItsFigures() {
    EngineConfig source = EngineConfig.fromJson(IdleBench.sourceConf(true));
    EngineConfig requester = IdleBench.requesterConfig(EngineConfig.defaults(), true);
    for (EngineConfig c : List.of(source, requester)) {
      RdmaConfig r = c.rdma();
      assertTrue(r.enabled(), c::toString);
      assertTrue(r.completionEvents(), c::toString);
      assertEquals("software", r.provider(), c::toString);
      assertEquals(2, r.softwareDevices(), c::toString);
      assertEquals(3, r.lanes(), c::toString);
    }
    assertTrue(source.shm().enabled(), "the source still serves SHM");
    assertEquals("bench-idle-requester", requester.name());
    assertEquals(List.of(Transport.TCP, Transport.SHM, Transport.RDMA), IdleBench.transports(true));
    assertEquals(
        "idle_rdma_events_requester_cpu_pct_of_core",
        IdleBench.figure(true, "requester_cpu_pct_of_core"));
  }

  @Test
  void theDefaultVariantIsUnchanged() {
    EngineConfig source = EngineConfig.fromJson(IdleBench.sourceConf(false));
    EngineConfig requester = IdleBench.requesterConfig(EngineConfig.defaults(), false);
    assertTrue(source.shm().enabled());
    assertFalse(source.rdma().enabled());
    assertFalse(requester.rdma().enabled());
    assertFalse(requester.rdma().completionEvents());
    assertEquals(List.of(Transport.TCP, Transport.SHM), IdleBench.transports(false));
    assertEquals("idle_source_cpu_pct_of_core", IdleBench.figure(false, "source_cpu_pct_of_core"));
  }
}
